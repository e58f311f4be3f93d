"""attention(), the PositionalEncoding protocol and MultiHeadAttention with every kind of encoding."""
import math

import pytest
import torch

from posenc_lib import (
    ENCODINGS,
    ALiBi,
    LearnedEncoding,
    MultiHeadAttention,
    NoPE,
    RotaryEmbedding,
    ShawRelativePosition,
    SinusoidalEncoding,
    T5RelativeBias,
    apply_rope,
    attention,
    make_encoding,
)
from posenc_lib.attention import HOOKS, PositionalEncoding, ScoreInputs, causal_mask, where_it_acts
from posenc_lib.inference import KVCache, RingBufferCache, SinkWindowCache, decode_step
from posenc_lib.model import TinyLM
from posenc_lib.relative import relative_positions

POSITIONAL = [kind for kind in ENCODINGS if kind != "nope"]


def _ref_attention(q, k, v, bias=None, causal=False):
    """softmax(q k^T / sqrt(d) + bias) v in float64, row by row."""
    q, k, v = q.double(), k.double(), v.double()
    tq, tk = q.shape[-2], k.shape[-2]
    out = torch.zeros(*q.shape[:-1], v.shape[-1], dtype=torch.float64)
    for i in range(tq):
        scores = (q[..., i, :, None] * k.transpose(-2, -1)).sum(-2) / math.sqrt(q.shape[-1])  # (..., Tk)
        if bias is not None:
            scores = scores + bias.double().expand(*q.shape[:-2], tq, tk)[..., i, :]
        if causal:
            scores[..., tk - tq + i + 1:] = -math.inf
        p = torch.exp(scores - scores.max(-1, keepdim=True).values)
        p = p / p.sum(-1, keepdim=True)
        out[..., i, :] = (p[..., :, None] * v).sum(-2)
    return out


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("tq,tk", [(5, 5), (3, 8), (1, 4)])
def test_attention_matches_formula(causal, tq, tk):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, tq, 8), torch.randn(2, 3, tk, 8), torch.randn(2, 3, tk, 5)
    bias = torch.randn(3, tq, tk)
    out, weights = attention(q, k, v, bias=bias, causal=causal, return_weights=True)
    torch.testing.assert_close(out.double(), _ref_attention(q, k, v, bias, causal), atol=1e-5, rtol=0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, tq))
    if causal:  # query i (the last tq of tk positions) sees keys j <= i only
        for i in range(tq):
            assert (weights[..., i, tk - tq + i + 1:] == 0).all()


def test_attention_shares_one_key_head_over_the_query_heads():
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 1, 5, 8), torch.randn(2, 1, 5, 3)
    torch.testing.assert_close(attention(q, k, v), attention(q, k.expand(2, 4, 5, 8), v.expand(2, 4, 5, 3)))


def test_attention_half_precision_keeps_dtype():
    q = torch.randn(1, 2, 4, 8, dtype=torch.bfloat16)
    out = attention(q, q, q, causal=True)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.double(), _ref_attention(q, q, q, causal=True), atol=2e-2, rtol=0)


def test_attention_of_no_queries_is_empty():
    out, weights = attention(torch.zeros(2, 0, 8), torch.zeros(2, 3, 8), torch.zeros(2, 3, 4), return_weights=True)
    assert out.shape == (2, 0, 4) and weights.shape == (2, 0, 3)
    assert attention(torch.zeros(1, 0, 8), torch.zeros(1, 0, 8), torch.zeros(1, 0, 4), causal=True).shape == (1, 0, 4)


def test_a_mask_goes_in_as_minus_infinity():
    """The way the bool-bias error tells the caller to pass a mask does mask: masked keys get weight 0."""
    torch.manual_seed(0)
    q = torch.randn(1, 4, 8)
    mask = torch.tensor([[True, False, True, True]]).expand(4, 4)
    _, weights = attention(q, q, q, bias=torch.zeros_like(mask, dtype=q.dtype).masked_fill(~mask, float("-inf")),
                           return_weights=True)
    assert (weights[..., 1] == 0).all() and (weights[..., [0, 2, 3]] > 0).all()


# ----------------------------------------------------------- permutation: attention without positions is equivariant
@pytest.mark.parametrize("seed", [0, 1])
def test_nope_self_attention_is_permutation_equivariant_not_invariant(seed):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(16, 4, encoding=NoPE())
    x = torch.randn(2, 7, 16)
    perm = torch.randperm(7)
    while torch.equal(perm, torch.arange(7)):
        perm = torch.randperm(7)
    out, out_perm = mha(x), mha(x[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm], atol=1e-6, rtol=0)  # equivariant: outputs permute too
    assert not torch.allclose(out_perm, out, atol=1e-4)  # not invariant: per-token outputs change
    torch.testing.assert_close(out_perm.mean(1), out.mean(1), atol=1e-6, rtol=0)  # a pooled readout is invariant


