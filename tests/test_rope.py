"""RoPE (posenc_lib.rope): against an explicit float64 per-pair rotation and Hugging Face's Llama code, its
properties, the bit-identity with the eager form, RotaryEmbedding's per-call tables and dynamic frequencies,
RoFormer's decay bound, and a clear error (or the right empty/huge answer) for every bad input.

Precision note: Hugging Face computes the angles position * inv_freq in float32, which by itself
loses precision at long positions (a float32 angle near 1e5 rad is off by up to ~4e-3 rad). The
library computes them in float64. So HF is compared at moderate positions (< 8192) with the
the course-wide tolerance 1e-5, and long positions are compared with the float64 formula instead.
"""
import cmath
import math

import pytest
import torch
from conftest import eager_rotate_half, float32_ulp, measured_rope_frequencies, pair_indices, ref_frequencies, ref_rope
from hypothesis import given, strategies as st
from transformers import LlamaConfig
from transformers.models.llama import modeling_llama as hf_llama

from posenc_lib import (
    RotaryEmbedding,
    apply_decoupled_rope,
    apply_rope,
    layout_permutation,
    rope as rope_mod,
    rope_complex,
    rope_cos_sin,
    rope_decay_bound,
    rope_inv_freq,
    rope_matrix,
    rotate_half,
)

LAYOUTS = ["half", "interleaved"]
even_dims = st.integers(1, 32).map(lambda h: 2 * h)


def _hf_rotary(head_dim, base, params=None, max_position_embeddings=4096):
    config = LlamaConfig(hidden_size=4 * head_dim, num_attention_heads=4, head_dim=head_dim,
                         max_position_embeddings=max_position_embeddings,
                         rope_parameters={"rope_type": "default", "rope_theta": base, **(params or {})})
    return hf_llama.LlamaRotaryEmbedding(config)


def test_transformers_llama_rotary_embedding_keeps_frequencies_not_a_table():
    """09's Q4 tip: transformers' LlamaRotaryEmbedding keeps no cos/sin table, only its frequencies, and makes
    cos/sin from the positions at every call (a position far beyond max_position_embeddings included); so does
    posenc_lib's RotaryEmbedding, whose state is its frequencies per device."""
    rot = _hf_rotary(16, 10000.0, max_position_embeddings=64)
    assert {name for name, _ in rot.named_buffers()} == {"inv_freq", "original_inv_freq"}
    assert not [name for name, value in vars(rot).items() if isinstance(value, torch.Tensor)]
    x = torch.zeros(1, 3, 16)
    for positions in ([[0, 1, 2]], [[5, 4000, 100_000]], [[7, 8, 9]]):
        position_ids = torch.tensor(positions)
        cos, _ = rot(x, position_ids)
        angles = position_ids[..., None].float() * rot.inv_freq.float()
        assert torch.equal(cos, torch.cat((angles, angles), -1).cos())  # from these positions alone
    ours = RotaryEmbedding(16)
    q = torch.randn(1, 2, 5, 16)
    ours(q, q, torch.arange(100, 105))
    assert not [name for name, value in vars(ours).items() if isinstance(value, torch.Tensor)]
    assert not list(ours.buffers())


# ------------------------------------------------------------------ against the float64 formula
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape,base", [((1, 1, 5, 2), 10000.0), ((2, 3, 17, 8), 10.0), ((2, 4, 33, 64), 10000.0),
                                        ((1, 2, 10, 128), 500000.0), ((7, 6), 10000.0), ((3, 9, 16), 1e6)])
def test_apply_rope_matches_explicit_rotation(shape, base, layout):
    torch.manual_seed(0)
    x = torch.randn(shape)
    positions = torch.randint(0, 5000, (shape[-2],))
    out = apply_rope(x, positions, base=base, layout=layout)
    assert out.shape == x.shape and out.dtype == x.dtype
    torch.testing.assert_close(out.double(), ref_rope(x, positions, base=base, layout=layout), atol=1e-5, rtol=0)
    # default positions are 0 .. seq-1
    torch.testing.assert_close(apply_rope(x, base=base, layout=layout).double(),
                               ref_rope(x, torch.arange(shape[-2]), base=base, layout=layout), atol=1e-5, rtol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_batched_positions_inv_freq_and_attention_factor(layout):
    torch.manual_seed(1)
    x = torch.randn(3, 2, 6, 16)
    positions = torch.randint(0, 3000, (3, 6))
    inv_freq = torch.rand(8) * 0.5
    out = apply_rope(x, positions, inv_freq=inv_freq, attention_factor=1.25, layout=layout)
    ref = ref_rope(x, positions, inv_freq=inv_freq.double(), attention_factor=1.25, layout=layout)
    torch.testing.assert_close(out.double(), ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_long_positions_match_float64_formula(layout):
    torch.manual_seed(2)
    x = torch.randn(2, 2, 8, 64)
    positions = torch.tensor([65_536, 65_537, 100_000, 131_071, 500_000, 1_000_000, 2_000_003, 4_000_000])
    out = apply_rope(x, positions, layout=layout)
    torch.testing.assert_close(out.double(), ref_rope(x, positions, layout=layout), atol=1e-5, rtol=0)


# ------------------------------------------------------------------ against Hugging Face
def test_rotate_half_is_hf_rotate_half():
    x = torch.randn(2, 3, 4, 10)
    assert torch.equal(rotate_half(x), hf_llama.rotate_half(x))


HF_CASES = [(1, 1, 7, 2, 10000.0), (2, 4, 33, 64, 10000.0), (3, 8, 20, 128, 500000.0), (1, 2, 48, 16, 100.0),
            (2, 12, 9, 96, 1e6)]


@pytest.mark.parametrize("batch,heads,seq,head_dim,base", HF_CASES)
def test_apply_rope_matches_hf_llama(batch, heads, seq, head_dim, base):
    """End to end at positions < 48, where HF's float32 angles are still within ~1e-6 of exact."""
    torch.manual_seed(3)
    q, k = torch.randn(batch, heads, seq, head_dim), torch.randn(batch, heads, seq, head_dim)
    position_ids = torch.stack([torch.randperm(48)[:seq] for _ in range(batch)])
    rot = _hf_rotary(head_dim, base)
    cos, sin = rot(q, position_ids)
    q_hf, k_hf = hf_llama.apply_rotary_pos_emb(q, k, cos, sin)
    torch.testing.assert_close(apply_rope(q, position_ids, base=base), q_hf, atol=1e-5, rtol=0)
    torch.testing.assert_close(apply_rope(k, position_ids, base=base), k_hf, atol=1e-5, rtol=0)
    q_ours, k_ours = RotaryEmbedding(head_dim, base=base)(q, k, position_ids)
    torch.testing.assert_close(q_ours, q_hf, atol=1e-5, rtol=0)
    torch.testing.assert_close(k_ours, k_hf, atol=1e-5, rtol=0)
    # the interleaved layout is HF's rotation on permuted dims
    perm = layout_permutation(head_dim)
    inter = apply_rope(q[..., torch.argsort(perm)], position_ids, base=base, layout="interleaved")
    torch.testing.assert_close(inter[..., perm], q_hf, atol=1e-5, rtol=0)


@pytest.mark.parametrize("batch,heads,seq,head_dim,base", HF_CASES)
def test_hf_frequencies_and_rotation_at_any_position(batch, heads, seq, head_dim, base):
    """Split HF's pipeline in its two parts and compare each tightly, at positions up to 8191:
    its inv_freq (float32) equals ours to a few float32 ulps, and its rotation applied to a given
    cos/sin is bit-identical to ours. What remains -- HF rounding pos * inv_freq to float32 -- is
    HF's own error (up to ~1e-3 at 8k positions), so ours is closer to the float64 formula than HF's."""
    torch.manual_seed(8)
    q = torch.randn(batch, heads, seq, head_dim)
    position_ids = torch.randint(0, 8192, (batch, seq))
    rot = _hf_rotary(head_dim, base)
    ours_inv = rope_mod.rope_inv_freq(head_dim, base=base)[0]
    # HF rounds the exponent 2i/dim to float32 (exact only when dim is a power of 2) and the power
    # base ** e multiplies that rounding by ln(base): allow 2 + ln(base) float32 ulps
    hf_inv, _ = measured_rope_frequencies(rot, head_dim)  # read back from its cos/sin at position 1
    ulps = (hf_inv - ours_inv).abs() / float32_ulp(ours_inv)
    assert ulps.max() <= 2 + math.log(base)
    cos, sin = rot(q, position_ids)  # (B, T, head_dim), the half-split layout's [c, c]
    q_hf, _ = hf_llama.apply_rotary_pos_emb(q, q, cos, sin)
    h = head_dim // 2
    ours_same_tables = rope_mod.rotate(q, cos[:, None, :, :h], sin[:, None, :, :h], "half")
    assert torch.equal(ours_same_tables, q_hf)
    ref = ref_rope(q, position_ids, base=base)
    ours_err = (apply_rope(q, position_ids, base=base).double() - ref).abs().max()
    hf_err = (q_hf.double() - ref).abs().max()
    assert ours_err <= 1e-5 and ours_err <= hf_err


# ------------------------------------------------------------------ properties
@given(dim=even_dims, m=st.integers(0, 100_000), layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2 ** 16))
def test_rotation_preserves_norms(dim, m, layout, seed):
    x = torch.randn(3, dim, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    out = apply_rope(x, torch.full((3,), m), layout=layout)
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1), atol=1e-12, rtol=0)
    # each pair keeps its own norm too (it is a rotation per pair, not a mix across pairs)
    for a, b in pair_indices(dim, layout):
        torch.testing.assert_close(out[:, a] ** 2 + out[:, b] ** 2, x[:, a] ** 2 + x[:, b] ** 2, atol=1e-12, rtol=0)


@given(dim=even_dims, m=st.integers(0, 50_000), n=st.integers(0, 50_000), shift=st.integers(-50_000, 50_000),
       layout=st.sampled_from(LAYOUTS), seed=st.integers(0, 2 ** 16))
