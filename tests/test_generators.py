"""posenc_lib.generators: encodings as exp(t M). Each claim of notebook 14's section 1 is a test here that would
fail if it were false: the inverse-transpose action is relative for any M, the same action only for a skew M;
RoPE's generator is apply_rope (both layouts); a scalar decays or blows up by its sign; xPos is rotation times
decay (against a reference written from torchscale's formulas); a nilpotent lifted generator is ALiBi's bias."""
import math

import pytest
import torch

from posenc_lib import alibi_bias, alibi_slopes, apply_rope, diagonal_spread, layout_permutation, rope_matrix
from posenc_lib.generators import (
    alibi_generator,
    alibi_lift,
    apply_generator,
    generator_matrices,
    generator_scores,
    rope_generator,
    scalar_generator,
    xpos_generator,
    xpos_zeta,
)

F64 = torch.float64


def _vectors(d=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(d, generator=gen, dtype=F64), torch.randn(d, generator=gen, dtype=F64)


def _grid(q, k, M, action, length=12):
    """(length, length) scores of one q at every query position and one k at every key position."""
    return generator_scores(q.expand(length, -1), k.expand(length, -1), M, action=action)


def _random_generator(d, seed=1):
    return 0.1 * torch.randn(d, d, generator=torch.Generator().manual_seed(seed), dtype=F64)


# ----------------------------------------------------------------------------- relative or not
def test_inverse_transpose_action_is_relative_for_any_generator():
    q, k = _vectors()
    M = _random_generator(8)
    scores = _grid(q, k, M, "inverse_transpose")
    assert diagonal_spread(scores) < 1e-12 * scores.abs().max()
    # and it is q^T exp((n - m) M) k
    m, n = 7, 3
    assert torch.allclose(scores[m, n], q @ torch.linalg.matrix_exp((n - m) * M) @ k, atol=1e-12)


def test_same_action_is_relative_for_a_skew_generator_only():
    q, k = _vectors()
    M = _random_generator(8)
    skew = M - M.T
    assert diagonal_spread(_grid(q, k, skew, "same")) < 1e-12
    assert diagonal_spread(_grid(q, k, M, "same")) > 1e-2  # a non-skew M: the spread is far from float noise


def test_same_action_equals_inverse_transpose_for_a_skew_generator():
    x, _ = _vectors()
    S = _random_generator(8) - _random_generator(8).T
    S = S - S.T
    xs = x.expand(5, -1)
    assert torch.allclose(apply_generator(xs, None, S), apply_generator(xs, None, S, inverse_transpose=True),
                          atol=1e-13)


def test_a_scalar_under_the_same_action_depends_on_m_plus_n():
    q, k = _vectors()
    lam = -0.05
    scores = _grid(q, k, scalar_generator(8, lam), "same")
    m, n, shift = 5, 2, 4
    assert scores[m + shift, n + shift] != pytest.approx(scores[m, n].item(), rel=1e-3)
    assert scores[m, n].item() == pytest.approx(math.exp(lam * (m + n)) * (q @ k).item(), rel=1e-12)


@pytest.mark.parametrize("lam", [0.1, -0.1])
def test_a_scalar_under_inverse_transpose_decays_for_a_positive_rate_and_blows_up_for_a_negative_one(lam):
    q, k = _vectors()
    scores = _grid(q, k, scalar_generator(8, lam), "inverse_transpose")
    m = 11
    ratio = scores[m, : m + 1] / (q @ k)  # keys n <= m: the causal past
    expected = torch.exp(lam * (torch.arange(m + 1, dtype=F64) - m))
    assert torch.allclose(ratio, expected, rtol=1e-12)
    far, near = ratio[0].item(), ratio[m].item()
    assert (far < near) if lam > 0 else (far > near)


def test_nope_is_the_zero_generator():
    q, k = _vectors()
    scores = _grid(q, k, torch.zeros(8, 8, dtype=F64), "same")
    assert torch.allclose(scores, torch.full_like(scores, (q @ k).item()), atol=1e-13)


# ----------------------------------------------------------------------------- RoPE
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_generator_is_apply_rope(layout):
    x = torch.randn(2, 3, 9, 16, generator=torch.Generator().manual_seed(2), dtype=F64)
    positions = torch.tensor([0, 1, 5, 9, 100, 3, 4, 2, 7])
    S = rope_generator(16, base=500.0, layout=layout)
    assert torch.allclose(S, -S.T)
    got = apply_generator(x, positions, S)
    assert torch.allclose(got, apply_rope(x, positions, base=500.0, layout=layout), atol=1e-12)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_exp_of_the_rope_generator_is_rope_matrix(layout):
    S = rope_generator(8, layout=layout)
    E = generator_matrices(S, torch.tensor([3]))[0]
    assert torch.allclose(E, rope_matrix(3, 8, layout=layout), atol=1e-14)


def test_interleaved_generator_is_block_diagonal_and_the_half_one_its_permutation():
    S = rope_generator(8, layout="interleaved")
    blocks = torch.block_diag(*[S[2 * i:2 * i + 2, 2 * i:2 * i + 2] for i in range(4)])
    assert torch.equal(S, blocks)
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=F64) / 8)
    assert torch.allclose(S[1::2, 0::2].diagonal(), theta)  # S[2i+1, 2i] = +theta_i: counter-clockwise
    perm = layout_permutation(8)
    assert torch.equal(rope_generator(8, layout="half"), S[perm][:, perm])