def test_a_causal_mask_alone_breaks_equivariance():
    torch.manual_seed(2)
    mha = MultiHeadAttention(16, 4, encoding=NoPE(), causal=True)
    x = torch.randn(1, 6, 16)
    perm = torch.tensor([5, 4, 3, 2, 1, 0])
    assert not torch.allclose(mha(x[:, perm]), mha(x)[:, perm], atol=1e-4)


@pytest.mark.parametrize("kind", POSITIONAL)
def test_every_encoding_breaks_permutation_equivariance(kind):
    torch.manual_seed(3)
    mha = MultiHeadAttention(16, 2, encoding=make_encoding(kind, d_model=16, num_heads=2, max_len=32))
    if kind == "cope":  # its table e[p] starts at zero, as in the authors' code: NoPE until trained
        torch.nn.init.normal_(mha.encoding.pos_emb)
    x = torch.randn(1, 7, 16)
    perm = torch.tensor([3, 0, 6, 1, 5, 2, 4])
    assert not torch.allclose(mha(x[:, perm]), mha(x)[:, perm], atol=1e-5)
    # while the same layer with NoPE is equivariant (sanity check of the construction)
    nope = MultiHeadAttention(16, 2)
    nope.load_state_dict(mha.state_dict(), strict=False)
    torch.testing.assert_close(nope(x[:, perm]), nope(x)[:, perm], atol=1e-6, rtol=0)


# ------------------------------------------------------------------ the protocol
def test_protocol_has_one_hook_per_place():
    base = PositionalEncoding()
    q = torch.randn(1, 1, 3, 4)
    x = q[0]
    assert base.add_to_input(x, torch.arange(3)) is x
    assert base.rotate_qk(q, q, None, None) == (q, q)
    assert base.score_bias(q, None, None) is None and base.value_bias(q, None, None) is None
    scores = torch.randn(1, 1, 3, 3)
    assert base.edit_scores(scores, ScoreInputs(q, q, torch.arange(3), torch.arange(3), x, None)) is scores
    assert base.token_state(x, torch.arange(3)) is None
    overridden = {kind: where_it_acts(make_encoding(kind, d_model=8, num_heads=2)) for kind in ENCODINGS}
    assert overridden == {"nope": [], "sinusoidal": ["add_to_input"], "learned": ["add_to_input"],
                          "t5": ["score_bias"], "shaw": ["score_bias", "value_bias"], "rope": ["rotate_qk"],
                          "alibi": ["score_bias"], "xpos": ["rotate_qk"], "kerple": ["score_bias"],
                          "fire": ["score_bias"], "cope": ["edit_scores"],
                          "fox": ["edit_scores", "token_state"], "path": ["edit_scores", "token_state"]}
    with pytest.raises(TypeError, match="encoding must be a PositionalEncoding"):
        where_it_acts(torch.nn.Linear(2, 2))


def test_calling_any_encoding_applies_its_first_hook():
    """enc(...) means one thing for every encoding: apply it where it acts (PositionalEncoding's table)."""
    torch.manual_seed(0)
    x, q, k = torch.randn(2, 5, 8), torch.randn(2, 2, 5, 4), torch.randn(2, 2, 5, 4)
    pos = torch.arange(5)
    assert torch.equal(NoPE()(x), x)
    for enc in (SinusoidalEncoding(8), LearnedEncoding(6, 8)):
        assert torch.equal(enc(x), enc.add_to_input(x, pos))
    rope = RotaryEmbedding(4)
    for got, expected in zip(rope(q, k), rope.rotate_qk(q, k, pos, pos)):
        assert torch.equal(got, expected)
    for enc in (ALiBi(2), T5RelativeBias(2), ShawRelativePosition(4, 2)):
        assert torch.equal(enc(q), enc.score_bias(q, pos, pos))


class _Offset(PositionalEncoding):
    """A learner's own rotation-style encoding: adds the position to every entry of q and k."""

    def rotate_qk(self, q, k, q_positions, k_positions):
        return q + q_positions[:, None].to(q.dtype), k + k_positions[:, None].to(k.dtype)


class _Values(PositionalEncoding):
    def value_bias(self, probs, q_positions, k_positions):
        return probs @ k_positions.to(probs.dtype)[:, None].expand(-1, 3)


