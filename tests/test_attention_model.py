"""attention(), MultiHeadAttention with every kind of encoding, and TinyLM."""
import math

import pytest
import torch

from posenc_lib import ENCODINGS, MultiHeadAttention, NoPE, RotaryEmbedding, TinyLM, attention, make_encoding
from posenc_lib.attention import PositionalEncoding

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


def test_attention_half_precision_keeps_dtype():
    q = torch.randn(1, 2, 4, 8, dtype=torch.bfloat16)
    out = attention(q, q, q, causal=True)
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.double(), _ref_attention(q, q, q, causal=True), atol=2e-2, rtol=0)


# ------------------------------------------------------------------ permutation: DESIGN section 4, mistake 1
def _permuted(mha, x, perm):
    return mha(x[:, perm])


@pytest.mark.parametrize("seed", [0, 1])
def test_nope_self_attention_is_permutation_equivariant_not_invariant(seed):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(16, 4, encoding=NoPE())
    x = torch.randn(2, 7, 16)
    perm = torch.randperm(7)
    while torch.equal(perm, torch.arange(7)):
        perm = torch.randperm(7)
    out, out_perm = mha(x), _permuted(mha, x, perm)
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
    model = TinyLM(20, encoding=kind, d_model=16, num_heads=2, num_layers=1, max_len=32)
    # make the non-causal question: one attention layer with the model's encoding, input-added ones applied first
    enc = model.encoding
    mha = MultiHeadAttention(16, 2, encoding=enc)
    x = torch.randn(1, 7, 16)
    pos = torch.arange(7)
    perm = torch.tensor([3, 0, 6, 1, 5, 2, 4])

    def run(inp):
        return mha(enc.add_to_input(inp, pos), pos)

    assert not torch.allclose(run(x[:, perm]), run(x)[:, perm], atol=1e-5)
    # while the same layer with NoPE is equivariant (sanity check of the construction)
    nope = MultiHeadAttention(16, 2)
    nope.load_state_dict(mha.state_dict(), strict=False)
    torch.testing.assert_close(nope(x[:, perm]), nope(x)[:, perm], atol=1e-6, rtol=0)


def test_protocol_has_one_hook_per_place():
    base = PositionalEncoding()
    q = torch.randn(1, 1, 3, 4)
    x = q[0]
    assert base.add_to_input(x, torch.arange(3)) is x
    assert base.rotate_qk(q, q, None, None) == (q, q)
    assert base.score_bias(q, None, None) is None and base.value_bias(q, None, None) is None
    overridden = {kind: [hook for hook in ("add_to_input", "rotate_qk", "score_bias", "value_bias")
                         if getattr(type(make_encoding(kind, d_model=8, num_heads=2)), hook)
                         is not getattr(PositionalEncoding, hook)] for kind in ENCODINGS}
    assert overridden == {"nope": [], "sinusoidal": ["add_to_input"], "learned": ["add_to_input"],
                          "t5": ["score_bias"], "shaw": ["score_bias", "value_bias"], "rope": ["rotate_qk"],
                          "alibi": ["score_bias"]}


# ------------------------------------------------------------------ TinyLM
@pytest.mark.parametrize("kind", ENCODINGS)
def test_tinylm_forward_and_loss(kind):
    torch.manual_seed(4)
    model = TinyLM(30, encoding=kind, d_model=32, num_heads=4, num_layers=2, max_len=64)
    idx = torch.randint(0, 30, (3, 17))
    logits, loss = model(idx, idx)
    assert logits.shape == (3, 17, 30) and loss.ndim == 0 and math.isfinite(loss.item())
    assert loss.item() == pytest.approx(math.log(30), rel=0.15)  # untrained: close to uniform
    logits_none, none = model(idx)
    assert none is None and torch.equal(logits_none, logits)
    # causal: the logits at t do not depend on tokens after t
    idx2 = idx.clone()
    idx2[:, 10:] = (idx2[:, 10:] + 1) % 30
    torch.testing.assert_close(model(idx2)[0][:, :10], logits[:, :10], atol=1e-5, rtol=0)


@pytest.mark.parametrize("kind", ENCODINGS)
def test_tinylm_relative_encodings_ignore_a_shift_of_all_positions(kind):
    torch.manual_seed(5)
    model = TinyLM(30, encoding=kind, d_model=32, num_heads=4, num_layers=1, max_len=128)
    idx = torch.randint(0, 30, (2, 12))
    base, shifted = model(idx)[0], model(idx, positions=torch.arange(50, 62))[0]
    if kind in ("sinusoidal", "learned"):  # absolute encodings see the shift
        assert not torch.allclose(base, shifted, atol=1e-4)
    else:  # relative ones (and NoPE) only see key - query
        torch.testing.assert_close(base, shifted, atol=1e-4, rtol=0)


def test_tinylm_trains_and_moves_between_devices():
    torch.manual_seed(6)
    model = TinyLM(12, encoding="rope", d_model=32, num_heads=2, num_layers=1)
    data = torch.arange(12).repeat(4, 3)[:, :24]  # a cyclic sequence: easy to learn
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    first = None
    for _ in range(25):
        _, loss = model(data[:, :-1], data[:, 1:])
        first = loss.item() if first is None else first
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.5 * first
    # .to()/.double() walk every submodule: a RotaryEmbedding method named `_apply` used to shadow
    # nn.Module._apply and crash here (regression test)
    model.double()
    model.to("meta")
    assert next(model.parameters()).device.type == "meta"


def test_replace_encoding_swaps_every_layer():
    model = TinyLM(10, encoding="rope", d_model=16, num_heads=2, num_layers=3)
    new = RotaryEmbedding(8, scaling={"rope_type": "linear", "factor": 4.0})
    model.replace_encoding(new)
    assert model.encoding is new and all(block.attn.encoding is new for block in model.blocks)


def test_t5_bias_is_shared_by_all_layers():
    model = TinyLM(10, encoding="t5", d_model=16, num_heads=2, num_layers=3)
    tables = {id(block.attn.encoding.relative_attention_bias.weight) for block in model.blocks}
    assert len(tables) == 1
    assert sum(p.numel() for n, p in model.named_parameters() if "relative_attention_bias" in n) == 32 * 2