def test_score_depends_only_on_m_minus_n(dim, m, n, shift, layout, seed):
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(dim, generator=g, dtype=torch.float64), torch.randn(dim, generator=g, dtype=torch.float64)
    shift = max(shift, -min(m, n))

    def score(a, b):
        return (apply_rope(q[None], torch.tensor([a]), layout=layout)
                @ apply_rope(k[None], torch.tensor([b]), layout=layout).T).item()

    assert score(m + shift, n + shift) == pytest.approx(score(m, n), abs=1e-9)
    # and it is the complex form Re sum_i q_i conj(k_i) e^{i (m - n) theta_i}
    zq = torch.complex(*(q[[a for a, _ in pair_indices(dim, layout)]], q[[b for _, b in pair_indices(dim, layout)]]))
    zk = torch.complex(*(k[[a for a, _ in pair_indices(dim, layout)]], k[[b for _, b in pair_indices(dim, layout)]]))
    theta = torch.tensor(ref_frequencies(dim, 10000.0), dtype=torch.float64)
    expected = (zq * zk.conj() * torch.polar(torch.ones_like(theta), (m - n) * theta)).sum().real.item()
    assert score(m, n) == pytest.approx(expected, abs=1e-9)


@given(dim=even_dims, seq=st.integers(1, 12), base=st.sampled_from([100.0, 10000.0]), seed=st.integers(0, 2 ** 16))
def test_layouts_agree_up_to_permutation_and_complex_and_matrix_forms(dim, seq, base, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, seq, dim, generator=g, dtype=torch.float64)
    positions = torch.randint(0, 10_000, (seq,), generator=g)
    perm = layout_permutation(dim)  # half dim j holds interleaved dim perm[j]
    inter = apply_rope(x, positions, base=base, layout="interleaved")
    half = apply_rope(x[..., perm], positions, base=base, layout="half")
    torch.testing.assert_close(half, inter[..., perm], atol=1e-12, rtol=0)
    torch.testing.assert_close(rope_complex(x, positions, base=base), inter, atol=1e-12, rtol=0)
    for layout, out in (("interleaved", inter), ("half", apply_rope(x, positions, base=base, layout="half"))):
        for t in range(seq):
            R = rope_matrix(int(positions[t]), dim, base=base, layout=layout)
            torch.testing.assert_close(x[:, t] @ R.T, out[:, t], atol=1e-12, rtol=0)
            torch.testing.assert_close(R @ R.T, torch.eye(dim, dtype=torch.float64), atol=1e-12, rtol=0)


def test_rope_complex_float32_matches_interleaved():
    torch.manual_seed(4)
    x = torch.randn(2, 3, 11, 32)
    positions = torch.randint(0, 70_000, (2, 11))
    torch.testing.assert_close(rope_complex(x, positions), apply_rope(x, positions, layout="interleaved"),
                               atol=1e-5, rtol=0)


def test_rotation_sign_is_counter_clockwise():
    # pair (1, 0) at position 1 with theta_0 = 1 goes to (cos 1, sin 1): counter-clockwise (y2 = x1 sin + x2 cos)
    x = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    for layout in LAYOUTS:
        out = apply_rope(x, torch.tensor([1]), layout=layout)
        torch.testing.assert_close(out[0], torch.tensor([math.cos(1.0), math.sin(1.0)], dtype=torch.float64))



# ------------------------------------------------------------------ the rotation is the eager form, bit for bit
def _eager_reference(x, cos, sin, layout):
    """The eager form x * cos_full + turn(x) * sin_full in float32 (float64 for float64 x), rounded to x's dtype."""
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    xw, c, s = x.to(work), cos.to(work), sin.to(work)
    if layout == "half":
        return eager_rotate_half(xw, torch.cat((c, c), -1), torch.cat((s, s), -1)).to(x.dtype)
    turned = torch.stack((-xw[..., 1::2], xw[..., 0::2]), dim=-1).flatten(-2)
    return (xw * c.repeat_interleave(2, -1) + turned * s.repeat_interleave(2, -1)).to(x.dtype)


def _tables(positions, dim):
    return rope_mod.rope_cos_sin(positions, rope_mod.rope_inv_freq(dim)[0])


# (2, 8, 2000, 128): several CPU blocks and a shorter last one -- large random inputs, where a fused
# multiply-add (e.g. addcmul on a CPU with FMA) would round differently from the eager form
@pytest.mark.parametrize("shape", [(2, 8, 2000, 128), (3, 5, 7, 6), (1, 1, 1, 2), (5, 3000, 64), (9, 40),
                                   (2, 3, 2, 90, 64)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotate_is_bit_identical_to_eager_form(shape, dtype, layout):
    torch.manual_seed(5)
    x = (torch.randn(shape, dtype=torch.float64) * 100).to(dtype)
    cos, sin = rope_mod.rope_cos_sin(torch.randint(0, 100_000, (shape[-2],)), rope_mod.rope_inv_freq(shape[-1])[0],
                                     dtype=torch.float64 if dtype == torch.float64 else torch.float32)
    ref = _eager_reference(x, cos, sin, layout)
    out = rope_mod.rotate(x, cos, sin, layout)
    assert out.dtype == dtype and torch.equal(out, ref)
    if x.dim() > 2:  # non-contiguous input (a transposed view): same answer
        assert torch.equal(rope_mod.rotate(x.transpose(0, -2).contiguous().transpose(0, -2), cos, sin, layout), ref)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotate_rotary_dims_is_the_partial_and_decoupled_forms(layout):
    """rotate(..., rotary_dims=(start, stop)) with the tables of the slice equals apply_rope's partial form
    (the first dims) and apply_decoupled_rope (the last), bit for bit; an odd head dim is fine then."""
    torch.manual_seed(3)
    x, positions = torch.randn(2, 3, 7, 13), torch.randint(0, 5000, (2, 7))
    inv_freq = rope_mod.rope_inv_freq(8)[0]
    cos, sin = (t[:, None] for t in rope_mod.rope_cos_sin(positions, inv_freq))  # (batch, 1, seq, 4)
    assert torch.equal(rope_mod.rotate(x, cos, sin, layout, rotary_dims=(0, 8)),
                       apply_rope(x, positions, layout=layout, inv_freq=inv_freq, partial_rotary_factor=8 / 13))
    assert torch.equal(rope_mod.rotate(x, cos, sin, layout, rotary_dims=(5, 13)),
                       apply_decoupled_rope(x, positions, rope_dim=8, layout=layout))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotate_batched_tables_bit_identical(layout):
    torch.manual_seed(9)
    x = torch.randn(3, 4, 600, 64)
    cos, sin = _tables(torch.randint(0, 50_000, (3, 600)), 64)  # (B, T, h) -> (B, 1, T, h)
    cos, sin = cos[:, None], sin[:, None]
    assert torch.equal(rope_mod.rotate(x, cos, sin, layout), _eager_reference(x, cos, sin, layout))
    x3 = torch.randn(3, 600, 128)  # (B, T, D) with (B, T, D/2) tables: one table per batch row
    cos, sin = _tables(torch.randint(0, 50_000, (3, 600)), 128)
    assert torch.equal(rope_mod.rotate(x3, cos, sin, layout), _eager_reference(x3, cos, sin, layout))
    # apply_rope with batched positions builds exactly these tables
    positions = torch.randint(0, 50_000, (3, 600))
    cos, sin = _tables(positions, 64)
    assert torch.equal(apply_rope(x, positions, layout=layout), _eager_reference(x, cos[:, None], sin[:, None], layout))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_under_autograd_the_result_and_gradients_are_the_eager_forms(layout, dtype):
    """Training runs the eager form itself (the cached course results depend on its exact bits): forward
    and backward of apply_rope and RotaryEmbedding are bit-identical to the eager form's."""
    torch.manual_seed(11)
    x = torch.randn(2, 4, 300, 32).to(dtype)
    weights = torch.randn(2, 4, 300, 32).to(dtype)
    positions = torch.randint(0, 5000, (300,))
    cos, sin = _tables(positions, 32)

    def forward_backward(rotation):
        leaf = x.clone().requires_grad_()
        out = rotation(leaf)
        (out * weights).sum().backward()
        return out.detach(), leaf.grad

    ref_out, ref_grad = forward_backward(lambda t: _eager_reference(t, cos, sin, layout))
    for rotation in (lambda t: apply_rope(t, positions, layout=layout),
                     lambda t: RotaryEmbedding(32, layout=layout)(t, t, positions)[0]):
        out, grad = forward_backward(rotation)
        assert torch.equal(out, ref_out) and torch.equal(grad, ref_grad)
    with torch.no_grad():  # without autograd: the same bits
        assert torch.equal(apply_rope(x.clone().requires_grad_(), positions, layout=layout), ref_out)


def test_cos_sin_tables_match_the_formula():
    positions = torch.cat((torch.arange(3000), torch.tensor([65_536, 1_000_000, 4_000_001])))
    inv = rope_mod.rope_inv_freq(128)[0]
    cos, sin = rope_mod.rope_cos_sin(positions, inv, attention_factor=1.25)  # long positions too
    angles = positions.double()[:, None] * torch.tensor(ref_frequencies(128, 1e4), dtype=torch.float64)
    assert cos.dtype == torch.float32 and cos.shape == (3003, 64)
    torch.testing.assert_close(cos.double(), 1.25 * angles.cos(), atol=2e-7, rtol=0)
    torch.testing.assert_close(sin.double(), 1.25 * angles.sin(), atol=2e-7, rtol=0)
    small_cos, _ = rope_mod.rope_cos_sin(positions[:100], inv, attention_factor=1.25)  # a prefix gives the same rows
    torch.testing.assert_close(small_cos, cos[:100], atol=1.2e-7, rtol=0)
    batched, _ = rope_mod.rope_cos_sin(positions[:3000].view(3, 1000), inv, dtype=torch.float64)
    torch.testing.assert_close(batched, angles[:3000].cos().view(3, 1000, 64), atol=1e-12, rtol=0)
    learnable = inv.clone().requires_grad_(True)  # learnable frequencies: differentiable path
    rope_mod.rope_cos_sin(positions[:600], learnable)[0].sum().backward()
    assert learnable.grad is not None and learnable.grad.abs().sum() > 0


# ------------------------------------------------------------------ precision: half inputs, long positions
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_half_precision_at_long_positions(dtype, layout):
    torch.manual_seed(6)
    x = torch.randn(2, 4, 6, 64).to(dtype)
    x_before = x.clone()
    positions = torch.tensor([65_536, 65_537, 65_538, 100_000, 250_001, 1_000_000])
    out = apply_rope(x, positions, layout=layout)
    assert out.dtype == dtype and torch.equal(x, x_before)
    ref = ref_rope(x, positions, layout=layout)  # x's half-precision values, rotated exactly
    eps = torch.finfo(dtype).eps  # one ulp at 1: 2**-7 (bf16), 2**-10 (fp16)
    torch.testing.assert_close(out.double(), ref, rtol=eps, atol=1e-5)
    # the mistake the library avoids: angles computed in the input's dtype. bf16 cannot tell 65536
    # from 65537, so the naive rotation is far from the reference (this is what the test would catch)
    if dtype == torch.bfloat16:
        pos_lo = positions.to(dtype)
        assert pos_lo[0] == pos_lo[1]
        theta = torch.tensor(ref_frequencies(64, 1e4)).to(dtype)
        naive_angles = pos_lo[:, None] * theta
        naive = eager_rotate_half(x, torch.cat([naive_angles.cos()] * 2, -1), torch.cat([naive_angles.sin()] * 2, -1))
        assert (naive.double() - ref).abs().max() > 0.5


def test_bf16_positions_collide_but_the_library_tells_them_apart():
    """bf16 holds 256 and 257 as the same number; the library's angles (float64) keep them apart."""
    positions = torch.tensor([256, 257])
    assert positions.to(torch.bfloat16).unique().numel() == 1
    x = torch.ones(2, 64, dtype=torch.bfloat16)
    out = apply_rope(x, positions)
    assert not torch.equal(out[0], out[1])
    torch.testing.assert_close(out.double(), ref_rope(x, positions), rtol=2.0 ** -8, atol=1e-5)


@pytest.mark.parametrize("shape", [(2, 3, 5, 8), (2, 3, 1024, 32)])  # one block / several CPU blocks
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_input_never_modified_and_dtype_device_kept(shape, dtype):
    x = torch.randn(shape).to(dtype)
    before = x.clone()
    for layout in LAYOUTS:
        out = apply_rope(x, layout=layout)
        assert out.dtype == dtype and out.device == x.device and out.data_ptr() != x.data_ptr()
    q, k = RotaryEmbedding(shape[-1])(x, x)
    assert rope_complex(x).dtype == q.dtype == k.dtype == dtype
    assert torch.equal(x, before)


# ------------------------------------------------------------------ autograd
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gradients(layout):
    x = torch.randn(2, 3, 4, 8, dtype=torch.float64, requires_grad=True)
    positions = torch.tensor([0, 5, 77, 1000])
    torch.autograd.gradcheck(lambda t: apply_rope(t, positions, layout=layout), (x,))
    # the gradient of a rotation is the inverse rotation: rotating back by -m
    g = torch.randn(2, 3, 4, 8, dtype=torch.float64)
    (apply_rope(x, positions, layout=layout) * g).sum().backward()
    torch.testing.assert_close(x.grad, apply_rope(g, -positions, layout=layout), atol=1e-12, rtol=0)


# ------------------------------------------------------------------ RotaryEmbedding: tables made per call
def test_rotary_tables_are_made_per_call_and_equal_apply_rope():
    """No cos/sin table outlives a call: a long call, a short one, far positions and another dtype each give
    apply_rope's bits (the same float64 angles), whatever ran before; only the frequencies are kept."""
    torch.manual_seed(17)
    rope = RotaryEmbedding(16)
    q = torch.randn(1, 2, 10, 16)
    for positions in (torch.arange(10), torch.arange(5000, 5010), torch.arange(10), 2 ** 40 + torch.arange(10),
                      torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3]])):
        for x in (q, q.double(), q.to(torch.bfloat16)):
            assert torch.equal(rope(x, x, positions)[0], apply_rope(x, positions))
    torch.testing.assert_close(rope(q, q, torch.arange(5000, 5010))[1].double(),
                               ref_rope(q, torch.arange(5000, 5010)), atol=1e-5, rtol=0)
    assert list(rope._inv_freq) == [(q.device, None)]  # one set of frequencies for every call above
    inv_freq, attention_factor = rope._inv_freq[(q.device, None)]
    assert attention_factor == 1.0 and torch.equal(inv_freq, rope_inv_freq(16)[0])