def test_a_new_encoding_gets_the_call_of_its_place():
    q, k = torch.zeros(1, 1, 3, 2), torch.zeros(1, 1, 4, 2)
    rq, rk = _Offset()(q, k)  # no positions: q and k each count from 0
    assert rq[0, 0, :, 0].tolist() == [0, 1, 2] and rk[0, 0, :, 0].tolist() == [0, 1, 2, 3]
    probs = torch.full((1, 1, 2, 4), 0.25)
    assert _Values()(probs).shape == (1, 1, 2, 3) and _Values()(probs)[0, 0, 0, 0].item() == 1.5  # mean of 0..3
    assert where_it_acts(_Offset) == ["rotate_qk"] and set(HOOKS) >= set(where_it_acts(ShawRelativePosition))


# ------------------------------------------------------------------ the extended hooks: k, x and a per-token state
class KeyGate(PositionalEncoding):
    """CoPE-like (Golovneva et al. 2024), cut down: key j counts as sigmoid(q_i . k_j) of a step, and the score
    of key j falls by slope_h times the steps counted from j to the query. Reads k (edit_scores)."""

    def __init__(self, num_heads: int):
        super().__init__()
        self.slopes = torch.nn.Parameter(torch.linspace(0.25, 1.0, num_heads))

    def edit_scores(self, scores, inputs):
        q, k = inputs.q, inputs.k
        gates = torch.sigmoid(q @ k.transpose(-2, -1)).to(scores.dtype)                    # (B, H, Tq, Tk)
        gates = gates.masked_fill(~causal_mask(q.shape[-2], k.shape[-2], device=q.device), 0.0)
        steps = gates.flip(-1).cumsum(-1).flip(-1)                                          # sum over keys j..i
        return scores - self.slopes.to(scores.dtype)[:, None, None] * steps


class InputSlope(PositionalEncoding):
    """An ALiBi whose slope each query reads off its own input: -softplus(w_h . x_i) * (i - j). Reads x."""

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.weight = torch.nn.Parameter(0.3 * torch.randn(num_heads, d_model,
                                                           generator=torch.Generator().manual_seed(3)))

    def edit_scores(self, scores, inputs):
        slope = torch.nn.functional.softplus(inputs.x @ self.weight.T).transpose(1, 2)[..., None]   # (B, H, Tq, 1)
        distance = relative_positions(inputs.q_positions, inputs.k_positions)[:, None]           # (B, 1, Tq, Tk)
        return scores + (slope * distance.to(slope.dtype)).to(scores.dtype)


class ForgetGate(PositionalEncoding):
    """The Forgetting Transformer's gate (Lin et al. 2025): token t forgets by f_t = sigmoid(w_h . x_t), and the
    score of key j at query i adds log f_{j+1} + ... + log f_i. Keeps log f_t per token (token_state)."""

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(num_heads, d_model, generator=torch.Generator().manual_seed(4)))

    def token_state(self, x, positions):
        return {"log_forget": torch.nn.functional.logsigmoid(x @ self.weight.T).transpose(1, 2)[..., None]}  # (B,H,T,1)

    def edit_scores(self, scores, inputs):
        total = inputs.state["log_forget"][..., 0].to(scores.dtype).cumsum(-1)          # (B, H, Tk)
        queries = total[..., total.shape[-1] - scores.shape[-2]:]                         # the last Tq keys
        return scores + queries[..., :, None] - total[..., None, :]


class KeyGateFromTheFirstRows(KeyGate):
    """A mistake the checks must catch: the gates masked as if the queries were the first Tq keys (a square
    causal mask cut to Tq rows), not the last."""

    def edit_scores(self, scores, inputs):
        q, k = inputs.q, inputs.k
        gates = torch.sigmoid(q @ k.transpose(-2, -1)).to(scores.dtype)
        gates = gates.masked_fill(~torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril(), 0.0)
        return scores - self.slopes.to(scores.dtype)[:, None, None] * gates.flip(-1).cumsum(-1).flip(-1)


class ReRoPE(PositionalEncoding):
    """ReRoPE (Su 2023), two score matrices merged: RoPE's own within `window` tokens, and past it every key
    scored as if `window` tokens away. It rotates inside edit_scores (rotate_qk stays the identity, so a cache
    holds the keys unrotated and each step sees them raw)."""

    def __init__(self, window: int):
        super().__init__()
        self.window = window

    def edit_scores(self, scores, inputs):
        q, k, q_pos, k_pos = inputs.q, inputs.k, inputs.q_positions, inputs.k_positions
        scale = math.sqrt(q.shape[-1])
        near = apply_rope(q, q_pos) @ apply_rope(k, k_pos).transpose(-2, -1) / scale
        far = apply_rope(q, torch.full_like(q_pos, self.window)) @ k.transpose(-2, -1) / scale
        distance = relative_positions(q_pos, k_pos)[:, None].neg()                         # (B, 1, Tq, Tk) i - j
        return torch.where(distance < self.window, near, far).to(scores.dtype)


