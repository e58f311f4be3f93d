"""Relative position biases: T5's log buckets, Shaw et al.'s clipped relative embeddings, and
Transformer-XL's relative shift (scores against 2T - 1 offset embeddings, shifted into (T, T)).

Sign convention (both): relative_position = key position - query position (T5's
"memory_position - context_position"), so a key to the left of the query (the past) has a negative
relative position.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from . import _checks
from .attention import PositionalEncoding, check_probs, check_query


def _bucket_settings(bidirectional, num_buckets, max_distance) -> tuple[int, int]:
    """Checks T5's settings; returns (n, e): the buckets per side and how many of them are exact."""
    _checks.boolean("bidirectional", bidirectional)
    num_buckets = _checks.positive_int("num_buckets", num_buckets)
    max_distance = _checks.positive_int("max_distance", max_distance)
    n = num_buckets // 2 if bidirectional else num_buckets
    if n < 2:
        raise ValueError(f"num_buckets must be >= {4 if bidirectional else 2} "
                         f"(bidirectional={bidirectional}), got {num_buckets}")
    if max_distance <= n // 2:
        raise ValueError(f"max_distance must be > {n // 2} (the exact buckets), got {max_distance}")
    return n, n // 2


def t5_relative_bucket(relative_position: torch.Tensor, *, bidirectional: bool = True, num_buckets: int = 32,
                       max_distance: int = 128) -> torch.Tensor:
    """T5's bucket index for each relative position r = key position - query position (T5's
    "memory_position - context_position"); any integer shape -> same shape, int64, same device.

    bidirectional=True (encoder): n = num_buckets/2 buckets per side, r > 0 (key after the query)
    adds n; the distance is d = |r|. bidirectional=False (decoder): n = num_buckets, d = max(-r, 0),
    so every future key (r > 0) shares bucket 0 (the causal mask hides them anyway). Then, with
    e = n/2 exact buckets:
        bucket(d) = d                                                       if d < e
                  = min(n - 1, e + floor(log(d/e) / log(max_distance/e) * (n - e)))   otherwise
    i.e. one bucket per small distance, log-spaced buckets up to max_distance, everything farther
    in the last bucket. The log is taken in float32 as in T5 and Hugging Face, so the boundaries
    (where the expression is an exact integer) match theirs exactly. Every int64 works: r = -2**63,
    whose |r| does not fit in int64, counts as -(2**63 - 1) (both are far past any max_distance).
    """
    relative_position = _checks.int_tensor("relative_position", relative_position)
    n, max_exact = _bucket_settings(bidirectional, num_buckets, max_distance)
    r = relative_position.long().clamp(min=-torch.iinfo(torch.int64).max)  # so that -r and |r| fit in int64
    bucket = torch.zeros_like(r)
    if bidirectional:
        bucket = bucket + (r > 0).long() * n
        distance = r.abs()
    else:
        distance = (-r).clamp(min=0)
    log_ratio = torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact)
    large = (max_exact + (log_ratio * (n - max_exact)).long()).clamp(max=n - 1)
    return bucket + torch.where(distance < max_exact, distance, large)