# ----------------------------------------------------------------------------- xPos
def _torchscale_style_xpos(x, positions, *, downscale, scale_base=512.0):
    """A reference written from torchscale's XPOS formulas (interleaved pairs, float64): pair i of the vector at
    position t turned by t * 10000 ** (-2i/d) and multiplied by zeta_i ** (t / scale_base), or its inverse on
    the keys (downscale=True)."""
    d = x.shape[-1]
    zeta = (torch.arange(0, d, 2, dtype=F64) + 0.4 * d) / (1.4 * d)
    theta = 1.0 / 10000 ** (torch.arange(0, d // 2, dtype=F64) / (d // 2))
    t = positions.to(F64)[:, None]
    scale = zeta ** (t / scale_base)
    if downscale:
        scale = 1 / scale
    sin, cos = (t * theta).sin() * scale, (t * theta).cos() * scale
    sin, cos = sin.repeat_interleave(2, -1), cos.repeat_interleave(2, -1)
    every_two = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    return x * cos + every_two * sin


def test_xpos_is_rotation_times_decay_under_the_inverse_transpose_action():
    T, d = 10, 8
    gen = torch.Generator().manual_seed(3)
    q, k = torch.randn(T, d, generator=gen, dtype=F64), torch.randn(T, d, generator=gen, dtype=F64)
    positions = torch.arange(T) - T // 2  # torchscale centres its positions: a relative score does not see it
    M = xpos_generator(d, layout="interleaved", scale_base=64.0)
    got = generator_scores(q, k, M, positions, positions, action="inverse_transpose")
    want = (_torchscale_style_xpos(q, positions, downscale=False, scale_base=64.0)
            @ _torchscale_style_xpos(k, positions, downscale=True, scale_base=64.0).T)
    assert torch.allclose(got, want, atol=1e-12)
    zeta = xpos_zeta(d)
    assert bool((zeta > 0).all() and (zeta < 1).all())
    rates = M.diagonal()[0::2]
    assert torch.allclose(rates, -zeta.log() / 64.0) and bool((rates > 0).all())  # a decay, not a blow-up


# ----------------------------------------------------------------------------- ALiBi
def test_the_alibi_generator_is_nilpotent():
    N = alibi_generator(4, 0.25)
    assert torch.equal(N @ N, torch.zeros_like(N))
    E = generator_matrices(N, torch.tensor([7]))[0]
    assert torch.allclose(E, torch.eye(6, dtype=F64) + 7 * N, atol=1e-14)


def test_a_lifted_nilpotent_generator_is_alibis_bias():
    T, d, H = 9, 6, 4
    gen = torch.Generator().manual_seed(4)
    q, k = torch.randn(T, d, generator=gen, dtype=F64), torch.randn(T, d, generator=gen, dtype=F64)
    ql, kl = alibi_lift(q, k)
    bias = alibi_bias(H, T, dtype=F64)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    for h, slope in enumerate(alibi_slopes(H, dtype=F64).tolist()):
        got = generator_scores(ql, kl, alibi_generator(d, slope), action="inverse_transpose") - q @ k.T
        assert torch.allclose(got[causal], bias[h][causal], atol=1e-12)
        assert torch.allclose(got[~causal], -bias[h][~causal], atol=1e-12)  # +slope*|i-j| after the query


def test_the_lifted_vectors_keep_the_plain_dot_product():
    q, k = _vectors(5)
    ql, kl = alibi_lift(q, k)
    assert ql.tolist()[-2:] == [1.0, 0.0] and kl.tolist()[-2:] == [0.0, 1.0]
    assert (ql @ kl).item() == pytest.approx((q @ k).item(), abs=1e-14)


# ----------------------------------------------------------------------------- dtypes, devices, inputs
def test_result_keeps_the_input_dtype_and_does_not_touch_it():
    x = torch.randn(4, 8, dtype=torch.bfloat16)
    before = x.clone()
    y = apply_generator(x, None, rope_generator(8, dtype=torch.float32))
    assert y.dtype == torch.bfloat16 and torch.equal(x, before)
    want = apply_rope(x.double(), None).to(torch.bfloat16)
    assert torch.equal(y, want)
    s = generator_scores(x.float(), x.float(), rope_generator(8))
    assert s.dtype == torch.float32


def test_meta_device_gives_shapes():
    x = torch.empty(2, 5, 8, device="meta")
    M = rope_generator(8, device="meta")
    assert M.device.type == "meta"
    y = apply_generator(x, torch.arange(5, device="meta"), M)
    assert y.shape == x.shape and y.device.type == "meta"
    s = generator_scores(x, x, M, action="inverse_transpose")
    assert s.shape == (2, 5, 5) and s.device.type == "meta"


def test_batched_positions():
    x = torch.randn(2, 3, 4, 8, dtype=F64)
    positions = torch.tensor([[0, 1, 2, 3], [5, 9, 7, 6]])
    S = rope_generator(8)
    assert torch.allclose(apply_generator(x, positions, S), apply_rope(x, positions), atol=1e-12)


@pytest.mark.parametrize("make, error, words", [
    (lambda: apply_generator(torch.randn(3, 4), None, torch.randn(4, 5)), ValueError, "square (d, d)"),
    (lambda: apply_generator(torch.randn(3, 4), None, torch.randn(4, 4, 4)), ValueError, "square (d, d)"),
    (lambda: apply_generator(torch.randn(3, 4), None, torch.eye(4, dtype=torch.int64)), TypeError, "floating"),
    (lambda: apply_generator(torch.randn(3, 4), None, [[1.0]]), TypeError, "M must be a torch.Tensor"),
    (lambda: apply_generator(torch.randn(3, 5), None, torch.eye(4)), ValueError, "must equal M's size d (4)"),
    (lambda: apply_generator(torch.arange(12).reshape(3, 4), None, torch.eye(4)), TypeError, "x must be a floating"),
    (lambda: apply_generator(torch.randn(3, 4), torch.arange(4), torch.eye(4)), ValueError, "seq=3"),
    (lambda: apply_generator(torch.randn(3, 4), torch.arange(3.0), torch.eye(4)), TypeError, "integer tensor"),
    (lambda: apply_generator(torch.randn(3, 4), None, torch.full((4, 4), float("nan"))), ValueError, "finite"),
    (lambda: apply_generator(torch.randn(3, 4), None, torch.eye(4), inverse_transpose="yes"), TypeError, "a bool"),
    (lambda: generator_scores(torch.randn(3, 4), torch.randn(3, 5), torch.eye(4)), ValueError, "k's last dimension"),
    (lambda: generator_scores(torch.randn(3, 4), torch.randn(3, 4, dtype=F64), torch.eye(4)), TypeError, "one dtype"),
    (lambda: generator_scores(torch.randn(3, 4), torch.randn(3, 4), torch.eye(4), action="inverse"), ValueError,
     "action must be one of"),
    (lambda: apply_generator(torch.randn(3, 4), None, torch.eye(4, device="meta")), ValueError, "device"),
    (lambda: generator_matrices(torch.eye(64), torch.arange(1 << 16)), ValueError, "positions x d x d"),
    (lambda: rope_generator(7), ValueError, "even"),
    (lambda: rope_generator(8, inv_freq=torch.ones(3)), ValueError, "(dim/2,) = (4,)"),
    (lambda: scalar_generator(4, float("inf")), TypeError, "lam"),
    (lambda: alibi_generator(4, "0.5"), TypeError, "slope"),
    (lambda: xpos_generator(8, scale_base=0), ValueError, "scale_base"),
], ids=["non-square", "3-d", "int M", "list M", "mismatched d", "int x", "positions length", "float positions",
        "nan M", "bool flag", "k size", "dtypes", "action", "devices", "too many", "odd dim", "inv_freq", "inf lam",
        "str slope", "scale_base"])
def test_bad_input_is_named(make, error, words):
    with pytest.raises(error, match=None) as info:
        make()
    assert words in str(info.value), str(info.value)


def test_compiles_as_one_graph():
    x = torch.randn(6, 8)
    S = rope_generator(8, dtype=torch.float32)
    compiled = torch.compile(apply_generator, fullgraph=True)
    assert torch.allclose(compiled(x, torch.arange(6), S), apply_generator(x, torch.arange(6), S), atol=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu_and_stays_on_the_device():
    x = torch.randn(2, 7, 8, dtype=torch.float32)
    M = xpos_generator(8, scale_base=16.0)
    want = generator_scores(x, x, M, action="inverse_transpose")
    got = generator_scores(x.cuda(), x.cuda(), M.cuda(), action="inverse_transpose")
    assert got.device.type == "cuda" and got.dtype == torch.float32
    assert torch.allclose(got.cpu(), want, atol=1e-5)