def extended_encodings():
    """The test encodings above, for a d_model=32, 4-head model."""
    return {"key gate": KeyGate(4), "input slope": InputSlope(32, 4), "forget gate": ForgetGate(32, 4),
            "ReRoPE": ReRoPE(window=3)}


def _decoded(model, ids, cache, prefill=4):
    steps = [decode_step(model, ids[:, :prefill], cache)]
    return torch.cat(steps + [decode_step(model, ids[:, t:t + 1], cache) for t in range(prefill, ids.shape[1])], 1)


@pytest.mark.parametrize("rotated", [True, False])
@pytest.mark.parametrize("name", ["key gate", "input slope", "forget gate", "ReRoPE"])
def test_an_encoding_reading_k_x_or_a_token_state_decodes_as_it_runs_whole(name, rotated):
    """Through the one attention path: a full forward and a prefill + one token a step over a KV cache
    give the same logits, for a score hook reading k (a sigmoid(q.k) gate), x (a slope from the input) and a
    state kept per cached token (a forget gate); each encoding changes the logits (it is not a no-op)."""
    encoding = extended_encodings()[name]
    torch.manual_seed(0)
    model = TinyLM(23, encoding=encoding, d_model=32, num_heads=4, num_layers=2).eval()
    ids = torch.randint(0, 23, (2, 10), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        full, _ = model(ids)
        steps = _decoded(model, ids, KVCache(2, rotated=rotated))
        model.replace_encoding(NoPE())
        plain, _ = model(ids)
    torch.testing.assert_close(steps, full, atol=1e-5, rtol=0)
    assert (plain - full).abs().max() > 1e-2


def test_rerope_is_rope_within_its_window_and_not_past_it():
    """The merge of two score matrices through edit_scores: inside the window ReRoPE's logits are RoPE's (same
    weights), past it they differ."""
    torch.manual_seed(0)
    model = TinyLM(23, encoding=ReRoPE(window=4), d_model=32, num_heads=4, num_layers=2).eval()
    ids = torch.randint(0, 23, (1, 9), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        merged, _ = model(ids)
        model.replace_encoding(RotaryEmbedding(8))
        rope, _ = model(ids)
    torch.testing.assert_close(merged[:, :4], rope[:, :4], atol=1e-5, rtol=0)
    assert (merged[:, 4:] - rope[:, 4:]).abs().max() > 1e-3


def test_the_checks_catch_a_score_hook_that_misplaces_the_queries():
    """Queries are the last Tq of the Tk keys: a hook that reads them as the first Tq runs whole as the
    right one does (Tq = Tk) and goes wrong from the first cached step."""
    torch.manual_seed(0)
    model = TinyLM(23, encoding=KeyGateFromTheFirstRows(4), d_model=32, num_heads=4, num_layers=2).eval()
    ids = torch.randint(0, 23, (1, 8), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full, _ = model(ids)
        steps = _decoded(model, ids, KVCache(2))
        model.replace_encoding(KeyGate(4))
        right, _ = model(ids)
    torch.testing.assert_close(full, right, atol=0, rtol=0)
    torch.testing.assert_close(steps[:, :4], full[:, :4], atol=1e-5, rtol=0)    # the prefill: Tq = Tk
    assert (steps[:, 4:] - full[:, 4:]).abs().max() > 1e-2


def test_the_token_state_follows_its_token_through_eviction_and_slots():
    """A sink + window cache evicts a token's state with its key; a ring buffer keeps it in the key's slot;
    a layer's state is handed back for every key the step attends."""
    batch, heads, hd = 1, 2, 4
    sink, ring = SinkWindowCache(1, num_sinks=2, window=3), RingBufferCache(1, window=4)
    for t in range(9):
        k = torch.randn(batch, heads, 1, hd)
        state = {"position": torch.full((batch, heads, 1, 1), float(t))}          # the state names its token
        got_sink = sink.update(0, k, k, torch.tensor([t]), state=state)
        got_ring = ring.update(0, k, k, torch.tensor([t]), state=state)
        assert got_sink.state["position"][0, 0, :, 0].tolist() == sink.text_positions()[0].tolist()
        assert got_ring.state["position"][0, 0, :, 0].tolist() == got_ring.key_positions[0].tolist()
    assert sink.layers[0].state["position"][0, 0, :, 0].tolist() == [0, 1, 6, 7, 8]
    assert ring.layers[0].state["position"][0, 0, :, 0].tolist() == ring.slot_positions()[0].tolist() == [8, 5, 6, 7]


class _OldBias(PositionalEncoding):
    """A learner's encoding written against the four hooks only: a score bias of -(i - j) / 4."""

    def score_bias(self, q, q_positions, k_positions):
        return -relative_positions(q_positions, k_positions).to(q.dtype)[:, None] / 4


class _SameAsEditedScores(PositionalEncoding):
    def edit_scores(self, scores, inputs):
        return scores - relative_positions(inputs.q_positions, inputs.k_positions).to(scores.dtype)[:, None] / 4


def test_an_encoding_of_the_four_hooks_runs_as_the_edit_it_stands_for():
    """An old subclass (score_bias only) goes through edit_scores' default: the same outputs as the same
    bias written as an edit of the scores, whole and cached."""
    torch.manual_seed(0)
    x = torch.randn(2, 6, 16)
    old, new = (MultiHeadAttention(16, 2, encoding=enc, causal=True) for enc in (_OldBias(), _SameAsEditedScores()))
    new.load_state_dict(old.state_dict())
    torch.testing.assert_close(old(x), new(x), atol=0, rtol=0)
    caches = KVCache(1), KVCache(1)
    for t in range(6):
        got = [mha(x[:, t:t + 1], cache=cache) for mha, cache in zip((old, new), caches)]
        torch.testing.assert_close(got[0], got[1], atol=0, rtol=0)
        torch.testing.assert_close(got[0], old(x)[:, t:t + 1], atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", ["key gate", "input slope", "forget gate", "ReRoPE"])
def test_the_extended_hooks_compile_as_one_graph_whole_and_cached(name):
    """No host read in the extended hooks' path: a whole forward and a prefill + step over a KV cache (token
    state included) trace as one graph each and give the eager outputs."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(32, 4, encoding=extended_encodings()[name], causal=True)
    x = torch.randn(2, 6, 32)

    def cached(x):
        cache = KVCache(1)
        return torch.cat((mha(x[:, :5], cache=cache), mha(x[:, 5:], cache=cache)), 1)

    for fn in (mha, cached):
        torch._dynamo.reset()
        compiled = torch.compile(fn, fullgraph=True, backend="eager")
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), fn(x), atol=1e-6, rtol=0)


@pytest.mark.parametrize("window", [None, 3])
def test_one_attention_path_whole_or_a_token_at_a_time(window):
    """MultiHeadAttention over 7 tokens at once, and fed one token a step with a KV cache, agree (with and
    without a sliding window: the one causal_mask for both); the window changes the output."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2, encoding=ALiBi(2), causal=True)
    x = torch.randn(2, 7, 16)
    whole = mha(x, window=window)
    cache = KVCache(1)
    steps = torch.cat([mha(x[:, t:t + 1], cache=cache, window=window) for t in range(7)], 1)
    torch.testing.assert_close(steps, whole, atol=1e-6, rtol=0)
    if window is not None:
        assert (whole[:, window:] - mha(x)[:, window:]).abs().max() > 1e-3
        torch.testing.assert_close(whole[:, :window], mha(x)[:, :window], atol=0, rtol=0)


def test_calling_an_extended_encoding_applies_its_first_hook():
    torch.manual_seed(0)
    x, q, k = torch.randn(1, 5, 32), torch.randn(1, 4, 5, 8), torch.randn(1, 4, 5, 8)
    gate = ForgetGate(32, 4)
    assert where_it_acts(gate) == ["edit_scores", "token_state"]
    expected = gate.edit_scores(q @ k.transpose(-2, -1) / math.sqrt(8),
                                ScoreInputs(q, k, torch.arange(5), torch.arange(5), x, gate.token_state(x, None)))
    torch.testing.assert_close(gate(q, k, x=x), expected, atol=1e-6, rtol=0)
    assert torch.equal(causal_mask(2, 4, device="cpu"), torch.tensor([[True, True, True, False], [True] * 4]))
    assert causal_mask(3, 3, device="cpu", window=1).equal(torch.eye(3, dtype=torch.bool))


# ------------------------------------------------------------------ MultiHeadAttention
@pytest.mark.parametrize("enc", [SinusoidalEncoding(16), LearnedEncoding(10, 16)], ids=["sinusoidal", "learned"])
def test_mha_adds_an_input_encoding_before_q_k_v(enc):
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2, encoding=enc)
    plain = MultiHeadAttention(16, 2, apply_input_encoding=False, encoding=enc)
    plain.load_state_dict(mha.state_dict())
    x, pos = torch.randn(2, 6, 16), torch.arange(2, 8)
    torch.testing.assert_close(mha(x, pos), plain(enc(x, pos), pos))  # applied once, at x
    assert not torch.allclose(mha(x, pos), plain(x, pos))  # not silently skipped


def test_mha_calls_the_attention_side_hooks():
    """Shaw's score and value terms in MultiHeadAttention equal the explicit computation."""
    torch.manual_seed(1)
    shaw = ShawRelativePosition(8, 2)
    mha = MultiHeadAttention(16, 2, encoding=shaw)
    x = torch.randn(1, 5, 16)
    q, k, v = mha.qkv(x).view(1, 5, 3, 2, 8).permute(2, 0, 3, 1, 4)
    pos = torch.arange(5)
    out, weights = attention(q, k, v, bias=shaw.score_bias(q, pos, pos), return_weights=True)
    out = out + shaw.value_bias(weights, pos, pos)
    torch.testing.assert_close(mha(x), mha.proj(out.transpose(1, 2).reshape(1, 5, 16)))


def test_mha_of_an_empty_sequence_is_empty():
    for kind in ENCODINGS:
        mha = MultiHeadAttention(16, 2, encoding=make_encoding(kind, d_model=16, num_heads=2), causal=True)
        assert mha(torch.zeros(2, 0, 16)).shape == (2, 0, 16), kind


class _ScoresOfOneRow(PositionalEncoding):
    def edit_scores(self, scores, inputs):
        return scores[..., :1, :]


# ------------------------------------------------------------------ bad input: (id, call, exception, message)
Q = torch.randn(2, 3, 5, 8)
BAD = [
    ("attention int v", lambda: attention(Q, Q, torch.ones(2, 3, 5, 8, dtype=torch.long)), TypeError,
     r"v must be a floating-point tensor"),
    ("attention q list", lambda: attention([[1.0]], Q, Q), TypeError, r"q must be a torch.Tensor"),
    ("attention q 1-D", lambda: attention(torch.zeros(8), Q, Q), ValueError, r"q must have shape \(\.\.\., seq, dim\)"),
    ("attention q/k dims", lambda: attention(Q, torch.randn(2, 3, 5, 4), Q), ValueError,
     r"q and k must share the last dimension"),
    ("attention zero dim", lambda: attention(torch.zeros(1, 3, 0), torch.zeros(1, 3, 0), torch.zeros(1, 3, 2)),
     ValueError, r"last dimension >= 1"),
    ("attention k/v lengths", lambda: attention(Q, Q, torch.randn(2, 3, 4, 8)), ValueError,
     r"k and v must have the same number of positions"),
    ("attention no keys", lambda: attention(Q, torch.zeros(2, 3, 0, 8), torch.zeros(2, 3, 0, 8)), ValueError,
     r"k must have at least one position"),
    ("attention k batch", lambda: attention(Q, torch.randn(3, 3, 5, 8), torch.randn(3, 3, 5, 8)), ValueError,
     r"k of shape \(3, 3, 5, 8\) does not fit q of shape \(2, 3, 5, 8\)"),
    ("attention v heads", lambda: attention(Q, Q, torch.randn(2, 4, 5, 8)), ValueError,
     r"v of shape .* does not fit q"),
    ("attention k grows q", lambda: attention(torch.randn(1, 3, 5, 8), Q, Q), ValueError,
     r"k of shape .* does not fit q"),
    ("attention k rank", lambda: attention(Q, torch.randn(3, 5, 8), torch.randn(3, 5, 8)), ValueError,
     r"k of shape \(3, 5, 8\) does not fit q"),
    ("attention bool bias", lambda: attention(Q, Q, Q, bias=torch.ones(5, 5, dtype=torch.bool)), TypeError,
     r"bias must be a floating-point tensor added to the scores, got torch.bool; for a boolean mask .*masked_fill"),
    ("attention int bias", lambda: attention(Q, Q, Q, bias=torch.ones(5, 5, dtype=torch.long)), TypeError,
     r"bias must be a floating-point tensor"),
    ("attention number bias", lambda: attention(Q, Q, Q, bias=1.0), TypeError, r"bias must be a torch.Tensor or None"),
    ("attention bias shape", lambda: attention(Q, Q, Q, bias=torch.zeros(4, 5)), ValueError,
     r"bias of shape \(4, 5\) must broadcast to the scores' shape \(2, 3, 5, 5\)"),
    ("attention bias grows the batch", lambda: attention(Q, Q, Q, bias=torch.zeros(7, 3, 5, 5)), ValueError,
     r"bias of shape \(7, 3, 5, 5\) must broadcast"),
    ("attention bias rank", lambda: attention(Q, Q, Q, bias=torch.zeros(1, 2, 3, 5, 5)), ValueError,
     r"bias of shape .* must broadcast"),
    ("causal more queries than keys", lambda: attention(torch.randn(1, 6, 8), torch.randn(1, 4, 8),
                                                        torch.randn(1, 4, 8), causal=True),
     ValueError, r"causal attention needs q_len <= k_len"),
    ("MHA zero heads", lambda: MultiHeadAttention(8, 0), ValueError, r"num_heads must be >= 1"),
    ("MHA heads do not divide", lambda: MultiHeadAttention(10, 4), ValueError,
     r"d_model must be divisible by num_heads"),
    ("MHA encoding type", lambda: MultiHeadAttention(8, 2, encoding="rope"), TypeError,
     r"encoding must be a posenc_lib PositionalEncoding"),
    ("MHA int x", lambda: MultiHeadAttention(8, 2)(torch.ones(1, 5, 8, dtype=torch.long)), TypeError,
     r"x must be a floating-point tensor"),
    ("MHA x 2-D", lambda: MultiHeadAttention(8, 2)(torch.randn(5, 8)), ValueError,
     r"x must have shape \(batch, seq, d_model=8\)"),
    ("MHA x width", lambda: MultiHeadAttention(8, 2)(torch.randn(1, 5, 6)), ValueError,
     r"x must have shape \(batch, seq, d_model=8\)"),
    ("MHA positions batch", lambda: MultiHeadAttention(8, 2)(torch.randn(2, 5, 8), torch.zeros(3, 5, dtype=torch.long)),
     ValueError, r"positions of shape \(3, 5\) does not fit: expected batch 1 or 2"),
    ("MHA positions 3-D", lambda: MultiHeadAttention(8, 2)(torch.randn(2, 5, 8),
                                                           torch.zeros(2, 1, 5, dtype=torch.long)),
     ValueError, r"positions must have shape"),
    ("MHA float positions", lambda: MultiHeadAttention(8, 2)(torch.randn(2, 5, 8), torch.arange(5.0)), TypeError,
     r"positions must be an integer tensor"),
    ("MHA list positions", lambda: MultiHeadAttention(8, 2)(torch.randn(2, 5, 8), [0, 1, 2, 3, 4]), TypeError,
     r"positions must be a torch.Tensor"),
    ("MHA window without causal", lambda: MultiHeadAttention(8, 2)(torch.randn(1, 5, 8), window=2), ValueError,
     r"window: a sliding window masks a causal attention; this one has causal=False"),
    ("MHA window float", lambda: MultiHeadAttention(8, 2, causal=True)(torch.randn(1, 5, 8), window=2.0), TypeError,
     r"window must be"),
    ("MHA scores edited to another shape", lambda: MultiHeadAttention(8, 2, encoding=_ScoresOfOneRow())(
        torch.randn(1, 5, 8)), ValueError, r"encoding: _ScoresOfOneRow's scores must keep the shape \(batch, heads, "
                                           r"q_len, k_len\) = \(1, 2, 5, 5\), got \(1, 2, 1, 5\)"),
    ("causal_mask more queries than keys", lambda: causal_mask(3, 2, device="cpu"), ValueError,
     r"causal attention needs q_len <= k_len .* got q_len=3, k_len=2"),
    ("MHA ALiBi heads", lambda: MultiHeadAttention(16, 4, encoding=ALiBi(2))(torch.randn(1, 5, 16)), ValueError,
     r"num_heads=2"),
    ("MHA T5 heads", lambda: MultiHeadAttention(16, 4, encoding=T5RelativeBias(2))(torch.randn(1, 5, 16)),
     ValueError, r"num_heads=2"),
    ("MHA learned past max_len", lambda: MultiHeadAttention(8, 2, encoding=LearnedEncoding(4, 8))(torch.randn(1, 5, 8)),
     ValueError, r"max_len=4"),
    ("NoPE x 1-D", lambda: NoPE()(torch.zeros(8)), ValueError, r"x must have shape"),
    ("NoPE positions", lambda: NoPE()(torch.zeros(1, 5, 8), torch.arange(4)), ValueError, r"positions must have shape"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_named(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


# ------------------------------------------------------------------ devices: cpu, meta, cuda when present
def _x(device, dtype, shape=(2, 3, 5, 8)):
    return torch.full(shape, 0.5, device=device, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16, torch.float16])
def test_attention_stays_on_the_callers_device_and_dtype(dtype, device):
    x = _x(device, dtype)
    for out in attention(x, x, x, bias=torch.zeros(5, 5, device=device), causal=True, return_weights=True):
        assert out.device.type == device.type and out.dtype == dtype


@pytest.mark.parametrize("kind", list(ENCODINGS))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_mha_stays_on_the_callers_device_and_dtype(kind, dtype, device):
    mha = MultiHeadAttention(16, 2, encoding=make_encoding(kind, d_model=16, num_heads=2), causal=True)
    out = mha.to(device=device, dtype=dtype)(_x(device, dtype, (2, 5, 16)))
    assert out.device.type == device.type and out.dtype == dtype


def _other(device):
    return torch.device("meta" if device.type != "meta" else "cpu")


@pytest.mark.parametrize("name", ["k", "v", "bias"])
def test_attention_refuses_tensors_on_two_devices(name, device):
    """e.g. k on meta next to q on the CPU: torch would return a CPU result computed from no data."""
    args = {"q": _x(device, torch.float32), "k": _x(device, torch.float32), "v": _x(device, torch.float32),
            "bias": torch.zeros(5, 5, device=device)}
    args[name] = torch.zeros(args[name].shape, device=_other(device))
    with pytest.raises(ValueError, match=rf"{name} must be on q's device \({device.type}.*got {_other(device).type}"):
        attention(args["q"], args["k"], args["v"], bias=args["bias"])


def test_mha_refuses_x_or_positions_on_another_device(device):
    mha = MultiHeadAttention(16, 2).to(device)
    with pytest.raises(ValueError, match=r"positions must be on the device of the tensor it indexes"):
        mha(_x(device, torch.float32, (1, 5, 16)), torch.arange(5, device=_other(device)))
    with pytest.raises(ValueError, match=r"qkv must be on x's device"):
        mha(torch.empty(1, 5, 16, device=_other(device)))


@pytest.mark.parametrize("call, name", [
    (lambda q: attention(q, q, q, causal="no"), "causal"),
    (lambda q: attention(q, q, q, return_weights=1), "return_weights"),
    (lambda q: MultiHeadAttention(16, 2, causal="no"), "causal"),
    (lambda q: MultiHeadAttention(16, 2, bias=None), "bias"),
    (lambda q: MultiHeadAttention(16, 2, apply_input_encoding="yes"), "apply_input_encoding"),
])
def test_flags_must_be_real_bools(call, name):
    """A string such as "no" is truthy: taken as a flag it would silently mean True."""
    with pytest.raises(TypeError, match=rf"{name} must be a bool"):
        call(torch.zeros(1, 2, 3, 4))


# ------------------------------------------------------------------ a partial-rotary attention layer, against GPT-NeoX
def test_mha_with_partial_rotary_encoding_is_hf_gpt_neox_attention():
    """MultiHeadAttention(encoding=RotaryEmbedding(head_dim, partial_rotary_factor=f)) is GPT-NeoX's attention: the same
    weights (HF packs q, k, v per head, posenc per kind: a permutation of rows) give the same output."""
    from transformers import GPTNeoXConfig
    from transformers.models.gpt_neox import modeling_gpt_neox as hf
    torch.manual_seed(0)
    d_model, heads, seq, pct = 64, 4, 12, 0.25
    head_dim = d_model // heads
    config = GPTNeoXConfig(hidden_size=d_model, num_attention_heads=heads, rotary_pct=pct, num_hidden_layers=1,
                           attention_bias=True, attn_implementation="eager")
    theirs = hf.GPTNeoXAttention(config, 0).eval()
    ours = MultiHeadAttention(d_model, heads, encoding=RotaryEmbedding(head_dim, partial_rotary_factor=pct),
                              causal=True, bias=True)
    # HF row (h, kind, d) -> posenc row (kind, h, d)
    order = torch.arange(3 * d_model).view(heads, 3, head_dim).transpose(0, 1).reshape(-1)
    with torch.no_grad():
        ours.qkv.weight.copy_(theirs.query_key_value.weight[order])
        ours.qkv.bias.copy_(theirs.query_key_value.bias[order])
        ours.proj.weight.copy_(theirs.dense.weight)
        ours.proj.bias.copy_(theirs.dense.bias)
    x = torch.randn(2, seq, d_model)
    position_ids = torch.arange(seq)[None]
    cos, sin = hf.GPTNeoXRotaryEmbedding(config)(x, position_ids)
    causal = torch.full((seq, seq), float("-inf")).triu(1)[None, None]
    expected, _ = theirs(x, causal, position_embeddings=(cos, sin))
    torch.testing.assert_close(ours(x), expected, atol=1e-5, rtol=0)
    assert ours.encoding.rotary_dim == int(head_dim * pct) == 4
