"""ALiBi (Press, Smith & Lewis 2022): no position vectors at all, a linear penalty on the scores.

    bias[h, i, j] = -m_h * |i - j|        (query i, key j)

Which form is whose. The paper trains causal language models only and writes the bias as a row,
softmax(q_i K^T + m * [-(i-1), ..., -2, -1, 0]) (1-indexed), i.e. m * r = -m * (i - j) for the keys
j <= i, with r = key - query the course's relative position. The symmetric -m * |i - j| used here
is a later extension for encoders, which need keys after the query too: the first author's own
suggestion in the repository's issue #5 (ofirpress/attention_with_linear_biases, Nov 2021), and
the form FlashAttention's `alibi_slopes` argument adds. Under a causal mask the two are the same.

Slopes. The paper gives, for n heads, the geometric sequence that starts at 2 ** (-8/n) and steps
by it, m_h = 2 ** (-8 h / n), h = 1..n; its models all have a power-of-two number of heads. For an
n that is not a power of two, the authors' code (`get_slopes` in fairseq/models/transformer.py of
that repository, whose comment calls it a workaround that keeps the power-of-two properties) does NOT
use 2 ** (-8h/n): it takes the n' = 2**floor(log2 n) slopes of n' heads, then every other slope of
2n' heads, starting with the first (2 ** (-8 h / (2 n')), h = 1, 3, 5, ...; its `[0::2]`) until there
are n. BLOOM (Hugging Face) does the same; so does this module.

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
    """The (num_heads,) slopes m_h, h = 1 .. num_heads: 2 ** (-8h/n) for n = num_heads a power of two
    (the paper); otherwise the slopes of p = 2**floor(log2 n), then 2 ** (-8h/(2p)) for h = 1, 3, 5, ...
    until there are n (the authors' code, `get_slopes`, not the paper: see the module docstring). Evaluated in
    float64 and rounded once (float32 unless `dtype`), so each slope is the correctly rounded value of the
    formula -- HF BLOOM's float32 powers drift from it by a few ulps for n > 10 (see tests/test_alibi.py).
    `dtype`: a floating dtype."""
    num_heads = _checks.positive_int("num_heads", num_heads)
    dtype = _checks.float_dtype("dtype", dtype)
    return torch.tensor(_slope_values(num_heads), device=device, dtype=torch.float64).to(dtype or torch.float32)


def alibi_bias(num_heads: int, q_len: int, k_len: int | None = None, *, device=None, dtype=None) -> torch.Tensor:
    """The (num_heads, q_len, k_len) score bias B[h, row, j] = -m_h * |i - j|, i = k_len - q_len + row.

    Queries are the last q_len of the k_len key positions (q_len < k_len is cached decoding);
    k_len defaults to q_len. The bias is symmetric in i - j (the encoder extension; the paper's causal
    form only has keys j <= i), so without a causal mask keys after the query are penalised too; under
    a causal mask it equals the paper's form and BLOOM's per-row-shifted m * j (the softmax ignores the
    per-row constant). Float32 unless `dtype` (a floating dtype), on `device`.
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
    """ALiBi as an encoding for MultiHeadAttention: score bias -m_h * |key - query| (the symmetric form; under
    a causal mask, the paper's).

    ALiBi(num_heads)(q, q_positions=None, k_positions=None) -> (batch or 1, num_heads, Tq, Tk), the
    bias added to the scores of q (batch, num_heads, Tq, head_dim); keys at the query positions
    unless given."""

    def __init__(self, num_heads: int):
        super().__init__()
        self.num_heads = _checks.positive_int("num_heads", num_heads)
        self._slopes: dict = {}  # (device, dtype) -> slopes: made once, so a forward never copies from the host

    @classmethod
    def from_config(cls, config):
        return cls(config.num_heads)

    def score_bias(self, q, q_positions, k_positions):
        q_positions, k_positions = check_query(q, q_positions, k_positions, owner="ALiBi", num_heads=self.num_heads)
        work = _checks.angle_dtype(q.device)  # float64: exact slopes and distances up to 2**53, rounded once
        key = (q.device, work)
        if key not in self._slopes:
            self._slopes[key] = alibi_slopes(self.num_heads, device=q.device, dtype=work)
        slopes = self._slopes[key]
        distance = relative_positions(q_positions, k_positions).abs().to(work)  # (B, Tq, Tk)
        return (-slopes[None, :, None, None] * distance[:, None]).to(q.dtype)

    def extra_repr(self):
        return f"num_heads={self.num_heads}"
