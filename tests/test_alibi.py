"""ALiBi slopes against their rule in float64 (the paper's 2^(-8h/n) for a power-of-two n, the authors'
code `get_slopes` otherwise) and against Hugging Face's BLOOM, and the bias itself.

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
from conftest import float32_ulp, ref_alibi_slopes
from hypothesis import given, strategies as st
from transformers.models.bloom.modeling_bloom import build_alibi_tensor

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


@pytest.mark.parametrize("n", [3, 5, 6, 12, 24, 40])
def test_non_power_of_two_slopes_are_the_codes_workaround_not_the_papers_sequence(n):
    """The paper's sentence (a geometric sequence starting at and stepping by 2^(-8/n)) would give 2^(-8h/n)
    for any n; its models all have 2^a heads. For other n the authors' get_slopes (a "workaround", its
    comment says) keeps the p = 2^floor(log2 n) slopes of p heads and so is NOT one geometric sequence."""
    slopes = alibi_slopes(n, dtype=torch.float64)
    paper_sentence = torch.tensor([2.0 ** (-8.0 * h / n) for h in range(1, n + 1)], dtype=torch.float64)
    assert not torch.allclose(slopes, paper_sentence)
    ratios = slopes[1:] / slopes[:-1]
    assert ratios.max() - ratios.min() > 0.1  # not one constant ratio
    p = 2 ** int(math.floor(math.log2(n)))
    assert slopes[p - 1].item() == 2.0 ** -8 and slopes[p].item() == 2.0 ** (-4.0 / p)  # the second run starts over


@pytest.mark.parametrize("k", range(0, 7))
def test_power_of_two_slopes_are_the_papers_sequence(k):
    n = 2 ** k
    paper_sentence = torch.tensor([2.0 ** (-8.0 * h / n) for h in range(1, n + 1)], dtype=torch.float64)
    torch.testing.assert_close(alibi_slopes(n, dtype=torch.float64), paper_sentence, rtol=1e-15, atol=0)


@pytest.mark.parametrize("causal", [True, False])
def test_a_kernel_needs_only_the_slopes(causal):
    """Notebook 05's cost claim: ALiBi's bias is a formula of (head, i, j), so an attention kernel can
    compute it from the H slopes alone (FlashAttention's `alibi_slopes`; here PyTorch's FlexAttention with
    a score_mod that closes over the slopes) and never needs the (H, T, T) bias tensor."""
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    import warnings
    torch.manual_seed(0)
    H, T, d = 4, 12, 8
    q, k, v = (torch.randn(1, H, T, d) for _ in range(3))
    slopes = alibi_slopes(H)

    def score_mod(score, b, h, q_idx, kv_idx):
        bias = -slopes[h] * (q_idx - kv_idx).abs()
        return torch.where(kv_idx <= q_idx, score + bias, -float("inf")) if causal else score + bias

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager (uncompiled) flex_attention warns that it is not fused
        out = flex.flex_attention(q, k, v, score_mod=score_mod)
    torch.testing.assert_close(out, attention(q, k, v, bias=alibi_bias(H, T), causal=causal), atol=1e-5, rtol=0)


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


def test_alibi_called_on_q_is_its_score_bias():
    q = torch.zeros(2, 4, 6, 8)
    bias = ALiBi(4)(q)
    assert bias.shape == (1, 4, 6, 6)
    torch.testing.assert_close(bias[0], alibi_bias(4, 6))
    torch.testing.assert_close(ALiBi(4)(q, torch.arange(100, 106)), bias)  # relative: a shift changes nothing
    assert ALiBi(4)(q, torch.arange(6), torch.arange(9)).shape == (1, 4, 6, 9)


@pytest.mark.parametrize("q_len,k_len", [(0, 0), (0, 5)])
def test_bias_of_no_queries_is_empty(q_len, k_len):
    assert alibi_bias(3, q_len, k_len).shape == (3, q_len, k_len)
    assert ALiBi(3)(torch.zeros(1, 3, q_len, 4), None, torch.arange(k_len)).shape == (1, 3, q_len, k_len)


# ------------------------------------------------------------------ bad input: (id, call, exception, message)
BAD = [
    ("slopes zero heads", lambda: alibi_slopes(0), ValueError, r"num_heads must be >= 1, got 0"),
    ("slopes float heads", lambda: alibi_slopes(4.0), TypeError, r"num_heads must be an int"),
    ("slopes int dtype", lambda: alibi_slopes(4, dtype=torch.long), TypeError,
     r"dtype must be a floating-point dtype.*int64"),
    ("alibi_bias zero heads", lambda: alibi_bias(0, 3), ValueError, r"num_heads must be >= 1"),
    ("alibi_bias negative", lambda: alibi_bias(2, -1), ValueError, r"q_len must be >= 0"),
    ("alibi_bias k_len negative", lambda: alibi_bias(2, 1, -3), ValueError, r"k_len must be >= 0"),
    ("alibi_bias q_len > k_len", lambda: alibi_bias(2, 5, 3), ValueError, r"q_len must be <= k_len"),
    ("alibi_bias int dtype", lambda: alibi_bias(2, 3, dtype=torch.int32), TypeError,
     r"dtype must be a floating-point dtype"),
    ("ALiBi zero heads", lambda: ALiBi(0), ValueError, r"num_heads must be >= 1"),
    ("ALiBi heads vs q", lambda: ALiBi(2)(torch.zeros(1, 4, 5, 8)), ValueError,
     r"q must have shape \(batch, num_heads=2, seq, head_dim\) for this ALiBi, got \(1, 4, 5, 8\)"),
    ("ALiBi 3-D q", lambda: ALiBi(2)(torch.zeros(2, 5, 8)), ValueError, r"q must have shape"),
    ("ALiBi int q", lambda: ALiBi(2)(torch.zeros(1, 2, 5, 8, dtype=torch.long)), TypeError,
     r"q must be a floating-point tensor"),
    ("ALiBi positions batch", lambda: ALiBi(2)(torch.zeros(2, 2, 5, 8), torch.zeros(3, 5, dtype=torch.long)),
     ValueError, r"q_positions of shape \(3, 5\) does not fit: expected batch 1 or 2"),
    ("ALiBi float positions", lambda: ALiBi(2)(torch.zeros(1, 2, 5, 8), torch.arange(5.0)), TypeError,
     r"q_positions must be an integer tensor"),
    ("ALiBi bool key positions", lambda: ALiBi(2)(torch.zeros(1, 2, 5, 8), None, torch.ones(5, dtype=torch.bool)),
     TypeError, r"k_positions must be an integer tensor"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_named(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


# ------------------------------------------------------------------ devices: cpu, meta, cuda when present
ON_DEVICE = {
    "alibi_slopes": lambda d, t: alibi_slopes(6, device=d, dtype=t),
    "alibi_bias": lambda d, t: alibi_bias(6, 3, 5, device=d, dtype=t),
    "ALiBi": lambda d, t: ALiBi(3)(torch.zeros(2, 3, 5, 8, device=d, dtype=t)),
}


@pytest.mark.parametrize("name", sorted(ON_DEVICE))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_results_stay_on_the_callers_device_and_dtype(name, dtype, device):
    out = ON_DEVICE[name](device, dtype)
    assert out.device.type == device.type and out.dtype == dtype


def test_positions_on_another_device_are_refused(device):
    other = torch.device("meta" if device.type != "meta" else "cpu")
    q = torch.zeros(1, 2, 5, 8, device=device)
    with pytest.raises(ValueError, match=r"q_positions must be on the device of the tensor it indexes"):
        ALiBi(2)(q, torch.arange(5, device=other))
    with pytest.raises(ValueError, match=r"k_positions must be on the device of the tensor it indexes"):
        ALiBi(2)(q, torch.arange(5, device=device), torch.arange(5, device=other))


def test_module_bias_is_exact_in_float64():
    """For float64 q the module's bias is -m_h * |j - i| to float64 precision (slopes and distances are
    not rounded to float32 first): checked against the paper's slopes in plain Python."""
    q = torch.zeros(1, 12, 2, 4, dtype=torch.float64)
    k_pos = torch.tensor([1, 2, 2 ** 24 + 1])
    bias = ALiBi(12)(q, torch.tensor([0, 5]), k_pos)
    slopes = ref_alibi_slopes(12)
    expected = torch.tensor([[[-m * abs(j - i) for j in k_pos.tolist()] for i in (0, 5)] for m in slopes],
                            dtype=torch.float64)[None]
    torch.testing.assert_close(bias, expected, rtol=1e-15, atol=0)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int16, torch.int32])
def test_small_integer_positions_give_the_int64_bias(dtype):
    q = torch.zeros(1, 4, 1, 4)
    got = ALiBi(4)(q, torch.tensor([5], dtype=dtype), torch.tensor([3], dtype=dtype))
    torch.testing.assert_close(got, ALiBi(4)(q, torch.tensor([5]), torch.tensor([3])), rtol=0, atol=0)
    assert got[0, 0, 0, 0].item() == -2 * ref_alibi_slopes(4)[0]
