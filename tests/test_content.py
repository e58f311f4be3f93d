"""CoPE, the forget gate (FoX) and PaTH (posenc_lib.content) against per-token float64 references written as
plain loops over i and j, the special cases each paper names (all gates open: a learned relative encoding; a
constant forget gate: ALiBi; beta -> 0: no map), bad input, devices and dtypes, and a KV cache's steps against
one full forward of TinyLM."""
import math

import pytest
import torch

from posenc_lib import ENCODINGS, MultiHeadAttention, NoPE, TinyLM, alibi_bias, alibi_slopes, make_encoding
from posenc_lib.attention import ScoreInputs, _scores
from posenc_lib.content import CoPE, ForgettingGate, PaTH, householder_product
from posenc_lib.encoding_rules import encoding_rule_problems
from posenc_lib.inference import KVCache, decode_step
from posenc_lib.model import ENCODING_LABELS

B, H, T, HD = 2, 3, 7, 4
D = H * HD
NAMES = ["cope", "fox", "path"]


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _randomised(enc, seed=0, scale=0.5):
    """A copy of enc with every parameter redrawn (CoPE's table starts at zero: a no-op)."""
    with torch.no_grad():
        for p in enc.parameters():
            p.copy_(scale * torch.randn(p.shape, generator=_gen(seed), dtype=p.dtype))
            seed += 1
    return enc


def _qkx(dtype=torch.float64, seed=1):
    g = _gen(seed)
    return (torch.randn(B, H, T, HD, generator=g, dtype=dtype), torch.randn(B, H, T, HD, generator=g, dtype=dtype),
            torch.randn(B, T, D, generator=g, dtype=dtype))


def _edited(enc, q, k, x):
    """edit_scores of q over k (self-attention, every query) with the token state of x, as the attention calls it."""
    pos = torch.arange(q.shape[-2])
    return enc.edit_scores(_scores(q, k), ScoreInputs(q, k, pos, pos, x, enc.token_state(x, pos)))


def _sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z))