def test_rotary_negative_positions_rotate_the_other_way():
    """A table indexed by position would refuse m < 0; cos/sin made from the positions rotate by m * theta_i, so
    R_{-m} undoes R_m, as for apply_rope."""
    torch.manual_seed(18)
    rope, q = RotaryEmbedding(8), torch.randn(1, 2, 5, 8, dtype=torch.float64)
    positions = torch.tensor([0, 1, -2, 3, -400])
    rotated, _ = rope(q, q, positions)
    torch.testing.assert_close(rotated, ref_rope(q, positions), atol=1e-12, rtol=0)
    torch.testing.assert_close(rope(rotated, rotated, -positions)[0], q, atol=1e-12, rtol=0)


def test_rotary_cached_values_equal_uncached():
    torch.manual_seed(7)
    rope = RotaryEmbedding(32, layout="interleaved", base=500.0)
    q, k = torch.randn(2, 3, 9, 32), torch.randn(2, 3, 9, 32)
    positions = torch.randint(0, 3000, (2, 9))
    q_r, k_r = rope(q, k, positions)
    torch.testing.assert_close(q_r, apply_rope(q, positions, base=500.0, layout="interleaved"), atol=1e-6, rtol=0)
    torch.testing.assert_close(k_r.double(), ref_rope(k, positions, base=500.0, layout="interleaved"),
                               atol=1e-5, rtol=0)


def test_rotate_qk_with_queries_and_keys_at_different_positions():
    torch.manual_seed(15)
    q, k = torch.randn(2, 3, 1, 16), torch.randn(2, 3, 40, 16)  # one new query against 40 cached keys
    q_out, k_out = RotaryEmbedding(16).rotate_qk(q, k, torch.tensor([39]), torch.arange(40))
    torch.testing.assert_close(q_out.double(), ref_rope(q, torch.tensor([39])), atol=1e-5, rtol=0)
    torch.testing.assert_close(k_out.double(), ref_rope(k, torch.arange(40)), atol=1e-5, rtol=0)


def test_errors_leave_no_partial_state():
    rope = RotaryEmbedding(8)
    x = torch.randn(2, 3, 5, 8)
    with pytest.raises(ValueError):
        rope(x, x, torch.arange(6))
    assert not rope._inv_freq


DYNAMIC = {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 64}


@pytest.mark.parametrize("far", [70_000, 2 ** 40])
def test_far_positions_cost_no_more_than_near_ones(far):
    """A position 2**40 needs cos/sin for itself alone: nothing of its size is allocated, and dynamic NTK
    makes its frequencies for L = far + 4."""
    torch.manual_seed(16)
    rope = RotaryEmbedding(16)
    q = torch.randn(1, 2, 4, 16)
    positions = far + torch.arange(4)
    out, _ = rope(q, q, positions)
    assert torch.equal(out, apply_rope(q, positions))
    if far < 2 ** 20:  # float64 angles of 2**40 * theta differ in their last bits between formulas
        torch.testing.assert_close(out.double(), ref_rope(q, positions), atol=1e-5, rtol=0)
    dynamic = RotaryEmbedding(16, scaling=DYNAMIC)
    out, _ = dynamic(q, q, positions)
    inv, _ = rope_mod.rope_inv_freq(16, scaling=dynamic.scaling, seq_len=far + 4)
    assert torch.equal(out, apply_rope(q, positions, inv_freq=inv))
    assert not dynamic._inv_freq  # dynamic NTK's frequencies follow each call's length: none kept


# ------------------------------------------------------------------ dynamic NTK: one table per call, no history
@pytest.mark.parametrize("q_positions,k_positions", [
    (torch.tensor([150, 300]), torch.arange(1000)),         # queries far inside the keys' range
    (torch.tensor([900, 950]), torch.arange(100)),          # queries beyond the keys: L from q
    (torch.tensor([[150, 300], [400, 550]]), torch.arange(1000).repeat(2, 1)),  # batched positions
])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_dynamic_scores_depend_only_on_m_minus_n_within_one_call(q_positions, k_positions, layout):
    """Both queries carry the same vector, all keys another: within one call the score of (m, n) must
    equal the score of (m + s, n + s). Tables built for q's and k's own lengths would break this."""
    torch.manual_seed(17)
    batch = q_positions.shape[0] if q_positions.dim() == 2 else 1
    q = torch.randn(batch, 1, 1, 32, dtype=torch.float64).expand(batch, 1, 2, 32)
    k = torch.randn(batch, 1, 1, 32, dtype=torch.float64).expand(batch, 1, k_positions.shape[-1], 32)
    rope = RotaryEmbedding(32, layout=layout, scaling=DYNAMIC)
    q_out, k_out = rope.rotate_qk(q, k, q_positions, k_positions)
    scores = q_out @ k_out.transpose(-2, -1)  # (batch, 1, 2, Tk)
    qp = q_positions.reshape(batch, 2)
    kp = k_positions.reshape(-1, k_positions.shape[-1])[0]
    for b in range(batch):
        shift = int(qp[b, 1] - qp[b, 0])  # query 1 at m + shift against key n + shift == query 0 at m against key n
        keys = [n for n in range(len(kp)) if 0 <= n + shift < len(kp)]
        torch.testing.assert_close(scores[b, 0, 1, [n + shift for n in keys]], scores[b, 0, 0, keys],
                                   atol=1e-10, rtol=0)
    # and the one table is the one for L = 1 + the largest position among q's and k's
    inv, _ = rope_mod.rope_inv_freq(32, scaling=DYNAMIC, seq_len=int(max(q_positions.max(), k_positions.max())) + 1)
    torch.testing.assert_close(q_out, apply_rope(q, q_positions, inv_freq=inv, layout=layout), atol=1e-12, rtol=0)


