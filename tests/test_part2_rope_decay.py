"""rope_decay_bound (appended to posenc_lib.rope for notebook 06) and the precision demonstration's numbers."""
import cmath
import math

import pytest
import torch

from posenc_lib.plots.part2 import naive_rope, rope_precision_errors
from posenc_lib.rope import apply_rope, rope_decay_bound


def ref_bound(r: float, dim: int, base: float) -> float:
    """(1/(d/2)) sum_{j=1}^{d/2} |sum_{k<j} e^{i r theta_k}|, theta_k = base^(-2k/d), with Python complex numbers."""
    half = dim // 2
    total, partial = 0.0, 0j
    for k in range(half):
        partial += cmath.exp(1j * r * base ** (-2 * k / dim))
        total += abs(partial)
    return total / half


@pytest.mark.parametrize("dim, base", [(128, 10000.0), (64, 500000.0), (8, 10.0), (2, 10000.0)])
def test_matches_independent_loop(dim, base):
    distances = [0, 1, 2, 7, 50, 333, 1000, 4096]
    got = rope_decay_bound(distances, dim, base)
    assert got.dtype == torch.float64 and got.shape == (len(distances),)
    for r, value in zip(distances, got.tolist()):
        assert value == pytest.approx(ref_bound(r, dim, base), rel=1e-12, abs=1e-12)


def test_value_at_zero_symmetry_and_decay():
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


def test_is_an_upper_bound_on_real_scores():
    """|<R_m q, R_n k>| <= max_i |h_{i+1} - h_i| * sum_j |S_j| with h_i = q_i conj(k_i), h_{d/2} = 0 (interleaved pairs)."""
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


def test_bad_arguments():
    with pytest.raises(ValueError, match="dim"):
        rope_decay_bound(3, 7)
    with pytest.raises(ValueError, match="base"):
        rope_decay_bound(3, 8, base=0.5)
    with pytest.raises(TypeError, match="distance"):
        rope_decay_bound("far", 8)
    with pytest.raises(TypeError, match="distance"):
        rope_decay_bound(torch.tensor([1j]), 8)


def test_device_follows_distance():
    out = rope_decay_bound(torch.arange(4, device="meta"), 8)
    assert out.device.type == "meta" and out.shape == (4,)


def test_bf16_positions_collide():
    pair = torch.tensor([256.0, 257.0]).to(torch.bfloat16)
    assert pair[0] == pair[1]


def test_library_bf16_error_is_bf16_rounding_naive_is_far_worse():
    positions = torch.tensor([65536, 100000, 500000, 1000000])
    err = rope_precision_errors(positions, dim=64)
    # the library: angles in float64, one rounding of the result to bf16 (at most ~1 bf16 ulp of |x| <= ~4)
    assert (err["library_bf16"] <= 2 * err["bf16_rounding"] + 1e-6).all()
    assert (err["library_bf16"] < 2.0 ** -8 * 4).all()
    # angles in bf16: the positions themselves round to multiples of 512 and more -> errors of order |x|
    assert (err["naive_bf16"] > 50 * err["library_bf16"]).all()
    assert (err["naive_bf16"] > 0.5).all()
    # float32 inputs: the library's angles are float64, so the error stays at float32 rounding; angles computed
    # in float32 drift with the position (relative error ~6e-8 of an angle of up to 1e6 radians)
    assert (err["library_fp32"] < 1e-5).all()
    assert err["naive_fp32"][-1] > 1e-3 > 1e-5 > err["library_fp32"][-1]


def test_naive_rope_is_exact_where_precision_suffices():
    x = torch.randn(5, 8, dtype=torch.float64)
    pos = torch.arange(5)
    torch.testing.assert_close(naive_rope(x, pos, angle_dtype=torch.float64), apply_rope(x, pos), rtol=0, atol=1e-12)
