"""T5 buckets (against a plain-Python reading of the rule and EXACTLY against Hugging Face's T5) and Shaw's
clipped relative positions (against explicit loops). Sign convention: relative = key - query."""
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers import T5Config
from transformers.models.t5.modeling_t5 import T5Attention

from conftest import ref_t5_bucket
from posenc_lib import MultiHeadAttention, ShawRelativePosition, T5RelativeBias, attention, relative_positions
from posenc_lib import t5_relative_bucket

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
        pytest.skip("invalid setting (tested in test_errors)")
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


def test_shaw_in_multihead_attention_sees_only_relative_positions():
    torch.manual_seed(2)
    mha = MultiHeadAttention(16, 2, encoding=ShawRelativePosition(8, 3))
    x = torch.randn(2, 9, 16)
    out = mha(x)
    torch.testing.assert_close(mha(x, torch.arange(100, 109)), out, atol=1e-6, rtol=0)  # shift: same output
    assert not torch.allclose(mha(x, torch.arange(9).flip(0)), out, atol=1e-4)  # reversed order: different
