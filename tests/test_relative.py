"""T5 buckets (against a plain-Python reading of the rule and EXACTLY against Hugging Face's T5), Shaw's
clipped relative positions (against explicit loops) and Transformer-XL's relative shift (against the (T, T, d)
gather and a loop). Sign convention: relative = key - query."""
import math

import pytest
import torch
from conftest import ref_t5_bucket
from hypothesis import given, strategies as st
from transformers import T5Config
from transformers.models.t5.modeling_t5 import T5Attention

from posenc_lib import (
    MultiHeadAttention,
    ShawRelativePosition,
    T5RelativeBias,
    attention,
    offset_scores,
    relative_positions,
    relative_shift,
    t5_relative_bucket,
)
from posenc_lib.relative import diagonal_spread

CONFIGS = [(32, 128), (16, 64), (64, 256), (8, 20), (32, 1000), (128, 512), (4, 3), (6, 100), (18, 128), (36, 50),
           (54, 64)]  # the last three have distances that land exactly on a float32/float64 log boundary
FAR = torch.arange(-6000, 6001)


def t5_configs():
    return st.tuples(st.booleans(), st.integers(2, 80), st.integers(1, 3000)).filter(
        lambda c: (c[1] // 2 if c[0] else c[1]) >= 2 and c[2] > (c[1] // 2 if c[0] else c[1]) // 2)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets,max_distance", CONFIGS)
def test_buckets_equal_hf_t5_exactly(bidirectional, num_buckets, max_distance):
    if (num_buckets // 2 if bidirectional else num_buckets) < 2 or max_distance <= (
            num_buckets // 2 if bidirectional else num_buckets) // 2:
        pytest.skip("invalid setting (see test_bad_input_is_named)")
    hf = T5Attention._relative_position_bucket(FAR, bidirectional=bidirectional, num_buckets=num_buckets,
                                               max_distance=max_distance)
    ours = t5_relative_bucket(FAR, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance)
    assert ours.dtype == torch.int64
    assert torch.equal(ours, hf)


@given(config=t5_configs(), rs=st.lists(st.integers(-10_000, 10_000), min_size=1, max_size=50))
def test_buckets_equal_hf_t5_exactly_hypothesis(config, rs):
    bidirectional, num_buckets, max_distance = config
    r = torch.tensor(rs)
    hf = T5Attention._relative_position_bucket(r, bidirectional=bidirectional, num_buckets=num_buckets,
                                               max_distance=max_distance)
    assert torch.equal(t5_relative_bucket(r, bidirectional=bidirectional, num_buckets=num_buckets,
                                          max_distance=max_distance), hf)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets,max_distance", CONFIGS)
def test_buckets_follow_the_rule_written_in_python(bidirectional, num_buckets, max_distance):
    n = num_buckets // 2 if bidirectional else num_buckets
    if n < 2 or max_distance <= n // 2:
        pytest.skip("invalid setting")
    r = torch.arange(-3000, 3001)
    ours = t5_relative_bucket(r, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance)
    boundary_hits = 0
    for value, got in zip(r.tolist(), ours.tolist()):
        lo, hi = ref_t5_bucket(value, bidirectional, num_buckets, max_distance)
        assert lo <= got <= hi, (value, got, lo, hi)
        boundary_hits += lo != hi
    # the float32 log decides only at exact boundaries (e.g. (18, 128): distance 8 gives 4 + 1 exactly;
    # (32, 128): distances 16, 32, 64 give 10, 12, 14), at most one per bucket and side
    assert boundary_hits <= 2 * n


@given(config=t5_configs())
def test_buckets_monotone_and_respect_the_split(config):
    bidirectional, num_buckets, max_distance = config
    n = num_buckets // 2 if bidirectional else num_buckets
    distance = torch.arange(0, 4 * max_distance + 10)

    def bucket(r):
        return t5_relative_bucket(r, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance)

    past = bucket(-distance)  # keys before the query
    assert (past[1:] >= past[:-1]).all()  # monotone in distance
    assert past.min() == 0 and past.max() <= n - 1
    assert (past[: n // 2] == distance[: n // 2]).all()  # one bucket per small distance
    assert (past[distance >= max_distance] == n - 1).all()  # everything far shares the last bucket
    future = bucket(distance[1:])
    if bidirectional:
        assert (future >= n).all() and (future < 2 * n).all()  # future keys: their own half
        assert (future[1:] >= future[:-1]).all()
        assert torch.equal(future - n, past[1:])  # symmetric in |r| within each half
    else:
        assert (future == 0).all()  # causal: every future key shares bucket 0 (masked anyway)
    assert bucket(torch.tensor([0])).item() == 0


def test_relative_position_sign_is_key_minus_query():
    rel = relative_positions(torch.arange(3), torch.arange(5))  # (1, Tq, Tk)
    assert rel.shape == (1, 3, 5)
    for i in range(3):
        for j in range(5):
            assert rel[0, i, j].item() == j - i
    batched = relative_positions(torch.tensor([[10, 11], [0, 5]]), torch.tensor([[0, 12, 13], [1, 2, 3]]))
    assert batched[0, 1, 2].item() == 13 - 11 and batched[1, 1, 0].item() == 1 - 5


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("q_len,k_len", [(7, 7), (5, 11), (1, 40)])
def test_t5_bias_equals_hf_compute_bias(bidirectional, q_len, k_len):
    torch.manual_seed(0)
    ours = T5RelativeBias(4, bidirectional=bidirectional, num_buckets=16, max_distance=20)
    config = T5Config(d_model=32, d_kv=8, num_heads=4, relative_attention_num_buckets=16,
                      relative_attention_max_distance=20, is_decoder=not bidirectional)
    hf = T5Attention(config, has_relative_attention_bias=True, layer_idx=0)
    with torch.no_grad():
        hf.relative_attention_bias.weight.copy_(ours.relative_attention_bias.weight)
    bias = ours(q_len, k_len)
    assert bias.shape == (4, q_len, k_len)
    assert torch.equal(bias, hf.compute_bias(q_len, k_len)[0])
    for h, i, j in [(0, 0, 0), (3, q_len - 1, 0), (1, 0, k_len - 1)]:  # one learned scalar per (bucket, head)
        b = t5_relative_bucket(torch.tensor(j - i), bidirectional=bidirectional, num_buckets=16, max_distance=20)
        assert bias[h, i, j] == ours.relative_attention_bias.weight[b, h]


# ------------------------------------------------------------------ Shaw et al. 2018
def test_shaw_matches_explicit_loops():
    torch.manual_seed(1)
    B, H, T, d, k = 2, 3, 6, 4, 2
    shaw = ShawRelativePosition(d, k)
    q, kk, v = torch.randn(B, H, T, d, dtype=torch.float64), torch.randn(B, H, T, d, dtype=torch.float64), \
        torch.randn(B, H, T, d, dtype=torch.float64)
    shaw = shaw.double()
    pos = torch.arange(T)
    bias = shaw.score_bias(q, pos, pos)
    out, probs = attention(q, kk, v, bias=bias, return_weights=True)
    out = out + shaw.value_bias(probs, pos, pos)
    aK, aV = shaw.key_table, shaw.value_table  # rows 0 .. 2k for r = -k .. k
    expected = torch.zeros(B, H, T, d, dtype=torch.float64)
    for b in range(B):
        for h in range(H):
            for i in range(T):
                e = torch.stack([q[b, h, i] @ (kk[b, h, j] + aK[min(max(j - i, -k), k) + k]) / math.sqrt(d)
                                 for j in range(T)])
                p = torch.softmax(e, 0)
                expected[b, h, i] = sum(p[j] * (v[b, h, j] + aV[min(max(j - i, -k), k) + k]) for j in range(T))
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=0)
    assert shaw.relative_index(pos, pos).min() == 0 and shaw.relative_index(pos, pos).max() == 2 * k


def test_shaw_per_offset_form_equals_the_pairwise_gather():
    """ShawRelativePosition computes q . a^K_r for the 2k+1 offsets and then picks one per pair (and sums the
    probabilities per offset for the value term) instead of gathering a (B, Tq, Tk, d) tensor of a^K_{ij}:
    the same numbers, per-row positions included."""
    torch.manual_seed(3)
    B, H, Tq, Tk, d, k = 2, 3, 5, 7, 4, 2
    shaw = ShawRelativePosition(d, k).double()
    q = torch.randn(B, H, Tq, d, dtype=torch.float64)
    probs = torch.rand(B, H, Tq, Tk, dtype=torch.float64).softmax(-1)
    q_pos = torch.tensor([[3, 4, 5, 6, 7], [0, 2, 4, 6, 8]])
    k_pos = torch.tensor([[1, 2, 3, 4, 5, 6, 7], [9, 7, 5, 3, 1, 0, 2]])
    index = shaw.relative_index(q_pos, k_pos)                                    # (B, Tq, Tk)
    a_k, a_v = shaw.key_table[index], shaw.value_table[index]                    # (B, Tq, Tk, d): the big gather
    naive_bias = torch.einsum("bhid,bijd->bhij", q, a_k) / math.sqrt(d)
    naive_value = torch.einsum("bhij,bijd->bhid", probs, a_v)
    torch.testing.assert_close(shaw.score_bias(q, q_pos, k_pos), naive_bias, atol=1e-12, rtol=0)
    torch.testing.assert_close(shaw.value_bias(probs, q_pos, k_pos), naive_value, atol=1e-12, rtol=0)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_bias_fits_a_kernel_as_a_table_lookup(bidirectional):
    """Notebook 05's cost claim: T5's bias is a lookup of bucket(j - i) in a (num_buckets, H) table, so a
    kernel that takes a score function (PyTorch's FlexAttention score_mod) can add it without the
    (H, T, T) bias tensor that Hugging Face's T5 builds and passes as a mask."""
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    import warnings
    torch.manual_seed(4)
    H, T, d = 4, 20, 8
    t5 = T5RelativeBias(H, bidirectional=bidirectional, num_buckets=16, max_distance=12)
    table = t5.relative_attention_bias.weight.detach()                           # (num_buckets, H)
    q, k, v = (torch.randn(1, H, T, d) for _ in range(3))

    def score_mod(score, b, h, q_idx, kv_idx):
        bucket = t5_relative_bucket(kv_idx - q_idx, bidirectional=bidirectional, num_buckets=16, max_distance=12)
        return score + table[bucket, h]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # eager (uncompiled) flex_attention warns that it is not fused
        out = flex.flex_attention(q, k, v, score_mod=score_mod)
    with torch.no_grad():
        expected = attention(q, k, v, bias=t5(T, T))
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)


def test_shaw_in_multihead_attention_sees_only_relative_positions():
    torch.manual_seed(2)
    mha = MultiHeadAttention(16, 2, encoding=ShawRelativePosition(8, 3))
    x = torch.randn(2, 9, 16)
    out = mha(x)
    torch.testing.assert_close(mha(x, torch.arange(100, 109)), out, atol=1e-6, rtol=0)  # shift: same output
    assert not torch.allclose(mha(x, torch.arange(9).flip(0)), out, atol=1e-4)  # reversed order: different


@pytest.mark.parametrize("bidirectional", [True, False])
def test_buckets_at_the_int64_extremes(bidirectional):
    """|r| of -2**63 does not fit in int64 (abs() wraps to a negative number): those keys are far in
    the past, in the last bucket of their side, like -(2**63 - 1); the far future likewise."""
    n = 16 if bidirectional else 32
    extremes = torch.tensor([-2 ** 63, -2 ** 63 + 1, -10 ** 12, 10 ** 12, 2 ** 63 - 1])
    buckets = t5_relative_bucket(extremes, bidirectional=bidirectional)
    far_past, far_future = n - 1, (2 * n - 1 if bidirectional else 0)
    assert buckets.tolist() == [far_past, far_past, far_past, far_future, far_future]
    small = torch.tensor([-2 ** 31, 2 ** 31 - 1], dtype=torch.int32)  # other integer dtypes: int64 buckets
    assert t5_relative_bucket(small, bidirectional=bidirectional).tolist() == [far_past, far_future]


def test_buckets_of_nothing_are_empty():
    out = t5_relative_bucket(torch.zeros(0, 3, dtype=torch.long))
    assert out.shape == (0, 3) and out.dtype == torch.int64


@pytest.mark.parametrize("q_len,k_len", [(0, 4), (3, 0), (0, 0)])
def test_t5_bias_of_no_queries_or_keys_is_empty(q_len, k_len):
    assert T5RelativeBias(2)(q_len, k_len).shape == (2, q_len, k_len)


def test_t5_called_on_q_equals_its_length_form():
    """t5(q) (the protocol's score-bias call) and t5(q_len, k_len) give the same bias for positions 0..T-1."""
    torch.manual_seed(0)
    t5 = T5RelativeBias(3, bidirectional=False, num_buckets=8, max_distance=10)
    q = torch.randn(2, 3, 6, 4)
    assert torch.equal(t5(q)[0], t5(6, 6))
    shifted = t5(q, torch.arange(50, 56))  # relative: the same bias after a shift of every position
    assert torch.equal(shifted, t5(q))
    assert torch.equal(t5(q, torch.arange(6), torch.arange(9))[0], t5(6, 9))  # queries 0..5 against keys 0..8


def test_shaw_called_on_q_is_its_score_bias():
    torch.manual_seed(0)
    shaw = ShawRelativePosition(4, 2)
    q = torch.randn(2, 3, 5, 4)
    pos = torch.arange(5)
    assert torch.equal(shaw(q), shaw.score_bias(q, pos, pos))
    assert shaw.score_bias(q, pos, torch.arange(7)).shape == (2, 3, 5, 7)
    assert shaw.value_bias(torch.softmax(torch.randn(2, 3, 5, 7), -1), pos, torch.arange(7)).shape == (2, 3, 5, 4)


def test_relative_positions_broadcast_a_batch_of_one():
    rel = relative_positions(torch.tensor([[0, 1]]), torch.tensor([[0, 1, 2], [5, 6, 7]]))
    assert rel.shape == (2, 2, 3) and rel[1, 0, 0].item() == 5


def test_diagonal_spread_is_zero_exactly_for_toeplitz_matrices():
    c = torch.randn(9, dtype=torch.float64)
    i, j = torch.arange(4)[:, None], torch.arange(6)[None, :]
    toeplitz = c[j - i + 3]  # (4, 6): a function of j - i
    assert diagonal_spread(toeplitz) == 0.0
    assert diagonal_spread(toeplitz.T.contiguous()) == 0.0  # more rows than columns
    bumped = toeplitz.clone()
    bumped[2, 1] += 0.25
    assert diagonal_spread(bumped) == pytest.approx(0.25)
    tall = c[(torch.arange(6)[:, None] - torch.arange(2)[None, :]) + 3].clone()  # (6, 2)
    tall[5, 1] += 0.5  # on the diagonal of offset -4, which a square loop over the columns would miss
    assert diagonal_spread(tall) == pytest.approx(0.5)
    assert diagonal_spread(torch.zeros(0, 0)) == 0.0


# ------------------------------------------------------------------ bad input: (id, call, exception, message)
Q = torch.randn(2, 3, 5, 8)
BAD = [
    ("bucket float", lambda: t5_relative_bucket(torch.tensor([-1.5, 2.0])), TypeError,
     r"relative_position must be an integer tensor.*float32"),
    ("bucket bool", lambda: t5_relative_bucket(torch.tensor([True])), TypeError, r"relative_position must be an int"),
    ("bucket list", lambda: t5_relative_bucket([1, 2]), TypeError, r"relative_position must be a torch.Tensor"),
    ("bucket num_buckets", lambda: t5_relative_bucket(torch.arange(3), num_buckets=2), ValueError,
     r"num_buckets must be >= 4 \(bidirectional=True\)"),
    ("bucket causal num_buckets", lambda: t5_relative_bucket(torch.arange(3), bidirectional=False, num_buckets=1),
     ValueError, r"num_buckets must be >= 2 \(bidirectional=False\)"),
    ("bucket max_distance", lambda: t5_relative_bucket(torch.arange(3), max_distance=0), ValueError,
     r"max_distance must be >= 1"),
    ("bucket bidirectional string", lambda: t5_relative_bucket(torch.arange(3), bidirectional="no"), TypeError,
     r"bidirectional must be a bool"),
    ("T5 max_distance", lambda: T5RelativeBias(2, num_buckets=32, max_distance=8), ValueError,
     r"max_distance must be > 8"),
    ("T5 zero heads", lambda: T5RelativeBias(0), ValueError, r"num_heads must be >= 1"),
    ("T5 q_len negative", lambda: T5RelativeBias(2)(-1, 3), ValueError, r"q_len must be >= 0"),
    ("T5 k_len float", lambda: T5RelativeBias(2)(3, 2.5), TypeError, r"k_len must be an int"),
    ("T5 heads vs q", lambda: T5RelativeBias(2)(Q), ValueError,
     r"q must have shape \(batch, num_heads=2, seq, head_dim\) for this T5RelativeBias, got \(2, 3, 5, 8\)"),
    ("T5 float positions", lambda: T5RelativeBias(3)(Q, torch.arange(5.0)), TypeError,
     r"q_positions must be an integer tensor"),
    ("T5 positions batch", lambda: T5RelativeBias(3)(Q, torch.zeros(4, 5, dtype=torch.long)), ValueError,
     r"q_positions of shape \(4, 5\) does not fit: expected batch 1 or 2"),
    ("T5 key positions 3-D", lambda: T5RelativeBias(3)(Q, None, torch.zeros(1, 1, 5, dtype=torch.long)), ValueError,
     r"k_positions must have shape \(seq,\) or \(batch, seq\)"),
    ("Shaw negative clip", lambda: ShawRelativePosition(8, -1), ValueError, r"max_relative_position must be >= 0"),
    ("Shaw 3-D q", lambda: ShawRelativePosition(8, 2)(torch.randn(2, 5, 8)), ValueError,
     r"q must have shape \(batch, heads, seq, head_dim\) for this ShawRelativePosition, got \(2, 5, 8\)"),
    ("Shaw q width", lambda: ShawRelativePosition(4, 2)(Q), ValueError, r"head_dim=4"),
    ("Shaw int q", lambda: ShawRelativePosition(8, 2)(Q.long()), TypeError, r"q must be a floating-point tensor"),
    ("Shaw float positions", lambda: ShawRelativePosition(8, 2)(Q, torch.arange(5.0)), TypeError,
     r"q_positions must be an integer tensor"),
    ("Shaw positions length", lambda: ShawRelativePosition(8, 2)(Q, torch.arange(4)), ValueError,
     r"q_positions must have shape \(seq,\) or \(batch, seq\) with seq=5"),
    ("Shaw list positions", lambda: ShawRelativePosition(8, 2)(Q, list(range(5))), TypeError,
     r"q_positions must be a torch.Tensor"),
    ("Shaw probs vs key positions", lambda: ShawRelativePosition(8, 2).value_bias(
        torch.rand(2, 3, 5, 5), torch.arange(5), torch.arange(6)), ValueError,
     r"k_positions must have shape \(seq,\) or \(batch, seq\) with seq=5"),
    ("Shaw probs vs query positions", lambda: ShawRelativePosition(8, 2).value_bias(
        torch.rand(2, 3, 5, 5), torch.arange(4), torch.arange(5)), ValueError, r"q_positions must have shape"),
    ("Shaw probs 3-D", lambda: ShawRelativePosition(8, 2).value_bias(torch.rand(3, 5, 5), torch.arange(5),
                                                                      torch.arange(5)), ValueError,
     r"probs must have shape \(batch, heads, q_len, k_len\)"),
    ("relative_positions float", lambda: relative_positions(torch.arange(3.0), torch.arange(3)), TypeError,
     r"q_positions must be an integer tensor"),
    ("relative_positions 3-D", lambda: relative_positions(torch.zeros(1, 1, 3, dtype=torch.long), torch.arange(3)),
     ValueError, r"q_positions must have shape \(seq,\) or \(batch, seq\)"),
    ("relative_positions batches", lambda: relative_positions(torch.zeros(2, 3, dtype=torch.long),
                                                              torch.zeros(3, 3, dtype=torch.long)), ValueError,
     r"q_positions and k_positions must have the same batch or a batch of 1"),
    ("diagonal_spread 1-D", lambda: diagonal_spread(torch.zeros(4)), ValueError, r"scores must be a 2-D"),
    ("diagonal_spread int", lambda: diagonal_spread(torch.zeros(3, 3, dtype=torch.long)), TypeError,
     r"scores must be a floating-point tensor"),
    ("diagonal_spread NaN", lambda: diagonal_spread(torch.tensor([[0.0, float("nan")], [1.0, 0.0]])), ValueError,
     r"scores must hold finite numbers"),
    ("diagonal_spread meta", lambda: diagonal_spread(torch.zeros(3, 3, device="meta")), ValueError,
     r"scores must hold values to measure"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_input_is_named(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


# ------------------------------------------------------------------ devices: cpu, meta, cuda when present
def _q(device, dtype):
    return torch.full((2, 3, 5, 8), 0.5, device=device, dtype=dtype)


ON_DEVICE = {  # name -> f(device, dtype) -> (tensor, expected dtype or None for int64)
    "t5_relative_bucket": lambda d, t: t5_relative_bucket(torch.arange(-5, 5, device=d)),
    "relative_positions": lambda d, t: relative_positions(torch.arange(3, device=d), torch.arange(4, device=d)),
    "T5RelativeBias_lengths": lambda d, t: T5RelativeBias(3).to(device=d, dtype=t)(4, 6),
    "T5RelativeBias_q": lambda d, t: T5RelativeBias(3).to(device=d, dtype=t)(_q(d, t)),
    "Shaw_score_bias": lambda d, t: ShawRelativePosition(8, 2).to(device=d, dtype=t)(_q(d, t)),
    "Shaw_value_bias": lambda d, t: ShawRelativePosition(8, 2).to(device=d, dtype=t).value_bias(
        torch.full((2, 3, 5, 5), 0.2, device=d, dtype=t), torch.arange(5, device=d), torch.arange(5, device=d)),
    "relative_shift": lambda d, t: relative_shift(torch.ones(2, 4, 7, device=d, dtype=t)),
    "offset_scores": lambda d, t: offset_scores(torch.ones(2, 4, 8, device=d, dtype=t),
                                                torch.ones(7, 8, device=d, dtype=torch.float32)),
}
INTEGER_RESULTS = {"t5_relative_bucket", "relative_positions"}


@pytest.mark.parametrize("name", sorted(ON_DEVICE))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
def test_results_stay_on_the_callers_device_and_dtype(name, dtype, device):
    out = ON_DEVICE[name](device, dtype)
    assert out.device.type == device.type
    assert out.dtype == (torch.int64 if name in INTEGER_RESULTS else dtype)


def _other(device):
    return torch.device("meta" if device.type != "meta" else "cpu")


MIXED = [  # f(device, other): a call mixing two devices; the message names both parameters
    ("relative_positions", lambda d, o: relative_positions(torch.arange(3, device=d), torch.arange(3, device=o)),
     r"k_positions must be on q_positions' device"),
    ("T5 positions", lambda d, o: T5RelativeBias(3).to(d)(_q(d, torch.float32), torch.arange(5, device=o)),
     r"q_positions must be on the device of the tensor it indexes"),
    ("T5 weights", lambda d, o: T5RelativeBias(3).to(o)(_q(d, torch.float32)),
     r"relative_attention_bias must be on q's"),
    ("Shaw key positions", lambda d, o: ShawRelativePosition(8, 2).to(d)(
        _q(d, torch.float32), torch.arange(5, device=d), torch.arange(5, device=o)),
     r"k_positions must be on the device of the tensor it indexes"),
    ("Shaw tables", lambda d, o: ShawRelativePosition(8, 2).to(o)(_q(d, torch.float32)), r"key_table must be on q's"),
    ("Shaw value table", lambda d, o: ShawRelativePosition(8, 2).to(o).value_bias(
        torch.ones(1, 1, 2, 2, device=d), torch.arange(2, device=d), torch.arange(2, device=d)),
     r"value_table must be on probs' device"),
]


@pytest.mark.parametrize("call,pattern", [c[1:] for c in MIXED], ids=[c[0] for c in MIXED])
def test_tensors_on_two_devices_are_refused(call, pattern, device):
    with pytest.raises(ValueError, match=pattern):
        call(device, _other(device))


# ------------------------------------------------ small integer dtypes, int64 limits, bools (an independent probe)
SMALL_INTS = [torch.uint8, torch.int16, torch.int32]


@pytest.mark.parametrize("dtype", SMALL_INTS)
def test_small_integer_positions_count_like_int64(dtype):
    """key - query of uint8 5 and 3 is -2, not 254: positions are widened to int64 before subtracting."""
    q, k = torch.tensor([5], dtype=dtype), torch.tensor([3, 7], dtype=dtype)
    assert relative_positions(q, k).tolist() == [[[-2, 2]]]
    t5 = T5RelativeBias(2, bidirectional=True)
    q4 = torch.zeros(1, 2, 1, 8)
    torch.testing.assert_close(t5(q4, q, k), t5(q4, q.long(), k.long()), rtol=0, atol=0)
    shaw = ShawRelativePosition(8, 2)
    torch.testing.assert_close(shaw.score_bias(q4[:, :1], q, k), shaw.score_bias(q4[:, :1], q.long(), k.long()))


@pytest.mark.parametrize("q, k", [([-1], [2 ** 63 - 1]), ([-(2 ** 62)], [2 ** 62]), ([0], [2 ** 53 + 1])])
def test_positions_past_2_to_53_are_refused_not_overflowed(q, k):
    with pytest.raises(ValueError, match=r"positions must lie within \+-2\*\*53"):
        relative_positions(torch.tensor(q), torch.tensor(k))


def test_positions_at_2_to_53_still_subtract_exactly():
    assert relative_positions(torch.tensor([-(2 ** 53)]), torch.tensor([2 ** 53])).item() == 2 ** 54


@pytest.mark.parametrize("call, name", [(lambda: ShawRelativePosition(8, 2, values="no"), "values"),
                                        (lambda: T5RelativeBias(2, bidirectional=1), "bidirectional"),
                                        (lambda: t5_relative_bucket(torch.tensor([1]), bidirectional="yes"),
                                         "bidirectional")])
def test_flags_must_be_real_bools(call, name):
    with pytest.raises(TypeError, match=rf"{name} must be a bool"):
        call()


def test_t5_called_with_a_non_tensor_says_both_forms():
    import numpy as np
    with pytest.raises(TypeError, match=r"t5\(q_len, k_len\).*q a torch.Tensor"):
        T5RelativeBias(4)(np.zeros((1, 4, 3, 8)))


@pytest.mark.parametrize("shape", [(0, 5), (3, 0), (0, 0)])
def test_diagonal_spread_of_an_empty_matrix_is_zero(shape):
    assert diagonal_spread(torch.zeros(shape)) == 0.0


def test_t5_shares_one_bias_table_but_a_table_per_layer_is_a_valid_design():
    """Notebook 05, common mistakes: T5 learns one relative-attention bias table (layer 0 of each stack) and
    every layer reuses it, so a table per layer is a mistake when reproducing T5; elsewhere it is a design
    choice, e.g. Swin Transformer learns a relative-position bias table in every block."""
    from transformers import SwinConfig, SwinModel, T5Model
    t5 = T5Model(T5Config(vocab_size=10, d_model=8, d_kv=4, d_ff=8, num_layers=3, num_decoder_layers=3, num_heads=2))
    tables = [name for name, _ in t5.named_parameters() if "relative_attention_bias" in name]
    assert sorted(tables) == ["decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                              "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
    swin = SwinModel(SwinConfig(image_size=16, patch_size=2, embed_dim=8, depths=[2, 2], num_heads=[1, 2],
                                window_size=2))
    swin_tables = [name for name, _ in swin.named_parameters() if "relative_position_bias_table" in name]
    assert len(swin_tables) == 2 + 2  # one per block


def test_t5s_code_computes_memory_minus_context_position():
    """Notebook 09 (both editions) quotes T5's relative position as `memory_position - context_position`,
    key - query: the course's sign. Read off the installed transformers' T5Attention."""
    import inspect

    assert "relative_position = memory_position - context_position" in inspect.getsource(T5Attention.compute_bias)


@pytest.mark.parametrize("T", [1, 2, 3, 8, 33])
def test_relative_shift_puts_offset_j_minus_i_at_i_j(T):
    """Column c of row i holds 1000 i + c; after the shift, entry (i, j) must be column (j - i) + T - 1."""
    i = torch.arange(T, dtype=torch.float64)[:, None]
    per_offset = 1000 * i + torch.arange(2 * T - 1, dtype=torch.float64)             # (T, 2T - 1)
    j = torch.arange(T, dtype=torch.float64)
    assert torch.equal(relative_shift(per_offset), 1000 * i + (j - i) + T - 1)
    assert torch.equal(relative_shift(per_offset[None, None]), relative_shift(per_offset)[None, None])


@pytest.mark.parametrize("T", [1, 2, 5, 16])
def test_offset_scores_shift_equals_the_pairwise_gather_and_a_loop(T):
    """Notebook 05, Transformer-XL: the shift gives the same scores as the (T, T, d) form, which is the formula."""
    g = torch.Generator().manual_seed(T)
    q = torch.randn(2, 3, T, 6, generator=g, dtype=torch.float64)
    offset_keys = torch.randn(2 * T - 1, 6, generator=g, dtype=torch.float64)          # rows r = -(T-1) .. T-1
    fast, slow = offset_scores(q, offset_keys), offset_scores(q, offset_keys, shift=False)
    loop = torch.tensor([[[[float(q[b, h, i] @ offset_keys[(j - i) + T - 1]) for j in range(T)] for i in range(T)]
                          for h in range(3)] for b in range(2)], dtype=torch.float64)
    torch.testing.assert_close(fast, loop, rtol=0, atol=1e-12)
    torch.testing.assert_close(slow, loop, rtol=0, atol=1e-12)
    assert fast.shape == (2, 3, T, T)


def test_offset_scores_are_a_function_of_the_query_and_j_minus_i():
    """With the same q in every row, the scores depend on j - i only (Toeplitz); swapping two offset rows
    moves exactly the pairs at those offsets: the shift does not mix up offsets."""
    T = 6
    q = torch.randn(6, dtype=torch.float64).expand(T, 6)
    offset_keys = torch.randn(2 * T - 1, 6, dtype=torch.float64)
    assert diagonal_spread(offset_scores(q, offset_keys)) < 1e-12
    swapped = offset_keys.clone()
    swapped[[T - 2, T]] = offset_keys[[T, T - 2]]                                       # rows of r = -1 and r = +1
    moved = offset_scores(q, swapped) != offset_scores(q, offset_keys)
    r = relative_positions(torch.arange(T), torch.arange(T))[0]
    assert torch.equal(moved, r.abs() == 1)


def test_offset_scores_do_not_modify_their_inputs():
    q, offset_keys = torch.randn(4, 3), torch.randn(7, 3)
    q0, k0 = q.clone(), offset_keys.clone()
    offset_scores(q, offset_keys)
    assert torch.equal(q, q0) and torch.equal(offset_keys, k0)


@pytest.mark.parametrize("call,pattern", [
    (lambda: relative_shift(torch.ones(3, 6)), r"per_offset must have shape \(\.\.\., T, 2T - 1\)"),
    (lambda: relative_shift(torch.ones(5)), r"per_offset must have shape"),
    (lambda: relative_shift(torch.ones(0, 0)), r"per_offset must have shape"),
    (lambda: relative_shift(torch.ones(3, 5, dtype=torch.int64)), r"per_offset"),
    (lambda: offset_scores(torch.ones(4, 3), torch.ones(8, 3)),
     r"offset_keys must have shape \(2T - 1, d\) = \(7, 3\)"),
    (lambda: offset_scores(torch.ones(3), torch.ones(5, 3)), r"q must have shape \(\.\.\., T, d\)"),
    (lambda: offset_scores(torch.ones(4, 3), torch.ones(7, 3), shift=1), r"shift"),
])
def test_relative_shift_bad_input_is_named(call, pattern):
    with pytest.raises((ValueError, TypeError), match=pattern):
        call()


def test_relative_shift_compiles_as_one_graph():
    fn = torch.compile(offset_scores, fullgraph=True, backend="eager")
    q, offset_keys = torch.randn(2, 5, 4), torch.randn(9, 4)
    torch.testing.assert_close(fn(q, offset_keys), offset_scores(q, offset_keys, shift=False))


def test_t5_position_bias_lives_in_the_first_layer_of_each_stack_and_cross_attention_has_none():
    """Notebook 05: T5 has one bias table per stack (encoder; decoder self-attention), and the other layers of
    the stack use it; cross-attention adds no position bias. What Hugging Face's T5 DOES, not its attributes:
    (1) with every W_q and W_k zeroed, every score is the position bias alone, so each layer's attention
    weights must equal softmax(first layer's table[bucket(j - i)]); (2) cross-attention weights follow a
    permutation of the encoder states column for column: nothing in them depends on where a key stands."""
    from transformers import T5Model
    torch.manual_seed(0)
    config = T5Config(vocab_size=10, d_model=8, d_kv=4, d_ff=8, num_layers=3, num_decoder_layers=3, num_heads=2,
                      relative_attention_num_buckets=8, relative_attention_max_distance=16, dropout_rate=0.0)
    model = T5Model(config).double().eval()
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, p in params.items():
            if name.endswith(("SelfAttention.q.weight", "SelfAttention.k.weight")):
                p.zero_()
    ids = torch.tensor([[1, 2, 3, 4, 5, 6]])
    with torch.no_grad():
        out = model(input_ids=ids, decoder_input_ids=ids, output_attentions=True)
    rel = relative_positions(torch.arange(6), torch.arange(6))[0]
    for stack, weights, bidirectional in (("encoder", out.encoder_attentions, True),
                                          ("decoder", out.decoder_attentions, False)):
        table = params[f"{stack}.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]  # (buckets, heads)
        bias = table[t5_relative_bucket(rel, bidirectional=bidirectional, num_buckets=8, max_distance=16)]
        bias = bias.permute(2, 0, 1)                                                     # (heads, T, T)
        if not bidirectional:
            bias = bias.masked_fill(rel > 0, float("-inf"))
        for layer, w in enumerate(weights):                                              # every layer of the stack
            torch.testing.assert_close(w[0], bias.softmax(-1), msg=f"{stack} layer {layer}")
    with torch.no_grad():
        encoded = model.encoder(input_ids=ids).last_hidden_state
        perm = torch.tensor([3, 0, 5, 1, 4, 2])
        cross = model.decoder(input_ids=ids, encoder_hidden_states=encoded, output_attentions=True).cross_attentions
        cross_p = model.decoder(input_ids=ids, encoder_hidden_states=encoded[:, perm],
                                output_attentions=True).cross_attentions
    for layer, (w, w_p) in enumerate(zip(cross, cross_p)):
        torch.testing.assert_close(w_p, w[..., perm], msg=f"cross-attention layer {layer}")
    tables = sorted(name for name in params if "relative_attention_bias" in name)
    assert tables == ["decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                      "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"]