# ------------------------------------------------------------------ per-token references, loops over i, j
def _cope_reference(q, k, table, npos):
    """score[b, h, i, j] for j <= i, one entry at a time (NaN above the diagonal: not compared)."""
    out = torch.full((B, H, T, T), math.nan, dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            for i in range(T):
                qi = q[b, h, i].tolist()
                dot = [sum(a * c for a, c in zip(qi, k[b, h, j].tolist())) for j in range(T)]
                for j in range(i + 1):
                    p = min(sum(_sigmoid(dot[m] / math.sqrt(HD)) for m in range(j, i + 1)), npos - 1)
                    lo, hi = math.floor(p), math.ceil(p)
                    e = [(1 - (p - lo)) * table[lo][d] + (p - lo) * table[hi][d] for d in range(HD)]
                    out[b, h, i, j] = (dot[j] + sum(a * c for a, c in zip(qi, e))) / math.sqrt(HD)
    return out


def _fox_reference(q, k, x, weight, bias):
    out = torch.full((B, H, T, T), math.nan, dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            log_f = [math.log(_sigmoid(sum(a * c for a, c in zip(weight[h], x[b, t].tolist())) + bias[h]))
                     for t in range(T)]
            for i in range(T):
                for j in range(i + 1):
                    dot = sum(a * c for a, c in zip(q[b, h, i].tolist(), k[b, h, j].tolist()))
                    out[b, h, i, j] = dot / math.sqrt(HD) + sum(log_f[m] for m in range(j + 1, i + 1))
    return out


def _path_reference(q, k, x, w_weight, beta_weight, beta_bias):
    """H_t = I - beta_t w_t w_t^T applied to k_j for t = j+1, ..., i in turn (the last: the query's own)."""
    out = torch.full((B, H, T, T), math.nan, dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            ws, betas = [], []
            for t in range(T):
                xt = x[b, t].tolist()
                raw = [sum(a * c for a, c in zip(w_weight[h * HD + d], xt)) for d in range(HD)]
                norm = math.sqrt(sum(v * v for v in raw))
                ws.append([v / norm for v in raw])
                betas.append(2 * _sigmoid(sum(a * c for a, c in zip(beta_weight[h], xt)) + beta_bias[h]))
            for i in range(T):
                for j in range(i + 1):
                    v = k[b, h, j].tolist()
                    for t in range(j + 1, i + 1):
                        along = sum(a * c for a, c in zip(ws[t], v))
                        v = [a - betas[t] * along * c for a, c in zip(v, ws[t])]
                    out[b, h, i, j] = sum(a * c for a, c in zip(q[b, h, i].tolist(), v)) / math.sqrt(HD)
    return out


def _assert_lower_close(got, want, atol=1e-12):
    keep = torch.ones(T, T, dtype=torch.bool).tril()
    torch.testing.assert_close(got[..., keep], want[..., keep], atol=atol, rtol=0)


def test_cope_matches_a_per_token_reference():
    q, k, x = _qkx()
    q, k = 2 * q, 2 * k  # gates well away from 1/2
    cope = _randomised(CoPE(HD, npos=5).double())  # npos 5 < T: the cap is reached
    want = _cope_reference(q, k, cope.pos_emb.tolist(), 5)
    _assert_lower_close(_edited(cope, q, k, x), want)
    assert float(cope.positions(q, k).max()) == 4.0  # the cap npos - 1 is hit, so the test covers it


def test_fox_matches_a_per_token_reference():
    q, k, x = _qkx()
    fox = _randomised(ForgettingGate(D, H).double())
    want = _fox_reference(q, k, x, fox.gate.weight.tolist(), fox.gate.bias.tolist())
    _assert_lower_close(_edited(fox, q, k, x), want)


def test_path_matches_a_per_token_reference():
    q, k, x = _qkx()
    path = _randomised(PaTH(D, H).double(), scale=1.0)
    want = _path_reference(q, k, x, path.w_proj.weight.tolist(), path.beta_proj.weight.tolist(),
                           path.beta_proj.bias.tolist())
    _assert_lower_close(_edited(path, q, k, x), want)
    pos = torch.arange(T)
    inputs = ScoreInputs(q, k, pos, pos, x, path.token_state(x, pos))
    _assert_lower_close(path.sequential_scores(_scores(q, k), inputs), want)   # the plain loop: the same
    # the order matters: the reversed product H_{j+1} ... H_i gives other scores
    state = path.token_state(x, torch.arange(T))
    reversed_state = {name: t.flip(2) for name, t in state.items()}
    flipped = path.edit_scores(_scores(q, k), ScoreInputs(q, k, torch.arange(T), torch.arange(T), x, reversed_state))
    assert (flipped - want).nan_to_num().abs().max() > 1e-2


@pytest.mark.parametrize("dtype, T_, atol", [(torch.float64, 40, 1e-12), (torch.float32, 128, 1e-4)])
def test_path_ut_form_and_the_loop_agree_for_every_query_and_for_the_last_ones(dtype, T_, atol):
    """edit_scores (one triangular solve) against sequential_scores (Tk rank-1 updates), every query and the last
    3 alone (a cache's step), with maps drawn wide (std 1: beta across (0, 2))."""
    g = _gen(9)
    path = _randomised(PaTH(D, H), scale=1.0).to(dtype)
    x = torch.randn(B, T_, D, generator=g, dtype=dtype)
    q, k = (torch.randn(B, H, T_, HD, generator=g, dtype=dtype) for _ in range(2))
    pos = torch.arange(T_)
    state = path.token_state(x, pos)
    keep = torch.ones(T_, T_, dtype=torch.bool).tril()
    with torch.no_grad():
        for rows in (slice(None), slice(T_ - 3, None)):
            inputs = ScoreInputs(q[..., rows, :], k, pos[rows], pos, x[:, rows], state)
            fast = path.edit_scores(_scores(q[..., rows, :], k), inputs)
            slow = path.sequential_scores(_scores(q[..., rows, :], k), inputs)
            assert fast.dtype == dtype
            torch.testing.assert_close(fast[..., keep[rows]], slow[..., keep[rows]], atol=atol, rtol=0)


# ------------------------------------------------------------------ what each paper says it reduces to
def test_cope_with_every_gate_open_is_a_learned_relative_encoding():
    """Gates of 1 (huge q.k) count every token: p_ij = i - j + 1 exactly, so the term is q_i . e[i - j + 1]."""
    cope = _randomised(CoPE(HD, npos=T + 1).double())
    q = torch.ones(1, 1, T, HD, dtype=torch.float64)
    k = 100.0 * torch.ones(1, 1, T, HD, dtype=torch.float64)
    p = cope.positions(q, k)[0, 0]
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    torch.testing.assert_close(p, torch.where(j <= i, (i - j + 1).double(), 0.0), atol=1e-12, rtol=0)
    edited = cope.edit_scores(_scores(q, k), ScoreInputs(q, k, torch.arange(T), torch.arange(T), None, None))
    term = (q[0, 0] @ cope.pos_emb.T).gather(-1, (i - j + 1).clamp(0, T))         # (T, T): q_i . e[i - j + 1]
    want = _scores(q, k)[0, 0] + term / math.sqrt(HD)
    keep = j <= i
    torch.testing.assert_close(edited[0, 0][keep], want[keep], atol=1e-12, rtol=0)


def test_a_constant_forget_gate_is_alibi():
    """f_t = exp(-m_h) for every token (weights 0, bias logit(exp(-m_h))): the gate's bias is ALiBi's -m_h (i - j)
    on the keys a causal query sees (the FoX paper's remark that FoX generalises ALiBi)."""
    fox = ForgettingGate(D, H).double()
    slopes = alibi_slopes(H, dtype=torch.float64)
    with torch.no_grad():
        fox.gate.weight.zero_()
        fox.gate.bias.copy_(torch.logit(torch.exp(-slopes)))
    q, k, x = _qkx()
    bias = _edited(fox, q, k, x) - _scores(q, k)
    want = alibi_bias(H, T, dtype=torch.float64).expand(B, H, T, T)
    _assert_lower_close(bias, want, atol=1e-12)


def test_path_with_beta_near_zero_is_plain_attention_and_with_beta_two_keeps_norms():
    q, k, x = _qkx()
    path = _randomised(PaTH(D, H).double())
    with torch.no_grad():
        path.beta_proj.weight.zero_()
        path.beta_proj.bias.fill_(-60.0)  # beta = 2 sigmoid(-60) ~ 2e-26
    _assert_lower_close(_edited(path, q, k, x), _scores(q, k))
    with torch.no_grad():
        path.beta_proj.bias.fill_(60.0)   # beta = 2: reflections, orthogonal: q_i^T P k_j bounded by |q||k|
    edited = _edited(path, q, k, x) * math.sqrt(HD)
    bound = q.norm(dim=-1)[..., :, None] * k.norm(dim=-1)[..., None, :]
    keep = torch.ones(T, T, dtype=torch.bool).tril()
    assert bool((edited.abs()[..., keep] <= bound[..., keep] + 1e-9).all())
    assert (edited - _scores(q, k) * math.sqrt(HD))[..., keep].abs().max() > 1e-2  # and not the identity


def test_the_ut_form_is_the_sequential_product_of_the_maps():
    """How the paper parallelises: H_L ... H_1 = I - W^T A W with one triangular solve, against the product
    taken one map at a time (the last token's leftmost, the order PaTH applies them to a key)."""
    g = _gen(5)
    w = torch.nn.functional.normalize(torch.randn(2, 6, HD, generator=g, dtype=torch.float64), dim=-1)
    beta = 2 * torch.rand(2, 6, generator=g, dtype=torch.float64)
    product = torch.eye(HD, dtype=torch.float64).repeat(2, 1, 1)
    for t in range(6):
        product = (torch.eye(HD, dtype=torch.float64) - beta[:, t, None, None] * w[:, t, :, None] * w[:, t, None, :]) \
            @ product
    torch.testing.assert_close(householder_product(w, beta), product, atol=1e-12, rtol=0)
    first_leftmost = householder_product(w.flip(-2), beta.flip(-1))
    assert (first_leftmost - product).abs().max() > 1e-2  # the order matters (the maps do not commute)
    assert householder_product(w.float(), beta.float()).dtype == torch.float32
    with pytest.raises(ValueError, match=r"w must have shape \(\.\.\., L, d\) and beta \(\.\.\., L\)"):
        householder_product(w, beta[:, :3])


# ------------------------------------------------------------------ the protocol's rules, registry, labels
@pytest.mark.parametrize("name", NAMES)
def test_registered_with_labels_and_built_from_the_config(name):
    enc = make_encoding(name, d_model=32, num_heads=4, max_len=40)
    assert type(enc) is ENCODINGS[name] and str(ENCODING_LABELS[name]) == name
    if name == "cope":
        assert enc.npos == 41 and enc.pos_emb.shape == (41, 8)


@pytest.mark.parametrize("name", NAMES)
def test_keeps_every_rule_of_the_protocol(name):
    assert encoding_rule_problems(name) == []


# ------------------------------------------------------------------ bad input
BAD = [
    ("cope head_dim 0", lambda: CoPE(0), ValueError, r"head_dim must be >= 1, got 0"),
    ("cope head_dim float", lambda: CoPE(4.0), TypeError, r"head_dim"),
    ("cope npos 1", lambda: CoPE(4, npos=1), ValueError, r"npos must be >= 2"),
    ("cope q of another head_dim", lambda: CoPE(5)(*_qkx()[:2]), ValueError, r"q and k must have head_dim=5"),
    ("fox num_heads 0", lambda: ForgettingGate(8, 0), ValueError, r"num_heads must be >= 1, got 0"),
    ("fox x of another width", lambda: ForgettingGate(8, 2).token_state(torch.zeros(1, 3, 5), None), ValueError,
     r"x must have shape \(batch, seq, d_model=8\)"),
    ("fox x integer", lambda: ForgettingGate(8, 2).token_state(torch.zeros(1, 3, 8, dtype=torch.long), None),
     TypeError, r"x must be a floating"),
    ("fox without a state", lambda: ForgettingGate(D, H).edit_scores(
        torch.zeros(B, H, T, T), ScoreInputs(*_qkx()[:2], torch.arange(T), torch.arange(T), _qkx()[2], None)),
     ValueError, r"inputs.state must hold ForgettingGate's token_state \('log_forget'\)"),
    ("path d_model not divisible", lambda: PaTH(10, 4), ValueError, r"d_model must be divisible by num_heads"),
    ("path k of other heads", lambda: PaTH(D, H).edit_scores(
        torch.zeros(B, 2, T, T), ScoreInputs(torch.zeros(B, 2, T, 6), torch.zeros(B, 2, T, 6), torch.arange(T),
                                             torch.arange(T), _qkx()[2], None)),
     ValueError, r"k must have shape \(batch, num_heads=3, seq, head_dim=4\)"),
    ("path a state of other length", lambda: PaTH(D, H).edit_scores(
        torch.zeros(B, H, T, T), ScoreInputs(*_qkx()[:2], torch.arange(T), torch.arange(T), _qkx()[2],
                                             PaTH(D, H).double().token_state(_qkx()[2][:, :3], None))),
     ValueError, r"inputs.state\['w'\] must hold one entry per key \(dim 2 = 7\)"),
]


@pytest.mark.parametrize("call, error, message", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ------------------------------------------------------------------ dtype, device, inputs left alone
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dtype_in_is_dtype_out_and_inputs_are_untouched(name, dtype):
    enc = _randomised(make_encoding(name, d_model=D, num_heads=H, max_len=16)).to(dtype)
    q, k, x = _qkx(dtype)
    copies = [t.clone() for t in (q, k, x)]
    pos = torch.arange(T)
    state = enc.token_state(x, pos)
    held = None if state is None else {n: t.clone() for n, t in state.items()}
    scores = _scores(q, k)
    before = scores.clone()
    out = enc.edit_scores(scores, ScoreInputs(q, k, pos, pos, x, state))
    assert out.dtype == dtype and all(t.dtype == dtype for t in (state or {}).values())
    assert all(torch.equal(a, b) for a, b in zip((q, k, x, scores), (*copies, before)))
    assert held is None or all(torch.equal(state[n], held[n]) for n in held)


@pytest.mark.parametrize("name", NAMES)
def test_runs_on_the_callers_device(name, device):
    torch.manual_seed(0)
    mha = MultiHeadAttention(D, H, encoding=make_encoding(name, d_model=D, num_heads=H, max_len=16), causal=True)
    x = torch.randn(B, T, D)
    if device.type == "meta":
        out = mha.to(device)(torch.empty(B, T, D, device=device))
        assert out.device.type == "meta" and out.shape == (B, T, D)
        return
    _randomised(mha.encoding)
    want = mha(x)
    got = mha.to(device)(x.to(device))
    assert got.device.type == device.type
    torch.testing.assert_close(got.cpu(), want, atol=1e-5, rtol=0)


# ------------------------------------------------------------------ a KV cache's steps == one full forward
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("rotated", [True, False])
def test_decoding_with_a_cache_equals_the_full_forward(name, rotated):
    torch.manual_seed(0)
    model = TinyLM(23, encoding=name, d_model=32, num_heads=4, num_layers=2, max_len=64).eval()
    _randomised(model.encoding, seed=7, scale=0.5)
    ids = torch.randint(0, 23, (2, 12), generator=_gen(1))
    with torch.no_grad():
        full, _ = model(ids)
        cache = KVCache(2, rotated=rotated)
        steps = [decode_step(model, ids[:, :5], cache)]
        steps += [decode_step(model, ids[:, t:t + 1], cache) for t in range(5, 12)]
        encoding = model.encoding
        model.replace_encoding(NoPE())
        plain, _ = model(ids)
        model.replace_encoding(encoding)
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=0)
    assert (plain - full).abs().max() > 1e-2  # the encoding changes the logits: the test compares something
    if name != "cope":  # CoPE keeps nothing beside the keys; the other two keep their token state
        assert cache.layers[0].state is not None and all(t.shape[2] == 12 for t in cache.layers[0].state.values())
    else:
        assert cache.layers[0].state is None