def test_dynamic_has_no_history_unlike_hugging_face():
    """posenc_lib: a call's frequencies come from that call alone. HF keeps the longest length seen
    (while the length stays >= L0), as RotaryEmbedding's docstring says."""
    torch.manual_seed(18)
    q = torch.randn(1, 2, 40, 32)
    positions = torch.arange(60, 100)
    fresh, _ = RotaryEmbedding(32, scaling=DYNAMIC)(q, q, positions)
    rope = RotaryEmbedding(32, scaling=DYNAMIC)
    rope(q, q, torch.arange(260, 300))  # a longer call first
    after, _ = rope(q, q, positions)
    assert torch.equal(after, fresh)
    inv_100, _ = rope_mod.rope_inv_freq(32, scaling=DYNAMIC, seq_len=100)
    torch.testing.assert_close(after.double(), ref_rope(q, positions, inv_freq=inv_100), atol=1e-5, rtol=0)
    # Hugging Face, same calls: after length 300, its length-100 call still uses the length-300 frequencies
    hf = _hf_rotary(32, 10000.0, {"rope_type": "dynamic", "factor": 2.0}, max_position_embeddings=64)
    hf(q, torch.arange(260, 300)[None])
    inv_300, _ = rope_mod.rope_inv_freq(32, scaling=DYNAMIC, seq_len=300)
    hf_inv, _ = measured_rope_frequencies(hf, 32, longest=100)  # a call reaching position 99, as `positions` does
    ulps = (hf_inv - inv_300).abs() / float32_ulp(inv_300)
    assert ulps.max() <= 2 + math.log(10000.0)


# ------------------------------------------------------------------ RoFormer's decay bound
def _ref_bound(r: float, dim: int, base: float) -> float:
    """(1/(d/2)) sum_{j=1}^{d/2} |sum_{k<j} e^{i r theta_k}|, theta_k = base^(-2k/d), with Python complex numbers."""
    half = dim // 2
    total, partial = 0.0, 0j
    for k in range(half):
        partial += cmath.exp(1j * r * base ** (-2 * k / dim))
        total += abs(partial)
    return total / half


@pytest.mark.parametrize("dim, base", [(128, 10000.0), (64, 500000.0), (8, 10.0), (2, 10000.0)])
def test_decay_bound_matches_independent_loop(dim, base):
    distances = [0, 1, 2, 7, 50, 333, 1000, 4096]
    got = rope_decay_bound(distances, dim, base)
    assert got.dtype == torch.float64 and got.shape == (len(distances),)
    for r, value in zip(distances, got.tolist()):
        assert value == pytest.approx(_ref_bound(r, dim, base), rel=1e-12, abs=1e-12)


def test_decay_bound_value_at_zero_symmetry_and_decay():
    for dim in (16, 64, 128):
        assert float(rope_decay_bound(0, dim)) == pytest.approx((dim / 2 + 1) / 2, rel=1e-15)
    r = torch.arange(-300, 301)
    bound = rope_decay_bound(r, 128)
    torch.testing.assert_close(bound, bound.flip(0), rtol=0, atol=1e-12)
    assert rope_decay_bound(torch.tensor(0.0), 128).shape == ()
    # the long-term decay (dim 128, base 10000): past distance 100 the bound stays under half its start and
    # averages under a quarter of it; it oscillates, so it is not monotone
    start = float(rope_decay_bound(0, 128))
    far = rope_decay_bound(torch.arange(100, 1001), 128)
    assert far.max() < start / 2 and far.mean() < start / 4


def test_decay_bound_is_an_upper_bound_on_real_scores():
    """|<R_m q, R_n k>| <= max_i |h_{i+1} - h_i| * sum_j |S_j|, h_i = q_i conj(k_i), h_{d/2} = 0 (interleaved pairs)."""
    dim = 32
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):
        q = torch.randn(dim, generator=gen, dtype=torch.float64)
        k = torch.randn(dim, generator=gen, dtype=torch.float64)
        h = torch.view_as_complex(q.view(-1, 2).contiguous()) * torch.view_as_complex(k.view(-1, 2).contiguous()).conj()
        h_next = torch.cat((h[1:], torch.zeros(1, dtype=h.dtype)))
        c = float((h_next - h).abs().max())
        n = torch.zeros(61, dtype=torch.long)
        m = torch.arange(61)
        rq = apply_rope(q.expand(61, -1), m, layout="interleaved")
        rk = apply_rope(k.expand(61, -1), n, layout="interleaved")
        scores = (rq * rk).sum(-1)
        bound = c * (dim / 2) * rope_decay_bound(m - n, dim)
        assert bool((scores.abs() <= bound + 1e-9).all())


# ------------------------------------------------------------------ every entry point on cpu, meta and cuda
def _x(device, dtype=torch.float32, shape=(2, 3, 5, 8)):
    return torch.ones(shape, device=device, dtype=dtype) * 0.5


def _inv(device, dim=8):
    return rope_inv_freq(dim, device=device)[0]


SCALINGS = [
    {"rope_type": "linear", "factor": 2.0},
    {"rope_type": "ntk", "factor": 4.0},
    {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 4},
    {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4},
    {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 4, "low_freq_factor": 1.0,
     "high_freq_factor": 4.0},
    {"rope_type": "longrope", "factor": 8.0, "original_max_position_embeddings": 4,
     "short_factor": [1.0, 1.2, 1.5, 2.0], "long_factor": [1.0, 2.0, 4.0, 8.0]},
]
# name -> f(device, dtype) -> a tensor or a tuple of tensors, each expected on `device` in `dtype`
ON_DEVICE = {
    "rotate_half": lambda d, t: rotate_half(_x(d, t)),
    "rotate_every_two": lambda d, t: rope_mod.rotate_every_two(_x(d, t)),
    "apply_rope_half": lambda d, t: apply_rope(_x(d, t)),
    "apply_rope_interleaved": lambda d, t: apply_rope(_x(d, t), torch.arange(5, device=d), layout="interleaved"),
    "apply_rope_batched": lambda d, t: apply_rope(_x(d, t), torch.arange(10, device=d).view(2, 5)),
    "apply_rope_inv_freq": lambda d, t: apply_rope(_x(d, t), inv_freq=_inv(d), attention_factor=1.5),
    "apply_rope_far": lambda d, t: apply_rope(_x(d, t), 2 ** 40 + torch.arange(5, device=d)),
    "apply_rope_partial": lambda d, t: apply_rope(_x(d, t, (2, 3, 5, 12)), partial_rotary_factor=0.5),
    "apply_rope_partial_odd_head": lambda d, t: apply_rope(_x(d, t, (2, 5, 9)), torch.arange(5, device=d),
                                                           layout="interleaved", partial_rotary_factor=0.5),
    "apply_decoupled_rope": lambda d, t: apply_decoupled_rope(_x(d, t, (2, 3, 5, 12)), rope_dim=4),
    "apply_decoupled_rope_batched": lambda d, t: apply_decoupled_rope(
        _x(d, t, (2, 1, 5, 12)), torch.arange(10, device=d).view(2, 5), rope_dim=8, inv_freq=_inv(d),
        attention_factor=1.2, layout="half"),
    "RotaryEmbedding_partial": lambda d, t: RotaryEmbedding(12, partial_rotary_factor=0.5)(
        _x(d, t, (2, 3, 5, 12)), _x(d, t, (2, 3, 5, 12))),
    "rope_complex": lambda d, t: rope_complex(_x(d, t)),
    "rope_complex_batched": lambda d, t: rope_complex(_x(d, t), torch.arange(10, device=d).view(2, 5)),
    "rope_cos_sin": lambda d, t: rope_cos_sin(torch.arange(5, device=d), _inv(d), dtype=t),
    "rope_cos_sin_batched": lambda d, t: rope_cos_sin(torch.arange(3000, device=d).view(2, 1500), _inv(d, 64), dtype=t),
    "rotate_large": lambda d, t: rope_mod.rotate(_x(d, t, (2, 3, 1500, 64)), torch.ones(1500, 32, device=d),
                                                 torch.zeros(1500, 32, device=d)),  # several blocks on the CPU
    "rope_matrix": lambda d, t: rope_matrix(3, 8, device=d, dtype=t),
    "RotaryEmbedding": lambda d, t: RotaryEmbedding(8)(_x(d, t), _x(d, t)),
    "RotaryEmbedding_batched": lambda d, t: RotaryEmbedding(8, layout="interleaved")(
        _x(d, t), _x(d, t), torch.arange(10, device=d).view(2, 5)),
    "RotaryEmbedding_rotate_qk": lambda d, t: RotaryEmbedding(8).rotate_qk(
        _x(d, t, (2, 3, 1, 8)), _x(d, t), torch.tensor([7], device=d), torch.arange(5, device=d)),
    "RotaryEmbedding_far": lambda d, t: RotaryEmbedding(8)(_x(d, t), _x(d, t), 2 ** 40 + torch.arange(5, device=d)),
    "apply_rope_to_dims": lambda d, t: rope_mod.apply_rope_to_dims(_x(d, t, (2, 3, 5, 12)), inv_freq=_inv(d), start=2),
    **{f"RotaryEmbedding_{s['rope_type']}": (lambda scaling: lambda d, t: RotaryEmbedding(8, scaling=scaling)(
        _x(d, t), _x(d, t), torch.arange(20, 25, device=d)))(s) for s in SCALINGS},
}
# documented float64 (float32 on devices without it) whatever the input dtype
DTYPE_FREE = {"rope_decay_bound": lambda d, t: rope_decay_bound(torch.arange(5, device=d, dtype=t), 8)}


def _tensors(result):
    return [result] if isinstance(result, torch.Tensor) else [r for r in result if isinstance(r, torch.Tensor)]


@pytest.mark.parametrize("name", sorted(ON_DEVICE) + sorted(DTYPE_FREE))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16, torch.float16])
def test_outputs_stay_on_the_callers_device_and_dtype(name, dtype, device):
    """meta has shapes but no data: a tensor made on the CPU behind the caller's back would show up here."""
    outputs = _tensors({**ON_DEVICE, **DTYPE_FREE}[name](device, dtype))
    assert outputs
    for out in outputs:
        assert out.device.type == device.type, f"{name} returned a tensor on {out.device}"
        if name in ON_DEVICE:
            assert out.dtype == dtype, f"{name} returned {out.dtype}"