def relative_positions(q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
    """key - query for every pair: (Tq,), (Tk,) -> (1, Tq, Tk); batched (B, T) -> (B, Tq, Tk).

    out[b, i, j] = k_positions[j] - q_positions[i]: negative for keys before the query (the past).
    Both integer tensors on one device; batched ones must have the same batch or a batch of 1.
    """
    for name, t in (("q_positions", q_positions), ("k_positions", k_positions)):
        _checks.int_tensor(name, t)
        if t.dim() not in (1, 2):
            raise ValueError(f"{name} must have shape (seq,) or (batch, seq), got {tuple(t.shape)}")
    q_positions = _checks.position_values("q_positions", q_positions)  # int64, so k - q neither wraps nor overflows
    k_positions = _checks.position_values("k_positions", k_positions)
    _checks.same_device("q_positions", q_positions, k_positions=k_positions)
    q = q_positions if q_positions.dim() == 2 else q_positions[None]
    k = k_positions if k_positions.dim() == 2 else k_positions[None]
    if q.shape[0] != k.shape[0] and 1 not in (q.shape[0], k.shape[0]):
        raise ValueError(f"q_positions and k_positions must have the same batch or a batch of 1, got shapes "
                         f"{tuple(q_positions.shape)} and {tuple(k_positions.shape)}")
    return k[:, None, :] - q[:, :, None]


class T5RelativeBias(PositionalEncoding):
    """A learned scalar per (bucket, head), added to the attention scores.

    t5(q_len, k_len) -> (heads, q_len, k_len) for queries 0..q_len-1 and keys 0..k_len-1 (Hugging
    Face's compute_bias); t5(q, q_positions=None, k_positions=None) -> (batch or 1, heads, Tq, Tk),
    the score bias for q (batch, heads, Tq, head_dim), as every score-bias encoding.
    In T5 one such table per stack (encoder; decoder self-attention), held by the stack's first layer,
    is used by all the stack's layers, and cross-attention has none; pass the same module to every
    layer to do the same.
    """

    def __init__(self, num_heads: int, *, bidirectional: bool = True, num_buckets: int = 32, max_distance: int = 128):
        super().__init__()
        self.num_heads = _checks.positive_int("num_heads", num_heads)
        _bucket_settings(bidirectional, num_buckets, max_distance)  # validate the settings now
        self.bidirectional, self.num_buckets, self.max_distance = bidirectional, num_buckets, max_distance
        self.relative_attention_bias = nn.Embedding(num_buckets, self.num_heads)

    @classmethod
    def from_config(cls, config):
        """A causal (decoder) bias: TinyLM is a causal language model."""
        return cls(config.num_heads, bidirectional=False, num_buckets=config.num_buckets,
                   max_distance=config.max_distance)

    def _bias(self, relative: torch.Tensor) -> torch.Tensor:  # (B, Tq, Tk) -> (B, H, Tq, Tk)
        buckets = t5_relative_bucket(relative, bidirectional=self.bidirectional, num_buckets=self.num_buckets,
                                     max_distance=self.max_distance)
        return self.relative_attention_bias(buckets).permute(0, 3, 1, 2)

    def forward(self, *args, **kwargs):
        if (args and isinstance(args[0], torch.Tensor)) or "q" in kwargs:
            return super().forward(*args, **kwargs)  # t5(q, q_positions, k_positions): the protocol's call
        if len(args) + len(kwargs) != 2:
            raise TypeError("T5RelativeBias is called as t5(q_len, k_len) -> (heads, q_len, k_len), or as "
                            f"t5(q, q_positions=None, k_positions=None) with q a torch.Tensor; got {len(args)} "
                            f"positional argument(s) starting with {type(args[0]).__name__ if args else None}")
        return self.compute_bias(*args, **kwargs)

    def compute_bias(self, q_len: int, k_len: int) -> torch.Tensor:
        """(heads, q_len, k_len): the bias of queries 0..q_len-1 against keys 0..k_len-1."""
        q_len = _checks.positive_int("q_len", q_len, allow_zero=True)
        k_len = _checks.positive_int("k_len", k_len, allow_zero=True)
        device = self.relative_attention_bias.weight.device
        relative = relative_positions(torch.arange(q_len, device=device), torch.arange(k_len, device=device))
        return self._bias(relative)[0]

    def score_bias(self, q, q_positions, k_positions):
        q_positions, k_positions = check_query(q, q_positions, k_positions, owner="T5RelativeBias",
                                               num_heads=self.num_heads)
        _checks.same_device("q", q, relative_attention_bias=self.relative_attention_bias.weight)
        return self._bias(relative_positions(q_positions, k_positions)).to(q.dtype)

    def extra_repr(self):
        return (f"num_heads={self.num_heads}, bidirectional={self.bidirectional}, num_buckets={self.num_buckets}, "
                f"max_distance={self.max_distance}")


class ShawRelativePosition(PositionalEncoding):
    """Shaw, Uszkoreit & Vaswani (2018): learned vectors a^K_r, a^V_r for r = clip(key - query, -k, k).

        e_ij = q_i . (k_j + a^K_{ij}) / sqrt(d)   ->  score bias  q_i . a^K_{ij} / sqrt(d)
        z_i  = sum_j p_ij (v_j + a^V_{ij})        ->  value term  sum_j p_ij a^V_{ij}

    Shapes: q (B, H, Tq, d) -> bias (B, H, Tq, Tk); probs (B, H, Tq, Tk) -> value term (B, H, Tq, d).
    The (2k+1, d) tables are shared by the heads, as in the paper's sec. 3.3 and tensor2tensor.
    shaw(q, q_positions=None, k_positions=None) is the score bias (keys at the query positions unless given).

    Memory: gathering a^K_{ij} for every pair makes a (Tq, Tk, d) tensor (batch x that with per-row
    positions). Both terms here take the other order of the same sums instead: q . a^K_r for the
    2k+1 offsets r, (B, H, Tq, 2k+1), then picked per pair; and the probabilities summed per offset,
    (B, H, Tq, 2k+1), times a^V. Nothing of size Tq * Tk * d is made (notebook 05 measures both).
    """

    def __init__(self, head_dim: int, max_relative_position: int, *, values: bool = True):
        super().__init__()
        _checks.boolean("values", values)
        self.head_dim = _checks.positive_int("head_dim", head_dim)
        self.max_relative_position = _checks.positive_int("max_relative_position", max_relative_position,
                                                          allow_zero=True)
        size = 2 * self.max_relative_position + 1
        self.key_table = nn.Parameter(torch.randn(size, self.head_dim) * 0.02)
        self.value_table = nn.Parameter(torch.randn(size, self.head_dim) * 0.02) if values else None

    @classmethod
    def from_config(cls, config):
        return cls(config.d_model // config.num_heads, config.max_relative_position)

    def relative_index(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> torch.Tensor:
        """clip(key - query, -k, k) + k: rows of the tables, (B or 1, Tq, Tk)."""
        k = self.max_relative_position
        return relative_positions(q_positions, k_positions).clamp(-k, k) + k

    def score_bias(self, q, q_positions, k_positions):
        q_positions, k_positions = check_query(q, q_positions, k_positions, owner="ShawRelativePosition",
                                               head_dim=self.head_dim)
        _checks.same_device("q", q, key_table=self.key_table)
        B, H, Tq, _ = q.shape
        index = self.relative_index(q_positions, k_positions)                    # (B or 1, Tq, Tk): table rows
        per_offset = q @ self.key_table.to(q.dtype).T                            # (B, H, Tq, 2k+1): q_i . a^K_r
        index = index[:, None].expand(B, H, Tq, index.shape[-1])                  # (B, H, Tq, Tk)
        return per_offset.gather(-1, index) / math.sqrt(self.head_dim)            # q_i . a^K_{r_ij} / sqrt(d)

    def value_bias(self, probs, q_positions, k_positions):
        if self.value_table is None:
            return None
        q_positions, k_positions = check_probs(probs, q_positions, k_positions)
        _checks.same_device("probs", probs, value_table=self.value_table)
        B, H, Tq, Tk = probs.shape
        index = self.relative_index(q_positions, k_positions)[:, None].expand(B, H, Tq, Tk)  # table rows
        per_offset = probs.new_zeros(B, H, Tq, self.value_table.shape[0])       # (B, H, Tq, 2k+1)
        per_offset = per_offset.scatter_add(-1, index, probs)                    # sum of p_ij over j with r_ij = r
        return per_offset @ self.value_table.to(probs.dtype)                     # sum_r (...) a^V_r: (B, H, Tq, d)

    def extra_repr(self):
        return f"head_dim={self.head_dim}, max_relative_position={self.max_relative_position}"


def relative_shift(per_offset: torch.Tensor) -> torch.Tensor:
    """Transformer-XL's relative-shift trick (Dai et al. 2019, appendix B; `_rel_shift` in the authors'
    code), for T queries and T keys at positions 0..T-1 and every offset in both directions.

    per_offset (..., T, 2T - 1): per_offset[..., i, c] = the score of query i against the embedding of
    the relative position r = c - (T - 1), r = key - query running -(T-1) .. T-1 (the course's sign;
    Transformer-XL's R_{i-j} is R at -r). Returns (..., T, T) with
        out[..., i, j] = per_offset[..., i, (j - i) + (T - 1)],
    the score of query i against the offset of key j. Row i needs the columns T-1-i .. 2T-2-i: a window
    that slides one column left per row. Append one zero column, so that a row is 2T long; flattened,
    entry [i, c] sits at 2T*i + c, and the wanted one at 2T*i + j - i + T - 1 = (2T - 1)*i + j + (T - 1):
    rows of 2T - 1 starting at T - 1. So: drop the first T - 1 numbers, reshape to (T, 2T - 1), keep the
    first T columns. Reshapes and slices only: nothing of size T * T * d is made, and no index tensor.
    """
    _checks.float_tensor("per_offset", per_offset)
    if per_offset.dim() < 2 or per_offset.shape[-1] != 2 * per_offset.shape[-2] - 1 or not per_offset.shape[-2]:
        raise ValueError(f"per_offset must have shape (..., T, 2T - 1) with T >= 1 (scores of T queries against "
                         f"the 2T - 1 offsets), got {tuple(per_offset.shape)}")
    *batch, T, _ = per_offset.shape
    padded = torch.cat([per_offset, per_offset.new_zeros(*batch, T, 1)], dim=-1)       # (..., T, 2T)
    flat = padded.reshape(*batch, 2 * T * T)[..., T - 1:T - 1 + T * (2 * T - 1)]      # drop T - 1 numbers
    return flat.reshape(*batch, T, 2 * T - 1)[..., :T]                                 # (..., T, T)


def offset_scores(q: torch.Tensor, offset_keys: torch.Tensor, *, shift: bool = True) -> torch.Tensor:
    """q (..., T, d) against offset_keys (2T - 1, d), one key vector per relative position r = key - query,
    row r + T - 1 (r = -(T-1) .. T-1): the (..., T, T) scores out[..., i, j] = q_i . offset_keys[j - i + T - 1].
    Transformer-XL's terms (b) and (d) have this form, with offset_keys = W_{k,R} R and q + v for (d).

    shift=True: (..., T, 2T - 1) products, then `relative_shift`. shift=False: the slow form written as the
    formula reads, gathering a (T, T, d) tensor of keys, one per (query, key) pair (notebook 05 measures both).
    """
    _checks.float_tensor("q", q)
    _checks.float_tensor("offset_keys", offset_keys)
    _checks.boolean("shift", shift)
    _checks.same_device("q", q, offset_keys=offset_keys)
    if q.dim() < 2:
        raise ValueError(f"q must have shape (..., T, d), got {tuple(q.shape)}")
    T, d = q.shape[-2:]
    if offset_keys.shape != (2 * T - 1, d):
        raise ValueError(f"offset_keys must have shape (2T - 1, d) = ({2 * T - 1}, {d}) for q of shape "
                         f"{tuple(q.shape)}, got {tuple(offset_keys.shape)}")
    keys = offset_keys.to(q.dtype)
    if shift:
        return relative_shift(q @ keys.T)                                              # (..., T, 2T-1) -> (..., T, T)
    positions = torch.arange(T, device=q.device)
    pair_keys = keys[relative_positions(positions, positions)[0] + T - 1]              # (T, T, d): one per pair
    return torch.einsum("...id,ijd->...ij", q, pair_keys)


def diagonal_spread(scores: torch.Tensor) -> float:
    """max over offsets d of (max - min) of scores[m, m + d], for a (rows, cols) score matrix: zero
    exactly when scores[m, n] is a function of n - m alone (a Toeplitz matrix). Empty: 0.0.
    Needs values: a finite floating tensor, not on the meta device."""
    _checks.float_tensor("scores", scores)
    if scores.dim() != 2:
        raise ValueError(f"scores must be a 2-D (rows, cols) matrix, got shape {tuple(scores.shape)}")
    if scores.device.type == "meta":
        raise ValueError("scores must hold values to measure, got a tensor on the meta device")
    _checks.finite_tensor("scores", scores)
    rows, cols = scores.shape
    spread = 0.0
    if not scores.numel():
        return spread
    for d in range(-rows + 1, cols):
        diag = torch.diagonal(scores, offset=d)
        spread = max(spread, float(diag.max() - diag.min()))
    return spread
