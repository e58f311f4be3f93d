"""posenc_lib.frequencies: turns per pair, truncated RoPE (against p-RoPE and a per-pair reference), band norms
(against a float64 reference written out dim by dim), attention maps and positional heads, drop_rope, bad input,
the meta device."""
import math

import pytest
import torch

from posenc_lib import frequencies as F
from posenc_lib.attention import NoPE
from posenc_lib.model import TinyLM
from posenc_lib.rope import RotaryEmbedding, apply_rope


def _model(encoding="rope", layers=2, seed=0, **settings):
    torch.manual_seed(seed)
    return TinyLM(11, encoding=encoding, d_model=16, num_heads=2, num_layers=layers, **settings).eval()


def _windows(batch=3, seq=12, seed=1):
    return torch.randint(0, 11, (batch, seq), generator=torch.Generator().manual_seed(seed))


# ----------------------------------------------------------------------------- turns
def test_pair_turns_and_slow_pairs_by_hand():
    # head_dim 16, base 1e4: theta_i = 10 ** (-i / 2); 64 theta_3 = 2.02 rad < 2 pi; 512 theta_3 = 16.2 > 2 pi
    turns = F.pair_turns(16, 64)
    assert turns.dtype == torch.float64
    assert math.isclose(float(turns[0]), 64 / (2 * math.pi), rel_tol=1e-12)
    assert math.isclose(float(turns[3]), 64 * 10 ** -1.5 / (2 * math.pi), rel_tol=1e-12)
    assert F.slow_pairs(16, 64).tolist() == [False] * 3 + [True] * 5
    assert F.slow_pairs(16, 512).tolist() == [False] * 4 + [True] * 4
    for i, slow in enumerate(F.slow_pairs(64, 1000, base=5e5).tolist()):  # the period 2 pi / theta_i > length
        assert slow == (2 * math.pi * 5e5 ** (2 * i / 64) > 1000)


# ----------------------------------------------------------------------------- truncated RoPE
def _qk(dim=16, seq=9, dtype=torch.float64, seed=2):
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, seq, dim, generator=gen, dtype=dtype), torch.randn(2, 3, seq, dim, generator=gen,
                                                                                 dtype=dtype))


@pytest.mark.parametrize("count", [1, 3, 6])
def test_stopping_the_slowest_pairs_is_p_rope(count):
    q, k = _qk()
    ours = F.TruncatedRoPE(16, stop="slowest", count=count)(q, k)
    p_rope = RotaryEmbedding(16, scaling={"rope_type": "proportional", "partial_rotary_factor": 1 - count / 8})(q, k)
    for a, b in zip(ours, p_rope):
        assert torch.equal(a, b)


@pytest.mark.parametrize("stop", F.TRUNCATIONS)
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_stopped_pairs_pass_through_and_the_others_are_rope(stop, layout):
    q, _ = _qk()
    count, pairs = 3, 8
    out, _ = F.TruncatedRoPE(16, stop=stop, count=count, layout=layout)(q, q)
    full = apply_rope(q, base=10000.0, layout=layout)
    stopped = list(range(pairs - count, pairs)) if stop == "slowest" else list(range(count))
    for i in range(pairs):
        dims = [i, i + pairs] if layout == "half" else [2 * i, 2 * i + 1]
        want = q[..., dims] if i in stopped else full[..., dims]
        assert torch.allclose(out[..., dims], want, atol=1e-12, rtol=0), (stop, layout, i)


def test_truncated_scores_stay_relative_and_extremes_are_rope_and_nope():
    q, k = _qk()
    rope = F.TruncatedRoPE(16, stop="fastest", count=2)
    shift = torch.arange(9) + 40
    a = torch.einsum("...qd,...kd->...qk", *rope(q, k))
    b = torch.einsum("...qd,...kd->...qk", *rope(q, k, shift))
    assert torch.allclose(a, b, atol=1e-10)
    for a_, b_ in zip(F.TruncatedRoPE(16, count=0)(q, k), RotaryEmbedding(16)(q, k)):
        assert torch.equal(a_, b_)
    for stop in F.TRUNCATIONS:
        out_q, out_k = F.TruncatedRoPE(16, stop=stop, count=8)(q, k)
        assert torch.equal(out_q, q) and torch.equal(out_k, k)