EMPTY = {  # T = 0: an empty result of the right shape
    "apply_rope": (lambda d: apply_rope(torch.randn(2, 3, 0, 8, device=d)), (2, 3, 0, 8)),
    "apply_rope_positions": (lambda d: apply_rope(torch.randn(2, 0, 8, device=d), torch.zeros(2, 0, dtype=torch.long,
                                                                                              device=d)), (2, 0, 8)),
    "rotate": (lambda d: rope_mod.rotate(torch.randn(4, 0, 8, device=d), torch.ones(0, 4, device=d),
                                         torch.ones(0, 4, device=d), "interleaved"), (4, 0, 8)),
    "rope_complex": (lambda d: rope_complex(torch.randn(2, 3, 0, 8, device=d)), (2, 3, 0, 8)),
    "rope_cos_sin": (lambda d: rope_cos_sin(torch.zeros(0, dtype=torch.long, device=d), _inv(d))[0], (0, 4)),
    "RotaryEmbedding": (lambda d: RotaryEmbedding(8)(torch.randn(2, 3, 0, 8, device=d),
                                                     torch.randn(2, 3, 0, 8, device=d))[1], (2, 3, 0, 8)),
    "RotaryEmbedding_dynamic": (lambda d: RotaryEmbedding(8, scaling=SCALINGS[2]).rotate_qk(
        torch.randn(1, 1, 0, 8, device=d), torch.randn(1, 1, 6, 8, device=d))[0], (1, 1, 0, 8)),
    "rope_decay_bound": (lambda d: rope_decay_bound(torch.zeros(0, device=d), 8), (0,)),
    "apply_rope_partial": (lambda d: apply_rope(torch.randn(2, 0, 12, device=d), partial_rotary_factor=0.5),
                           (2, 0, 12)),
    "apply_decoupled_rope": (lambda d: apply_decoupled_rope(torch.randn(1, 2, 0, 12, device=d), rope_dim=4),
                             (1, 2, 0, 12)),
}


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_empty_inputs_give_empty_results(name, device):
    call, shape = EMPTY[name]
    out = call(device)
    assert tuple(out.shape) == shape and out.device.type == device.type


# ------------------------------------------------------------------ bad input: a clear error naming the parameter
X = torch.randn(2, 3, 5, 8)
X3 = torch.randn(2, 5, 8)
LONG = torch.long
INV = rope_inv_freq(8)[0]
COS = torch.ones(5, 4)

