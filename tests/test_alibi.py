"""ALiBi slopes against the paper's rule in float64 and against Hugging Face's BLOOM, and the bias itself.

Why not bit-equal to BLOOM for every head count: BLOOM computes base = 2 ** (-8/n) in float32 and
then base ** h in float32, so its slope h carries the rounding of `base` times h plus the pow's own
(up to ~5 float32 ulps for n = 64). The library evaluates 2 ** (-8h/n) in float64 and rounds once,
so its slopes are the correctly rounded values of the paper's formula -- that is the reference here.
For n <= 10 the two are bit-identical; beyond, they differ in a few heads by a few ulps (relative
< 1e-6), and in every such head the library's value is the closer one to the formula.
"""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers.models.bloom.modeling_bloom import build_alibi_tensor

from conftest import float32_ulp, ref_alibi_slopes
from posenc_lib import ALiBi, alibi_bias, alibi_slopes, attention


def _bloom_slopes(n):
    # BLOOM's bias for a 2-token unmasked sequence is slope * [0, 1]: column 1 is the slopes
    return build_alibi_tensor(torch.ones(1, 2, dtype=torch.long), n, torch.float32)[:, 0, 1]


@pytest.mark.parametrize("n", range(1, 65))
def test_slopes_are_the_correctly_rounded_formula(n):
    exact = torch.tensor(ref_alibi_slopes(n), dtype=torch.float64)
    ours = alibi_slopes(n)
    assert ours.dtype == torch.float32 and ours.shape == (n,)
    assert torch.equal(ours, exact.to(torch.float32))  # round-to-nearest of the float64 formula
    assert ((ours.double() - exact).abs() <= 0.5 * float32_ulp(exact)).all()
    torch.testing.assert_close(alibi_slopes(n, dtype=torch.float64), exact, atol=0, rtol=1e-15)


@pytest.mark.parametrize("n", range(1, 65))
def test_slopes_match_hf_bloom(n):
    exact = torch.tensor(ref_alibi_slopes(n), dtype=torch.float64)
    bloom, ours = _bloom_slopes(n), alibi_slopes(n)
    assert ((bloom.double() - exact).abs() <= 8 * 2.0 ** -24 * exact).all()  # BLOOM's float32 pow drift: <= 8 ulps
    if n <= 10:  # 2 ** (-8/n) and its powers are exact in float32 here (or round the same way)
        assert torch.equal(ours, bloom)
    differ = ours != bloom
    # wherever the two differ, the library is the one closer to the paper's formula
    assert ((ours.double() - exact).abs()[differ] < (bloom.double() - exact).abs()[differ]).all()
    torch.testing.assert_close(ours, bloom, atol=0, rtol=1e-6)


@given(k=st.integers(0, 8))
def test_power_of_two_slopes_are_geometric(k):
    n = 2 ** k
    slopes = alibi_slopes(n, dtype=torch.float64)
    first = 2.0 ** (-8.0 / n)
    assert slopes[0].item() == pytest.approx(first, rel=1e-15)  # starts at 2^(-8/n) ...
    ratios = slopes[1:] / slopes[:-1]
    torch.testing.assert_close(ratios, torch.full_like(ratios, first), atol=0, rtol=1e-13)  # ... and steps by it
    assert slopes[-1].item() == pytest.approx(2.0 ** -8)  # the last head always gets 1/256


@given(n=st.integers(1, 200))
def test_non_power_of_two_interleaves_the_next_power(n):
    slopes = alibi_slopes(n, dtype=torch.float64)
    p = 2 ** int(math.floor(math.log2(n)))
    torch.testing.assert_close(slopes[:p], alibi_slopes(p, dtype=torch.float64))
    if n > p:  # the extra heads are the odd-indexed slopes of 2p, which fall between the first ones
        torch.testing.assert_close(slopes[p:], alibi_slopes(2 * p, dtype=torch.float64)[0::2][: n - p])
    assert len(set(slopes.tolist())) == n and (slopes > 0).all() and (slopes < 1).all()


@pytest.mark.parametrize("n,q_len,k_len", [(1, 1, 1), (4, 5, 5), (6, 3, 8), (12, 7, 7)])
def test_bias_is_minus_slope_times_distance(n, q_len, k_len):
    bias = alibi_bias(n, q_len, k_len)
    assert bias.shape == (n, q_len, k_len) and bias.dtype == torch.float32
    slopes = ref_alibi_slopes(n)
    for h in range(n):
        for row in range(q_len):
            i = k_len - q_len + row  # queries are the last q_len positions
            for j in range(k_len):
                assert bias[h, row, j].item() == pytest.approx(-slopes[h] * abs(i - j), rel=1e-6, abs=0)
    pos = torch.arange(k_len)
    module_bias = ALiBi(n).score_bias(torch.zeros(1, n, q_len, 4), pos[k_len - q_len:], pos)
    torch.testing.assert_close(module_bias[0], bias)


def test_bloom_row_trick_equals_alibi_only_under_a_causal_mask():
    """BLOOM adds slope * j (the same row for every query). Under a causal mask that differs from
    -slope * (i - j) by slope * i, a per-row constant the softmax ignores; without the mask it does not."""
    torch.manual_seed(0)
    n, T, d = 6, 9, 8
    q, k, v = torch.randn(1, n, T, d), torch.randn(1, n, T, d), torch.randn(1, n, T, d)
    bloom = build_alibi_tensor(torch.ones(1, T, dtype=torch.long), n, torch.float32).view(1, n, 1, T)
    ours = alibi_bias(n, T)
    torch.testing.assert_close(attention(q, k, v, bias=bloom, causal=True), attention(q, k, v, bias=ours, causal=True),
                               atol=1e-5, rtol=0)
    assert not torch.allclose(attention(q, k, v, bias=bloom), attention(q, k, v, bias=ours), atol=1e-3)
