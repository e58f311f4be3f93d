"""ALiBi (Press, Smith & Lewis 2022): no position vectors at all, a linear penalty on the scores.

    bias[h, i, j] = -m_h * |i - j|        (query i, key j; under a causal mask only j <= i matters)

Slopes: for n a power of two, m_h = 2 ** (-8 h / n), h = 1..n (a geometric sequence starting and
stepping at 2 ** (-8/n)). For other n, take the n' = 2**floor(log2 n) slopes of n', then every
other slope of 2n', starting with the first (2 ** (-8 h / (2 n')), h = 1, 3, 5, ...; the paper's
`[0::2]`) until there are n.

Under a causal mask (j <= i), -m*(i-j) = m*j - m*i: the term -m*i is a constant per row and the
softmax ignores per-row constants, which is why implementations may add the same row
m*[0, 1, ..., T-1] to every query. Without the causal mask the two differ (|i-j| != i-j for j > i).
"""
from __future__ import annotations

import math

import torch

from . import _checks
from .attention import PositionalEncoding, check_query
from .relative import relative_positions


def _slope_values(num_heads: int) -> list[float]:
    closest = 2 ** math.floor(math.log2(num_heads))
    slopes = [2.0 ** (-8.0 * h / closest) for h in range(1, closest + 1)]
    extra = [2.0 ** (-8.0 * h / (2 * closest)) for h in range(1, 2 * closest, 2)]
    return slopes + extra[: num_heads - closest]


def alibi_slopes(num_heads: int, *, device=None, dtype=None) -> torch.Tensor:
    """The (num_heads,) slopes m_h, h = 1 .. num_heads: 2 ** (-8h/n) for n = num_heads a power of two;
    otherwise the slopes of p = 2**floor(log2 n), then 2 ** (-8h/(2p)) for h = 1, 3, 5, ... until
    there are n (the paper's rule). Evaluated in float64 and rounded once (float32 unless `dtype`),
    so each slope is the correctly rounded value of the formula -- HF BLOOM's float32 powers drift
    from it by a few ulps for n > 10 (see tests/test_alibi.py). `dtype`: a floating dtype."""
    num_heads = _checks.positive_int("num_heads", num_heads)
    dtype = _checks.float_dtype("dtype", dtype)
    return torch.tensor(_slope_values(num_heads), device=device, dtype=torch.float64).to(dtype or torch.float32)


def alibi_bias(num_heads: int, q_len: int, k_len: int | None = None, *, device=None, dtype=None) -> torch.Tensor:
    """The (num_heads, q_len, k_len) score bias B[h, row, j] = -m_h * |i - j|, i = k_len - q_len + row.

    Queries are the last q_len of the k_len key positions (q_len < k_len is cached decoding);
    k_len defaults to q_len. The bias is symmetric in i - j, so without a causal mask keys after the
    query are penalised too; under a causal mask it equals BLOOM's per-row-shifted m * j (the
    softmax ignores the per-row constant). Float32 unless `dtype` (a floating dtype), on `device`.
    """
    dtype = _checks.float_dtype("dtype", dtype)
    q_len = _checks.positive_int("q_len", q_len, allow_zero=True)
    k_len = q_len if k_len is None else _checks.positive_int("k_len", k_len, allow_zero=True)
    if q_len > k_len:
        raise ValueError(f"q_len must be <= k_len (queries are the last q_len positions), got {q_len} > {k_len}")
    slopes = alibi_slopes(num_heads, device=device, dtype=torch.float64 if dtype == torch.float64 else torch.float32)
    i = torch.arange(k_len - q_len, k_len, device=device)
    j = torch.arange(k_len, device=device)
    distance = (j[None, :] - i[:, None]).abs().to(slopes.dtype)
    return (-slopes[:, None, None] * distance).to(dtype or torch.float32)


class ALiBi(PositionalEncoding):
    """ALiBi as an encoding for MultiHeadAttention: score bias -m_h * |key - query|.

    ALiBi(num_heads)(q, q_positions=None, k_positions=None) -> (batch or 1, num_heads, Tq, Tk), the
    bias added to the scores of q (batch, num_heads, Tq, head_dim); keys at the query positions
    unless given."""

    def __init__(self, num_heads: int):
        super().__init__()
        self.num_heads = _checks.positive_int("num_heads", num_heads)

    @classmethod
    def from_config(cls, config):
        return cls(config.num_heads)

    def score_bias(self, q, q_positions, k_positions):
        q_positions, k_positions = check_query(q, q_positions, k_positions, owner="ALiBi", num_heads=self.num_heads)
        work = _checks.angle_dtype(q.device)  # float64: exact slopes and distances up to 2**53, rounded once
        slopes = alibi_slopes(self.num_heads, device=q.device, dtype=work)
        distance = relative_positions(q_positions, k_positions).abs().to(work)  # (B, Tq, Tk)
        return (-slopes[None, :, None, None] * distance[:, None]).to(q.dtype)

    def extra_repr(self):
        return f"num_heads={self.num_heads}"