BAD = [
    # x itself: type, dtype, rank, odd head_dim
    ("apply_rope x list", lambda: apply_rope([[1.0, 2.0]]), TypeError, r"x must be a torch.Tensor, got list"),
    ("apply_rope int x", lambda: apply_rope(torch.ones(2, 5, 8, dtype=LONG)), TypeError,
     r"x must be a floating-point tensor.*int64"),
    ("apply_rope x 1-D", lambda: apply_rope(torch.randn(8)), ValueError, r"x must have shape \(\.\.\., seq, dim\)"),
    ("apply_rope odd head_dim", lambda: apply_rope(torch.randn(2, 5, 7)), ValueError, r"head_dim.*even.*7"),
    ("rope_complex odd", lambda: rope_complex(torch.randn(5, 3)), ValueError, r"head_dim.*even"),
    ("rope_complex int x", lambda: rope_complex(torch.ones(5, 8, dtype=torch.int32)), TypeError,
     r"x must be a floating-point tensor"),
    ("rotate int x", lambda: rope_mod.rotate(torch.ones(5, 8, dtype=LONG), COS, COS), TypeError,
     r"x must be a floating-point tensor"),
    ("rotate_half odd", lambda: rotate_half(torch.randn(3, 5)), ValueError, r"x's last dimension must be even"),
    ("rotate_every_two list", lambda: rope_mod.rotate_every_two([1.0, 2.0]), TypeError, r"x must be a torch.Tensor"),
    ("Rotary int q", lambda: RotaryEmbedding(8)(torch.ones(1, 5, 8, dtype=LONG), X3), TypeError,
     r"q must be a floating-point tensor"),
    ("Rotary k 1-D", lambda: RotaryEmbedding(8)(X3, torch.randn(8)), ValueError, r"k must have shape"),
    ("Rotary q dim", lambda: RotaryEmbedding(16)(X, X), ValueError, r"q's last dimension must be dim=16"),
    ("Rotary k dim", lambda: RotaryEmbedding(8)(X, torch.randn(2, 3, 5, 16)), ValueError,
     r"k's last dimension must be dim=8"),
    # module and function settings
    ("RotaryEmbedding odd", lambda: RotaryEmbedding(9), ValueError, r"dim must be even"),
    ("rope_matrix odd", lambda: rope_matrix(0, 7), ValueError, r"dim must be even"),
    ("decay odd dim", lambda: rope_decay_bound(3, 7), ValueError, r"dim must be even"),
    ("apply_rope layout", lambda: apply_rope(X, layout="neox"), ValueError,
     r"layout must be one of \['half', 'interleaved'\], got 'neox'"),
    ("rotate layout", lambda: rope_mod.rotate(X, COS, COS, layout="neox"), ValueError, r"layout must be one of"),
    ("RotaryEmbedding layout", lambda: RotaryEmbedding(8, layout="concat"), ValueError,
     r"layout must be one of \['half', 'interleaved'\]"),
    ("rope_matrix layout", lambda: rope_matrix(1, 8, layout="x"), ValueError, r"layout must be one of"),
    ("rope_matrix float position", lambda: rope_matrix(1.5, 8), TypeError, r"position must be an int"),
    ("rope_matrix int dtype", lambda: rope_matrix(1, 8, dtype=torch.int64), TypeError,
     r"dtype must be a floating-point dtype"),
    ("rope_cos_sin int dtype", lambda: rope_cos_sin(torch.arange(3), INV, dtype=torch.int32), TypeError,
     r"dtype must be a floating-point dtype"),
    ("rope_cos_sin bool dtype", lambda: rope_cos_sin(torch.arange(3), INV, dtype=torch.bool), TypeError,
     r"dtype must be a floating-point"),
    # base, attention_factor: numbers, finite, in range
    *[(f"{name} base {bad!r}", call, error, pattern)
      for bad, error, pattern in [(float("nan"), ValueError, r"base must be a finite number"),
                                  (float("inf"), ValueError, r"base must be a finite number"),
                                  ("10000", TypeError, r"base must be a number, got str"),
                                  (-10.0, ValueError, r"base must be > 1.0")]
      for name, call in [("apply_rope", lambda b=bad: apply_rope(X, base=b)),
                         ("rope_complex", lambda b=bad: rope_complex(X, base=b)),
                         ("RotaryEmbedding", lambda b=bad: RotaryEmbedding(8, base=b)),
                         ("rope_matrix", lambda b=bad: rope_matrix(1, 8, base=b)),
                         ("rope_decay_bound", lambda b=bad: rope_decay_bound(3, 8, base=b))]],
    *[(f"{name} attention_factor {bad!r}", call, error, r"attention_factor must be")
      for bad, error in [(float("nan"), ValueError), (float("inf"), ValueError), (0.0, ValueError), ("2", TypeError)]
      for name, call in [("apply_rope", lambda a=bad: apply_rope(X, attention_factor=a)),
                         ("rope_cos_sin", lambda a=bad: rope_cos_sin(torch.arange(3), INV, attention_factor=a))]],
    # inv_freq: a finite (dim/2,) floating tensor
    *[(f"{name} inv_freq {label}", call, error, pattern)
      for label, bad, error, pattern in [
          ("shape", torch.ones(3), ValueError, r"inv_freq must be a tensor of shape \(rotary_dim/2,\)"),
          ("2-D", torch.ones(1, 4), ValueError, r"inv_freq must be a tensor of shape"),
          ("int", torch.ones(4, dtype=LONG), TypeError, r"inv_freq must be a floating-point tensor"),
          ("nan", torch.tensor([1.0, float("nan"), 0.1, 0.01]), ValueError, r"inv_freq must hold finite numbers"),
          ("inf", torch.tensor([float("inf"), 1.0, 0.1, 0.01]), ValueError, r"inv_freq must hold finite numbers"),
          ("list", [1.0, 0.1, 0.01, 0.001], TypeError, r"inv_freq must be a torch.Tensor")]
      for name, call in [("apply_rope", lambda v=bad: apply_rope(X, inv_freq=v)),
                         ("rope_cos_sin", lambda v=bad: rope_cos_sin(torch.arange(3), v)),
                         ("apply_rope_to_dims", lambda v=bad: rope_mod.apply_rope_to_dims(X, inv_freq=v))]
      if not (label == "shape" and name != "apply_rope")],
    ("apply_rope inv_freq shape names dim/2", lambda: apply_rope(X, inv_freq=torch.ones(3)), ValueError,
     r"inv_freq must be a tensor of shape \(rotary_dim/2,\) = \(4,\)"),
    # cos/sin tables for rotate
    ("rotate cos too long", lambda: rope_mod.rotate(X, torch.ones(6, 4), COS), ValueError,
     r"cos of shape \(6, 4\) must broadcast to x's"),
    ("rotate sin extra dims", lambda: rope_mod.rotate(X3, COS, torch.ones(1, 1, 5, 4)), ValueError,
     r"sin of shape \(1, 1, 5, 4\) must broadcast"),
    ("rotate rotary_dims past the head", lambda: rope_mod.rotate(X, COS, COS, rotary_dims=(2, 10)), ValueError,
     r"rotary_dims must be \(start, stop\) with 0 <= start < stop <= 8"),
    ("rotate tables wider than rotary_dims", lambda: rope_mod.rotate(X, COS, COS, rotary_dims=(0, 4)), ValueError,
     r"cos of shape \(5, 4\) must broadcast to x's \(\.\.\., seq, rotary_dim/2\) = \(2, 3, 5, 2\)"),
    ("rotate int cos", lambda: rope_mod.rotate(X, torch.ones(5, 4, dtype=LONG), COS), TypeError,
     r"cos must be a floating-point tensor"),
    # positions: kind, shape, batch
    *[(f"{name} positions {label}", call, error, pattern)
      for label, bad, error, pattern in [
          ("float", torch.arange(5.0), TypeError, r"positions must be an integer tensor"),
          ("bool", torch.ones(5, dtype=torch.bool), TypeError, r"positions must be an integer tensor"),
          ("list", [0, 1, 2, 3, 4], TypeError, r"positions must be a torch.Tensor, got list"),
          ("too long", torch.arange(6), ValueError, r"positions must have shape \(seq,\) or \(batch, seq\) with seq=5"),
          ("3-D", torch.zeros(2, 1, 5, dtype=LONG), ValueError, r"positions must have shape"),
          ("batch 3 for x's 2", torch.zeros(3, 5, dtype=LONG), ValueError,
           r"positions of shape \(3, 5\) does not fit: expected batch 1 or 2")]
      for name, call in [("apply_rope", lambda p=bad: apply_rope(X, p)),
                         ("rope_complex", lambda p=bad: rope_complex(X, p)),
                         ("RotaryEmbedding", lambda p=bad: RotaryEmbedding(8)(X, X, p)),
                         ("rotate_qk", lambda p=bad: RotaryEmbedding(8).rotate_qk(X, X, None, p))]],
    ("apply_rope batched positions for a 2-D x", lambda: apply_rope(torch.randn(5, 8), torch.zeros(2, 5, dtype=LONG)),
     ValueError, r"does not fit: expected no batch dimension"),
    ("rope_cos_sin float positions", lambda: rope_cos_sin(torch.arange(3.0), INV), TypeError,
     r"positions must be an integer tensor"),
    ("rope_cos_sin list positions", lambda: rope_cos_sin([0, 1], INV), TypeError,
     r"positions must be a torch.Tensor"),
    ("apply_rope_to_dims start past the head", lambda: rope_mod.apply_rope_to_dims(X, inv_freq=INV[:2], start=6),
     ValueError, r"start=6 \+ rotary_dim=4 \(2 \* len\(inv_freq\)\) must be <= x's last dimension \(head_dim 8\)"),
    ("apply_rope_to_dims negative start", lambda: rope_mod.apply_rope_to_dims(X, inv_freq=INV[:2], start=-2),
     ValueError, r"start must be"),
    # distances for the decay bound
    ("decay distance string", lambda: rope_decay_bound("far", 8), TypeError, r"distance must be a number"),
    ("decay distance complex", lambda: rope_decay_bound(torch.tensor([1j]), 8), TypeError, r"distance must hold real"),
    ("decay distance bool", lambda: rope_decay_bound(torch.tensor([True]), 8), TypeError, r"distance must hold real"),
    ("decay distance nan", lambda: rope_decay_bound([1.0, float("nan")], 8), ValueError,
     r"distance must hold finite numbers"),
    # partial rotary
    ("apply_rope partial string", lambda: apply_rope(X, partial_rotary_factor="0.5"), TypeError,
     r"partial_rotary_factor must be a number"),
    ("apply_rope partial bool", lambda: apply_rope(X, partial_rotary_factor=True), TypeError,
     r"partial_rotary_factor must be a number, got bool"),
    ("apply_rope partial > 1", lambda: apply_rope(X, partial_rotary_factor=2.0), ValueError,
     r"partial_rotary_factor must be in \(0, 1\]"),
    ("apply_rope partial odd rotary dim", lambda: apply_rope(torch.randn(2, 5, 10), partial_rotary_factor=0.3),
     ValueError, r"partial_rotary_factor=0.3 of head_dim=10 gives rotary_dim=3"),
    ("apply_rope partial inv_freq of the whole head", lambda: apply_rope(X, inv_freq=INV, partial_rotary_factor=0.5),
     ValueError, r"inv_freq must be a tensor of shape \(rotary_dim/2,\) = \(2,\)"),
    ("RotaryEmbedding partial bool", lambda: RotaryEmbedding(8, partial_rotary_factor=True), TypeError,
     r"partial_rotary_factor must be a number"),
    ("RotaryEmbedding partial disagrees", lambda: RotaryEmbedding(
        8, scaling={"rope_type": "default", "partial_rotary_factor": 0.5}, partial_rotary_factor=1.0), ValueError,
     r"disagree"),
    ("RotaryEmbedding partial q dim", lambda: RotaryEmbedding(12, partial_rotary_factor=0.5)(X, X), ValueError,
     r"q's last dimension must be dim=12"),
    # decoupled
    ("decoupled rope_dim odd", lambda: apply_decoupled_rope(X, rope_dim=3), ValueError, r"rope_dim must be even"),
    ("decoupled rope_dim bool", lambda: apply_decoupled_rope(X, rope_dim=True), TypeError, r"rope_dim must be an int"),
    ("decoupled rope_dim missing", lambda: apply_decoupled_rope(X), TypeError, r"rope_dim"),
    ("decoupled rope_dim > head_dim", lambda: apply_decoupled_rope(X, rope_dim=10), ValueError,
     r"rope_dim=10 must be <= x's last dimension \(head_dim 8\)"),
    ("decoupled inv_freq length", lambda: apply_decoupled_rope(X, rope_dim=4, inv_freq=INV), ValueError,
     r"inv_freq must be a tensor of shape \(rotary_dim/2,\) = \(2,\)"),
    ("decoupled layout", lambda: apply_decoupled_rope(X, rope_dim=4, layout="concat"), ValueError,
     r"layout must be one of"),
    ("decoupled attention_factor", lambda: apply_decoupled_rope(X, rope_dim=4, attention_factor=0.0), ValueError,
     r"attention_factor must be > 0"),
    ("decoupled int x", lambda: apply_decoupled_rope(torch.ones(2, 5, 8, dtype=LONG), rope_dim=4), TypeError,
     r"x must be a floating-point tensor"),
    # p-RoPE's fraction, and the size of the fixed table
    ("RotaryEmbedding p-RoPE fraction as the keyword", lambda: RotaryEmbedding(
        8, scaling={"rope_type": "proportional"}, partial_rotary_factor=0.5), ValueError,
     r"partial_rotary_factor for rope_type='proportional' goes in the scaling dict"),
    ("RotaryEmbedding p-RoPE fraction over 1", lambda: RotaryEmbedding(
        8, scaling={"rope_type": "proportional", "partial_rotary_factor": 1.5}), ValueError,
     r"scaling\['partial_rotary_factor'\] must be in \(0, 1\]"),
    ("RotaryEmbedding p-RoPE odd dim", lambda: RotaryEmbedding(
        9, scaling={"rope_type": "proportional", "partial_rotary_factor": 0.5}), ValueError, r"dim must be even"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_named(call, exc, pattern):
    with pytest.raises(exc, match=pattern):  # the message names the parameter and what was expected
        call()


@pytest.mark.parametrize("fraction", [0.25, 0.5, 1.0])
def test_p_rope_through_rotary_embedding_is_transformers(fraction):
    """RotaryEmbedding with rope_type 'proportional' (Gemma 4's p-RoPE) turns the whole head with transformers'
    own p-RoPE frequencies (ROPE_INIT_FUNCTIONS) as its apply_rotary_pos_emb does; the stopped pairs come back
    unchanged, bit for bit."""
    transformers = pytest.importorskip("transformers")
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
    dim, scaling = 16, {"rope_type": "proportional", "partial_rotary_factor": fraction, "rope_theta": 100.0}
    config = transformers.LlamaConfig(hidden_size=4 * dim, num_attention_heads=4, head_dim=dim,
                                      rope_parameters=dict(scaling))
    inv_freq, _ = ROPE_INIT_FUNCTIONS["proportional"](config, "cpu")
    gen = torch.Generator().manual_seed(3)
    q, k = (torch.randn(2, 4, 7, dim, generator=gen, dtype=torch.float64) for _ in range(2))
    angles = torch.arange(7, dtype=torch.float64)[:, None] * inv_freq.double()[None]
    emb = torch.cat((angles, angles), dim=-1)
    want_q, want_k = apply_rotary_pos_emb(q, k, emb.cos()[None], emb.sin()[None])  # cos, sin (batch, seq, dim)
    got_q, got_k = RotaryEmbedding(dim, scaling=scaling)(q, k)
    torch.testing.assert_close(got_q, want_q, rtol=0, atol=1e-5)  # their frequencies are float32
    torch.testing.assert_close(got_k, want_k, rtol=0, atol=1e-5)
    turning, half = int(fraction * dim // 2), dim // 2
    stopped = [*range(turning, half), *range(half + turning, dim)]
    assert torch.equal(got_q[..., stopped], q[..., stopped]) and len(stopped) == dim - 2 * turning


@pytest.mark.parametrize("q_dtype,k_dtype", [(torch.float64, torch.float32), (torch.float32, torch.float64),
                                             (torch.bfloat16, torch.float64), (torch.float64, torch.float16),
                                             (torch.float16, torch.bfloat16)])
@pytest.mark.parametrize("settings", [{}, {"partial_rotary_factor": 0.5},
                                      {"scaling": {"rope_type": "proportional", "partial_rotary_factor": 0.5}},
                                      {"scaling": {"rope_type": "yarn", "factor": 4.0,
                                                   "original_max_position_embeddings": 4}}],
                         ids=["plain", "partial", "p-RoPE", "yarn"])
def test_q_and_k_each_come_back_in_their_own_dtype(q_dtype, k_dtype, settings):
    """Each is turned in its own compute dtype (float64 for float64, float32 otherwise) from one table made in the
    finer of the two, so each equals what the same module gives it next to a partner of its own dtype."""
    rope = RotaryEmbedding(8, **settings)
    gen = torch.Generator().manual_seed(4)
    q, k = (torch.randn(1, 2, 5, 8, generator=gen, dtype=torch.float64).to(d) for d in (q_dtype, k_dtype))
    got_q, got_k = rope(q, k)
    assert (got_q.dtype, got_k.dtype) == (q_dtype, k_dtype)
    torch.testing.assert_close(got_q, rope(q, q)[0], rtol=0, atol=0)
    torch.testing.assert_close(got_k, rope(k, k)[1], rtol=0, atol=0)


def _other(device):
    """A device other than `device`, to mix with it (meta has no data, so nothing is ever computed there)."""
    return torch.device("meta") if device.type == "cpu" else torch.device("cpu")


MIXED = {  # name -> (f(device, other) that mixes the two, the message naming both)
    "apply_rope positions": (lambda d, o: apply_rope(_x(d), torch.arange(5, device=o)),
                             r"positions must be on the device of the tensor it indexes"),
    "apply_rope inv_freq": (lambda d, o: apply_rope(_x(d), inv_freq=_inv(o)), r"inv_freq must be on x's device"),
    "rope_complex positions": (lambda d, o: rope_complex(_x(d), torch.arange(5, device=o)),
                               r"positions must be on the device"),
    "rotate cos": (lambda d, o: rope_mod.rotate(_x(d), torch.ones(5, 4, device=o), torch.ones(5, 4, device=d)),
                   r"cos must be on x's device"),
    "rotate sin": (lambda d, o: rope_mod.rotate(_x(d), torch.ones(5, 4, device=d), torch.ones(5, 4, device=o)),
                   r"sin must be on x's device"),
    "rope_cos_sin inv_freq": (lambda d, o: rope_cos_sin(torch.arange(5, device=d), _inv(o)),
                              r"inv_freq must be on positions' device"),
    "apply_rope_to_dims inv_freq": (lambda d, o: rope_mod.apply_rope_to_dims(_x(d), inv_freq=_inv(o)),
                                    r"inv_freq must be on x's device"),
    "RotaryEmbedding k": (lambda d, o: RotaryEmbedding(8)(_x(d), _x(o)), r"k must be on q's device"),
    "RotaryEmbedding positions": (lambda d, o: RotaryEmbedding(8)(_x(d), _x(d), torch.arange(5, device=o)),
                                  r"q_positions must be on the device"),
    "rotate_qk k_positions": (lambda d, o: RotaryEmbedding(8).rotate_qk(_x(d), _x(d), None, torch.arange(5, device=o)),
                              r"k_positions must be on the device"),
    "apply_decoupled_rope positions": (lambda d, o: apply_decoupled_rope(_x(d), torch.arange(5, device=o), rope_dim=4),
                                       r"positions must be on the device"),
    "apply_decoupled_rope inv_freq": (lambda d, o: apply_decoupled_rope(_x(d), rope_dim=4, inv_freq=_inv(o, 4)),
                                      r"inv_freq must be on x's device"),
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_tensors_on_different_devices_are_named(name, device):
    """Never moved silently (a CPU arange next to a CUDA x is a mistake the caller should see)."""
    call, pattern = MIXED[name]
    other = _other(device)
    with pytest.raises(ValueError, match=pattern) as info:
        call(device, other)
    assert device.type in str(info.value) and other.type in str(info.value)


# ------------------------------------------------ small integer dtypes and the 2**53 limit (an independent probe)
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.int32])
def test_small_integer_positions_rotate_like_int64(dtype):
    """uint8 positions are positions, not a boolean mask, in every entry point."""
    x = torch.randn(1, 2, 6, 8, generator=torch.Generator().manual_seed(0))
    pos = torch.tensor([7, 1, 0, 200, 3, 3])
    expected = ref_rope(x, pos).to(torch.float32)
    torch.testing.assert_close(apply_rope(x, pos.to(dtype)), expected, atol=1e-5, rtol=0)
    q, k = RotaryEmbedding(8)(x, x, pos.to(dtype))
    torch.testing.assert_close(q, expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(k, expected, atol=1e-5, rtol=0)
    cos, _ = rope_cos_sin(pos.to(dtype), torch.ones(4, dtype=torch.float64))
    torch.testing.assert_close(cos, torch.cos(pos.double())[:, None].expand(6, 4).float())


@pytest.mark.parametrize("call", [
    lambda p: apply_rope(torch.ones(1, 2), p),
    lambda p: RotaryEmbedding(2)(torch.ones(1, 1, 1, 2), torch.ones(1, 1, 1, 2), p),
    lambda p: rope_complex(torch.ones(1, 2), p),
    lambda p: rope_cos_sin(p, torch.ones(1, dtype=torch.float64)),
], ids=["apply_rope", "RotaryEmbedding", "rope_complex", "rope_cos_sin"])
def test_positions_past_2_to_53_are_refused(call):
    """float64 holds every integer to 2**53: sin(m theta) of a larger m would be that of another m."""
    with pytest.raises(ValueError, match=r"positions must lie within \+-2\*\*53"):
        call(torch.tensor([2 ** 63 - 1]))
    call(torch.tensor([2 ** 53]))  # the limit itself is fine


def test_rope_matrix_refuses_positions_past_2_to_53():
    with pytest.raises(ValueError, match=r"position must lie within \+-2\*\*53"):
        rope_matrix(2 ** 53 + 1, 2)


def test_dynamic_named_by_hf_legacy_key_type_is_dynamic():
    """{"type": "dynamic"} (HF's legacy key) must make RotaryEmbedding length-dependent like "rope_type"."""
    x = torch.randn(1, 1, 40, 8, generator=torch.Generator().manual_seed(0))
    settings = {"factor": 2.0, "original_max_position_embeddings": 8}
    legacy = RotaryEmbedding(8, scaling={"type": "dynamic", **settings})
    current = RotaryEmbedding(8, scaling={"rope_type": "dynamic", **settings})
    plain = RotaryEmbedding(8)
    assert legacy.rope_type == current.rope_type == "dynamic"
    torch.testing.assert_close(legacy(x, x)[0], current(x, x)[0], rtol=0, atol=0)
    assert not torch.allclose(legacy(x, x)[0], plain(x, x)[0])


# ------------------------------------------------------------------ partial rotary, against GPT-NeoX, Phi and GPT-J
def _neox_cos_sin(rotated, positions, base=10000.0):
    from transformers import GPTNeoXConfig
    from transformers.models.gpt_neox import modeling_gpt_neox as hf_neox
    head = 4 * rotated  # any head; only the rotary part is in the table
    config = GPTNeoXConfig(hidden_size=2 * head, num_attention_heads=2, rotary_pct=rotated / head,
                           rotary_emb_base=base, max_position_embeddings=4096)
    return hf_neox, hf_neox.GPTNeoXRotaryEmbedding(config)(torch.zeros(1), positions)


@pytest.mark.parametrize("head_dim,pct", [(96, 0.25), (64, 0.25), (80, 0.4), (32, 0.5)])
def test_partial_rotary_matches_hf_gpt_neox_and_phi(head_dim, pct):
    """GPT-NeoX's apply_rotary_pos_emb turns q[..., :rotary_dim] (rotate_half within it) and concatenates the rest;
    Phi's attention splits first and calls the plain function: both are apply_rope(partial_rotary_factor=pct)."""
    from transformers import PhiConfig
    from transformers.models.phi import modeling_phi as hf_phi
    torch.manual_seed(head_dim)
    rotated = int(head_dim * pct)
    q, k = torch.randn(2, 3, 20, head_dim), torch.randn(2, 3, 20, head_dim)
    position_ids = torch.stack([torch.arange(20), torch.randperm(20) + 30])
    hf_neox, (cos, sin) = _neox_cos_sin(rotated, position_ids)
    q_neox, k_neox = hf_neox.apply_rotary_pos_emb(q, k, cos, sin)
    phi = PhiConfig(hidden_size=4 * head_dim, num_attention_heads=4, partial_rotary_factor=pct)
    cos_phi, sin_phi = hf_phi.PhiRotaryEmbedding(phi)(q, position_ids)
    q_phi, _ = hf_phi.apply_rotary_pos_emb(q[..., :rotated], k[..., :rotated], cos_phi, sin_phi)
    q_phi = torch.cat((q_phi, q[..., rotated:]), -1)
    ours = apply_rope(q, position_ids, partial_rotary_factor=pct)
    torch.testing.assert_close(ours, q_neox, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours, q_phi, atol=1e-5, rtol=0)
    assert torch.equal(ours[..., rotated:], q[..., rotated:])  # the rest is copied bit for bit
    rotary = RotaryEmbedding(head_dim, partial_rotary_factor=pct)
    q_mod, k_mod = rotary(q, k, position_ids)
    assert rotary.rotary_dim == rotated and torch.equal(q_mod, ours)
    torch.testing.assert_close(k_mod, k_neox, atol=1e-5, rtol=0)
    # = the full-head form on the rotated part alone, with the exponent over rotary_dim
    torch.testing.assert_close(ours[..., :rotated], apply_rope(q[..., :rotated], position_ids), atol=0, rtol=0)


def test_partial_rotary_interleaved_matches_hf_gpt_j():
    """GPT-J-6B: rotary_dim 64 of head 256, pairs (2i, 2i+1) of the first 64 dims (rotate_every_two)."""
    from transformers.models.gptj import modeling_gptj as hf_gptj
    torch.manual_seed(1)
    head_dim, rotated, seq = 256, 64, 30
    q = torch.randn(2, seq, 4, head_dim)  # GPT-J's (batch, seq, heads, head_dim)
    position_ids = torch.stack([torch.arange(seq), torch.randperm(seq) + 10])  # < 48: HF's float32 angles exact enough
    table = hf_gptj.create_sinusoidal_positions(48, rotated)[position_ids]  # (batch, seq, rotated): [sin | cos]
    sin, cos = table.split(rotated // 2, dim=-1)
    q_hf = torch.cat((hf_gptj.apply_rotary_pos_emb(q[..., :rotated], sin, cos), q[..., rotated:]), -1)
    ours = apply_rope(q.transpose(1, 2), position_ids, layout="interleaved", partial_rotary_factor=0.25)
    torch.testing.assert_close(ours.transpose(1, 2), q_hf, atol=1e-5, rtol=0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_partial_rotary_is_the_formula_and_scores_depend_on_m_minus_n(layout):
    torch.manual_seed(2)
    x = torch.randn(1, 2, 9, 20, dtype=torch.float64)
    positions = torch.arange(9) * 7
    out = apply_rope(x, positions, layout=layout, partial_rotary_factor=0.4)
    expected = torch.cat((ref_rope(x[..., :8], positions, layout=layout), x[..., 8:]), -1)
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=0)
    q, k = torch.randn(20, dtype=torch.float64), torch.randn(20, dtype=torch.float64)
    def score(m, n):
        qm = apply_rope(q.view(1, 20).expand(1, 20), torch.tensor([m]), layout=layout, partial_rotary_factor=0.4)
        kn = apply_rope(k.view(1, 20), torch.tensor([n]), layout=layout, partial_rotary_factor=0.4)
        return float((qm * kn).sum())
    assert score(13, 4) == pytest.approx(score(109, 100), abs=1e-9)
    # the pass-through dims add a position-free term: the same at every distance
    assert float(q[8:] @ k[8:]) == pytest.approx(score(0, 0) - float(
        apply_rope(q[:8].view(1, 8), torch.tensor([0])) @ apply_rope(k[:8].view(1, 8), torch.tensor([0])).T), abs=1e-9)


def test_partial_rotary_gradients_flow_through_both_parts():
    x = torch.randn(2, 5, 12, dtype=torch.float64, requires_grad=True)
    out = apply_rope(x, partial_rotary_factor=0.5)
    (out * torch.arange(12, dtype=torch.float64)).sum().backward()
    assert torch.equal(x.grad[..., 6:], torch.arange(6, 12, dtype=torch.float64).expand(2, 5, 6))
    assert torch.autograd.gradcheck(lambda t: apply_rope(t, partial_rotary_factor=0.5), (x.detach().requires_grad_(),))


# ------------------------------------------------------------------ decoupled RoPE, against HF's DeepSeek-V3
def _deepseek(rope_dim=64, params=None):
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3 import modeling_deepseek_v3 as hf_ds
    config = DeepseekV3Config(hidden_size=256, num_attention_heads=2, num_key_value_heads=2, qk_rope_head_dim=rope_dim,
                              qk_nope_head_dim=32, v_head_dim=32, kv_lora_rank=16, q_lora_rank=32,
                              max_position_embeddings=163840, rope_scaling=params, n_routed_experts=4,
                              num_experts_per_tok=2, n_group=1, topk_group=1)
    return hf_ds, config, hf_ds.DeepseekV3RotaryEmbedding(config)


@pytest.mark.parametrize("params", [None, {"type": "yarn", "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                                           "beta_fast": 32, "beta_slow": 1, "original_max_position_embeddings": 4096},
                                    {"type": "yarn", "factor": 40, "mscale": 0.707, "mscale_all_dim": 0.0,
                                     "original_max_position_embeddings": 4096}])
def test_decoupled_rope_matches_hf_deepseek_v3(params):
    """HF rotates q_rot = q[..., 32:] with apply_rotary_pos_emb_interleave and writes it de-interleaved; the nope part
    q[..., :32] passes. Ours keeps DeepSeek's interleaved order: equal after that permutation, equal scores."""
    torch.manual_seed(4)
    hf_ds, config, rotary = _deepseek(params=params)
    q, k = torch.randn(2, 2, 16, 96), torch.randn(2, 1, 16, 96)  # k: one rope key shared by the heads
    position_ids = torch.stack([torch.arange(16), torch.arange(16) + 40])
    cos, sin = rotary(q, position_ids)
    q_rot, k_rot = hf_ds.apply_rotary_pos_emb_interleave(q[..., 32:], k[..., 32:], cos, sin)
    inv, factor = rope_inv_freq(64, scaling=None if params is None else {
        k_: v for k_, v in params.items()})
    ours_q = apply_decoupled_rope(q, position_ids, rope_dim=64, inv_freq=inv, attention_factor=factor)
    ours_k = apply_decoupled_rope(k, position_ids, rope_dim=64, inv_freq=inv, attention_factor=factor)
    assert torch.equal(ours_q[..., :32], q[..., :32])
    de_interleave = torch.cat((torch.arange(0, 64, 2), torch.arange(1, 64, 2)))  # HF's output order
    torch.testing.assert_close(ours_q[..., 32:][..., de_interleave], q_rot, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours_k[..., 32:][..., de_interleave], k_rot, atol=1e-5, rtol=0)
    scores_hf = torch.cat((q[..., :32], q_rot), -1) @ torch.cat((k[..., :32], k_rot), -1).transpose(-1, -2)
    torch.testing.assert_close(ours_q @ ours_k.transpose(-1, -2), scores_hf, atol=1e-4, rtol=1e-5)
    assert factor == pytest.approx(rotary.attention_scaling, rel=1e-12)
    # with rope_interleave off, HF's plain rotate_half on the slice is layout="half"
    q_half, _ = hf_ds.apply_rotary_pos_emb(q[..., 32:], k[..., 32:], cos, sin)
    ours_half = apply_decoupled_rope(q, position_ids, rope_dim=64, inv_freq=inv, attention_factor=factor, layout="half")
    torch.testing.assert_close(ours_half[..., 32:], q_half, atol=1e-5, rtol=0)


def test_decoupled_rope_is_why_mla_can_absorb_its_key_up_projection():
    """MLA caches a latent c_n and builds k_n = W_UK c_n. Position-free, q . (W_UK c) = (W_UK^T q) . c: W_UK folds
    into the query once. With RoPE on that key the product depends on n - m through R, so it does not fold;
    decoupled RoPE leaves the nope part foldable and puts positions on a separate slice."""
    torch.manual_seed(5)
    latent, nope, rope_dim, seq = 16, 8, 4, 12
    w_uk = torch.randn(nope, latent, dtype=torch.float64)
    c = torch.randn(seq, latent, dtype=torch.float64)  # cached latents
    q = torch.randn(seq, nope, dtype=torch.float64)
    keys = c @ w_uk.T  # (seq, nope)
    absorbed_query = q @ w_uk  # (seq, latent): W_UK folded into the query, once
    torch.testing.assert_close(q @ keys.T, absorbed_query @ c.T)  # no positions: absorbable
    rotated = apply_rope(q[None], torch.arange(seq))[0] @ apply_rope(keys[None], torch.arange(seq))[0].T
    assert not torch.allclose(rotated, absorbed_query @ c.T)  # RoPE on the compressed key: no longer this product
    # decoupled: [nope | rope] heads, positions only on the rope slice; the nope part still folds
    q_pe, k_pe = torch.randn(seq, rope_dim, dtype=torch.float64), torch.randn(seq, rope_dim, dtype=torch.float64)
    q_full = apply_decoupled_rope(torch.cat((q, q_pe), -1)[None], rope_dim=rope_dim)[0]
    k_full = apply_decoupled_rope(torch.cat((keys, k_pe), -1)[None], rope_dim=rope_dim)[0]
    rope_part = apply_rope(q_pe[None], layout="interleaved")[0] @ apply_rope(k_pe[None], layout="interleaved")[0].T
    torch.testing.assert_close(q_full @ k_full.T, absorbed_query @ c.T + rope_part)


# ------------------------------------------------------------------ which layout each model family uses (notebook 06)
def _cat_tables(angles):        # Llama's rotary embedding: cat(freqs, freqs), the half-split tables
    return torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()


def _interleaved_tables(angles):  # Cohere's: repeat_interleave(freqs, 2), the interleaved tables
    return angles.repeat_interleave(2, -1).cos(), angles.repeat_interleave(2, -1).sin()


def _rotate_with(family, q, angles):
    """q (batch, heads, seq, head_dim) rotated by transformers' own code of `family`; angles (seq, head_dim/2)."""
    import importlib
    family, _, part = family.partition(":")  # "deepseek_v32:mla": that model's MLA attention, not its indexer
    module = importlib.import_module(f"transformers.models.{family}.modeling_{family}")
    if family == "llama4":      # complex pairs: view_as_complex on (x[2i], x[2i+1])
        freqs_cis = torch.polar(torch.ones_like(angles), angles)[None]  # (1, seq, head_dim/2)
        return module.apply_rotary_emb(q.transpose(1, 2), q.transpose(1, 2), freqs_cis)[0].transpose(1, 2)
    if family == "deepseek_v2":  # complex pairs too, q as (batch, heads, seq, head_dim)
        return module.apply_rotary_emb(q, q, torch.polar(torch.ones_like(angles), angles)[None])[0]
    if family == "gptj":        # rotate_every_two, sin/cos tables of head_dim/2 repeated inside
        return module.apply_rotary_pos_emb(q.transpose(1, 2), angles.sin()[None], angles.cos()[None]).transpose(1, 2)
    # deepseek_v3 / MLA: rope_interleave=True (its default): pairs (x[2i], x[2i+1]) in, and the result
    if family == "deepseek_v3" or part == "mla":
        cos, sin = _cat_tables(angles)  # written de-interleaved (pair i at dims i, i + d/2): the same dot products
        out = module.apply_rotary_pos_emb_interleave(q, q, cos[None], sin[None])[0]
        return out[..., torch.argsort(layout_permutation(q.shape[-1]))]
    cos, sin = (_interleaved_tables if family == "cohere" else _cat_tables)(angles)
    return module.apply_rotary_pos_emb(q, q, cos[None], sin[None])[0]


@pytest.mark.parametrize("family,layout", [
    ("llama", "half"), ("mistral", "half"), ("qwen2", "half"), ("qwen3", "half"), ("gemma", "half"),
    ("gpt_neox", "half"),
    ("gptj", "interleaved"), ("llama4", "interleaved"), ("deepseek_v2", "interleaved"),
    ("deepseek_v3", "interleaved"), ("glm", "interleaved"), ("cohere", "interleaved"),
    # DeepSeek-V3.2: its sparse-attention indexer rotates half-split (apply_rotary_pos_emb), its MLA interleaved
    # (apply_rotary_pos_emb_interleave): two layouts in one layer (notebook 10, section 7; vLLM PR 28968)
    ("deepseek_v32", "half"), ("deepseek_v32:mla", "interleaved")])
def test_pair_layout_of_transformers_model_families(family, layout):
    """The families notebook 06 names for each layout: their own rotation code in transformers gives
    apply_rope(layout=...) and not the other layout."""
    torch.manual_seed(4)
    head_dim, seq = 16, 12
    q = torch.randn(1, 2, seq, head_dim)
    positions = torch.arange(seq)
    angles = positions[:, None].double() * rope_inv_freq(head_dim)[0]  # (seq, head_dim/2), float64
    theirs = _rotate_with(family, q, angles.float())
    other = "interleaved" if layout == "half" else "half"
    torch.testing.assert_close(theirs, apply_rope(q, positions, layout=layout), atol=1e-5, rtol=0)
    assert (theirs - apply_rope(q, positions, layout=other)).abs().max() > 0.1