def test_truncated_rope_keeps_dtype_device_and_runs_on_meta():
    q, k = _qk(dtype=torch.bfloat16)
    out_q, out_k = F.TruncatedRoPE(16, stop="fastest", count=2)(q, k)
    assert out_q.dtype == torch.bfloat16 and out_k.dtype == torch.bfloat16
    mq = torch.empty(1, 2, 5, 16, device="meta")
    out_q, _ = F.TruncatedRoPE(16, count=4)(mq, mq)
    assert out_q.device.type == "meta" and out_q.shape == mq.shape


def test_truncated_rope_bad_input():
    with pytest.raises(ValueError, match="count must be at most dim/2 = 8"):
        F.TruncatedRoPE(16, count=9)
    with pytest.raises(ValueError, match="stop"):
        F.TruncatedRoPE(16, stop="middle")
    with pytest.raises((TypeError, ValueError), match="count"):
        F.TruncatedRoPE(16, count=-1)
    with pytest.raises(ValueError, match="head_dim"):
        F.pair_turns(15, 64)
    with pytest.raises((TypeError, ValueError), match="length"):
        F.slow_pairs(16, 0)


def test_truncated_rope_for_a_model_swaps_in_and_stopping_everything_equals_drop_rope():
    model, idx = _model(), _windows()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    dropped = F.drop_rope(model)
    assert isinstance(model.encoding, RotaryEmbedding) and isinstance(dropped.encoding, NoPE)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())  # the caller's model untouched
    want, _ = dropped(idx)
    original = model.encoding
    model.replace_encoding(F.truncated_rope(model, "slowest", 2))
    got_all = model(idx)[0]
    model.replace_encoding(F.truncated_rope(model, "fastest", 2))
    got_fast = model(idx)[0]
    model.replace_encoding(original)
    assert not torch.allclose(got_all, want)  # half the pairs stopped is not NoPE ...
    model.replace_encoding(F.truncated_rope(model, "fastest", model.encoding.dim // 2))
    assert torch.allclose(model(idx)[0], want, atol=1e-6)  # ... all of them is
    assert not torch.allclose(got_fast, got_all)
    with pytest.raises(ValueError, match="must use RoPE"):
        F.drop_rope(_model("alibi"))
    with pytest.raises(TypeError, match="TinyLM"):
        F.truncated_rope(torch.nn.Linear(2, 2), "slowest", 1)


# ----------------------------------------------------------------------------- band norms
def test_band_norms_match_a_reference_written_dim_by_dim():
    model, idx = _model(layers=1), _windows()
    norms = F.band_norms(model, idx)
    block = model.blocks[0]
    with torch.no_grad():
        x = block.ln1(model.token_embedding(idx)).double()                   # RoPE adds nothing to the input
        qkv = x @ block.attn.qkv.weight.double().T                           # (B, T, 3 * 16)
    heads, hd = 2, 8
    for which, offset in (("q", 0), ("k", 16)):
        for h in range(heads):
            for i in range(hd // 2):
                a, b = qkv[..., offset + h * hd + i], qkv[..., offset + h * hd + i + hd // 2]   # half layout
                want = float(torch.sqrt(a * a + b * b).mean())
                assert math.isclose(float(norms[which][0, h, i]), want, rel_tol=1e-5), (which, h, i)
    assert norms["q"].shape == (1, 2, 4) and norms["layout"] == "half"


def test_band_norms_are_the_norms_after_rotation_too_and_leave_the_model_as_it_was():
    model, idx = _model(), _windows()
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    norms = F.band_norms(model, idx)
    assert model.training and all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
    assert all(not b.attn.qkv._forward_hooks for b in model.blocks)
    usage = F.pair_usage(norms)
    assert torch.allclose(usage.sum(-1), torch.ones(2, 2, dtype=torch.float64))
    assert torch.allclose(F.fast_share(usage, 4), torch.ones(2, 2, dtype=torch.float64))
    # a rotation keeps a pair's norm: the pair norms of R_m q equal those of q
    q = torch.randn(1, 1, 6, 8, dtype=torch.float64)
    rotated = apply_rope(q, torch.arange(6) * 7)
    assert torch.allclose(torch.hypot(*q.chunk(2, -1)), torch.hypot(*rotated.chunk(2, -1)), atol=1e-12)


def test_band_norms_bad_input():
    with pytest.raises(ValueError, match="must use RoPE"):
        F.band_norms(_model("nope"), _windows())
    with pytest.raises(TypeError, match="windows"):
        F.band_norms(_model(), torch.rand(2, 5))
    with pytest.raises(ValueError, match=r"\(batch, seq\)"):
        F.band_norms(_model(), torch.zeros(5, dtype=torch.long))
    with pytest.raises(TypeError, match="norms"):
        F.pair_usage({"q": torch.ones(1, 1, 2)})
    with pytest.raises(ValueError, match="pairs must be at most"):
        F.fast_share(torch.ones(1, 1, 4), 5)


# ----------------------------------------------------------------------------- attention and positional heads
def test_attention_maps_are_causal_rows_of_weights_and_restore_the_layers():
    model, idx = _model(), _windows()
    maps = F.attention_maps(model, idx)
    assert maps.shape == (2, 2, 12, 12) and maps.dtype == torch.float64
    assert torch.allclose(maps.sum(-1), torch.ones(2, 2, 12, dtype=torch.float64), atol=1e-6)
    assert float(maps.triu(1).abs().max()) == 0.0
    assert all(not b.attn.keep_weights and b.attn.last_weights is None for b in model.blocks)


def test_offset_profile_and_positional_heads_find_a_previous_token_head():
    seq = 10
    prev = torch.zeros(seq, seq, dtype=torch.float64)
    prev[0, 0] = 1.0
    prev[torch.arange(1, seq), torch.arange(seq - 1)] = 1.0                  # every query on key = query - 1
    uniform = torch.tril(torch.ones(seq, seq, dtype=torch.float64))
    uniform = uniform / uniform.sum(-1, keepdim=True)
    maps = torch.stack([torch.stack([prev, uniform])])                          # (1 layer, 2 heads, T, T)
    profile = F.offset_profile(maps, max_offset=3)
    assert profile.shape == (1, 2, 4)
    assert profile[0, 0].tolist() == [0.0, 1.0, 0.0, 0.0]
    want = torch.tensor([1 / (q + 1) for q in range(3, seq)], dtype=torch.float64).mean()
    assert torch.allclose(profile[0, 1], want.expand(4))
    assert F.positional_heads(profile, 0.5) == [{"layer": 0, "head": 0, "offset": 1, "weight": 1.0}]
    with pytest.raises(ValueError, match="seq > max_offset"):
        F.offset_profile(maps, max_offset=seq)
    with pytest.raises(ValueError, match="threshold must be in"):
        F.positional_heads(profile, 1.5)
    with pytest.raises(ValueError, match="layers, heads, offsets"):
        F.positional_heads(profile[0], 0.5)


def test_analysis_runs_on_the_meta_device():
    model = _model().to("meta")
    idx = torch.zeros(2, 6, dtype=torch.long, device="meta")
    norms = F.band_norms(model, idx)
    assert norms["q"].device.type == "meta" and norms["q"].shape == (2, 2, 4)
    assert F.attention_maps(model, idx).shape == (2, 2, 6, 6)


def test_truncated_rope_compiles_as_one_graph():
    enc = F.TruncatedRoPE(16, stop="fastest", count=3)
    q, k = _qk(dtype=torch.float32)
    compiled = torch.compile(lambda q, k: enc(q, k), fullgraph=True)
    for got, want in zip(compiled(q, k), enc(q, k)):
        assert torch.allclose(got, want, atol=1e-6)
