"""Inference-time changes to a model trained with RoPE, no training: each is an encoding that replaces the
model's RotaryEmbedding (`model.replace_encoding(ReRoPE(model.encoding, window=...))`) and keeps its frequencies,
layout and partial rotation. Not registered in model.ENCODINGS: they are for evaluation, not for training.

Distances are d = i - j >= 0 for query position i and key position j (the course's relative position is
r = j - i = -d). RoPE's score depends on d alone (posenc_lib.rope); these methods change which d a score uses:

    ReRoPE (Su 2023, kexue.fm/archives/9708)        d                    if d < w,   w           otherwise
    Leaky ReRoPE (same post)                        d                    if d < w,   w + (d - w) / k  otherwise
    Self-Extend (Jin et al. 2024, arXiv 2401.01325) d                    if d < W,
                                                    (i // G + W - W // G) - j // G              otherwise
    log-n scaling (Su 2021, kexue.fm/archives/8823) every score of query i times max(1, log(i + 1) / log(L))

ReRoPE, Leaky ReRoPE and Self-Extend compute two score matrices (RoPE at two position schemes) and keep, for each
(query, key), the one its distance calls for: they rotate q and k themselves inside `edit_scores`, so a KV cache
holds the keys unrotated (rotate_qk stays the identity) and every step rotates them again.

Checked against the authors' code:
- ReRoPE / Leaky ReRoPE: bojone/rerope, rerope_patch.py and leaky_rerope_patch.py: the far scores rotate the
  query at position w and leave the key unrotated (ReRoPE), or rotate q at (i + w (k - 1)) / k and the key at j / k
  (Leaky, a linear scaling of factor k), merged by |i - j| < w. Both patches also scale the query by
  max(1, log(i + 1) / log(L_train)), the log-n factor below: here it is an option (`log_n_length`), off by default.
- Self-Extend: datamllab/LongLM, self_extend_patch/Llama.py `self_extend_forward`: neighbour scores at the
  normal positions for i - j < W (group_size_2), grouped ones past it with the query at i // G + W - W / G and the
  key at j // G (G = group_size_1). With G dividing W the two meet at the window's edge: d = W gives W in both.
  The authors' code writes the shift W - W / G in floating point (a fractional position when G does not divide W)
  and turns it off for a whole sequence shorter than W (where no score is grouped anyway); here it is W - W // G,
  an integer, and always on. Its optional log scaling (`scale_base`) is the same log-n factor.
- log-n: kexue.fm/archives/8823 derives a softmax scale proportional to log n (n: the number of tokens attended)
  from keeping the attention's entropy unchanged with the length; the form used by the author's own ReRoPE code
  (and Qwen's `logn_attn`) is the factor max(1, log(n) / log(L)) with n = i + 1 for a causal query at position i
  and L the training length: nothing changes within the training length.
"""
from __future__ import annotations

import math

import torch

from . import _checks
from .attention import PositionalEncoding, ScoreInputs, _scores
from .rope import RotaryEmbedding, _over_heads, _positions, _rotate_slice


def log_n_factor(q_positions: torch.Tensor, train_len: int) -> torch.Tensor:
    """max(1, log(i + 1) / log(train_len)) for each query position i: (Tq,) or (B, Tq) float64 (float32 where the
    device has no float64), on the positions' device. train_len >= 2 (log 1 = 0)."""
    q_positions = _checks.position_values("q_positions", q_positions)
    train_len = _training_length("train_len", train_len)
    work = _checks.angle_dtype(q_positions.device)
    return (torch.log1p(q_positions.to(work)) / math.log(train_len)).clamp(min=1.0)


def _scaled_rows(scores: torch.Tensor, q_positions: torch.Tensor, train_len: int | None) -> torch.Tensor:
    """scores (B, H, Tq, Tk), each query's row times log_n_factor (train_len None: unchanged)."""
    if train_len is None:
        return scores
    factor = log_n_factor(q_positions, train_len).to(scores.dtype)
    factor = factor[None] if factor.dim() == 1 else factor                      # (B or 1, Tq)
    return scores * factor[:, None, :, None]


def _check_rope(rope) -> RotaryEmbedding:
    if not isinstance(rope, RotaryEmbedding):
        raise TypeError(f"rope must be the trained model's posenc_lib RotaryEmbedding (model.encoding), got "
                        f"{type(rope).__name__}")
    return rope


def _training_length(name: str, value) -> int:
    """A training length L >= 2 for the log-n factor (it divides by log L, and log 1 = 0)."""
    value = _checks.positive_int(name, value)
    if value < 2:
        raise ValueError(f"{name} must be >= 2 (the training length: the log-n factor divides by its log), "
                         f"got {value}")
    return value


class _TwoSchemes(PositionalEncoding):
    """Two RoPE score matrices merged by distance: `near` (the positions as they are) where i - j < window, `far`
    (the subclass's positions, `far_positions`) elsewhere. edit_scores only; q and k arrive unrotated."""

    def __init__(self, rope: RotaryEmbedding, window: int, log_n_length: int | None):
        super().__init__()
        self.rope = _check_rope(rope)
        self.window = _checks.positive_int("window", window)
        self.log_n_length = None if log_n_length is None else _training_length("log_n_length", log_n_length)

    def far_positions(self, q_positions: torch.Tensor, k_positions: torch.Tensor) -> tuple:
        """The (possibly fractional) positions of the far scheme: floating tensors of the positions' shapes."""
        raise NotImplementedError

    def _rotated_at(self, x: torch.Tensor, positions: torch.Tensor, ints: tuple) -> torch.Tensor:
        """x (B, H, T, hd) rotated by the model's RoPE at floating `positions` ((T,) or (B, T)), as
        RotaryEmbedding rotates at integer ones (`ints`: the integer positions of the call, for its frequencies)."""
        inv_freq, attention_factor = self.rope._frequencies(x.device, *ints)
        work = _checks.angle_dtype(x.device)
        angles = positions.to(work).unsqueeze(-1) * inv_freq.to(work)                  # (..., T, r/2)
        own = _checks.compute_dtype(x.dtype)
        cos = _over_heads((angles.cos() * attention_factor).to(own), x, positions)
        sin = _over_heads((angles.sin() * attention_factor).to(own), x, positions)
        return _rotate_slice(x, cos, sin, self.rope.layout)

    def edit_scores(self, scores: torch.Tensor, inputs: ScoreInputs) -> torch.Tensor:
        q, k = inputs.q, inputs.k
        q_positions = _positions(inputs.q_positions, q, "q_positions")
        k_positions = _positions(inputs.k_positions, k, "k_positions")
        near = _scores(*self.rope.rotate_qk(q, k, q_positions, k_positions))               # (B, H, Tq, Tk)
        q_far, k_far = self.far_positions(q_positions, k_positions)
        ints = (q_positions, k_positions)
        far = _scores(self._rotated_at(q, q_far, ints), self._rotated_at(k, k_far, ints))
        distance = q_positions[..., :, None] - k_positions[..., None, :]                # (Tq, Tk) or (B, Tq, Tk)
        distance = distance if distance.dim() == 3 else distance[None]
        merged = torch.where((distance < self.window)[:, None], near, far)
        return _scaled_rows(merged, q_positions, self.log_n_length).to(scores.dtype)


class ReRoPE(_TwoSchemes):
    """ReRoPE (k None) or Leaky ReRoPE (k > 1) on a trained model's RoPE: ReRoPE(rope, window, k=None,
    log_n_length=None). Within `window` tokens RoPE as trained; past it every key scored as if `window` tokens
    away (ReRoPE), or w + (d - w) / k away (Leaky). log_n_length: the training length, to also scale each query's
    scores by log_n_factor (as the author's patches do); None: no scaling."""

    def __init__(self, rope: RotaryEmbedding, window: int, *, k: float | None = None,
                 log_n_length: int | None = None):
        super().__init__(rope, window, log_n_length)
        self.k = None if k is None else _checks.positive_float("k", k, minimum=1.0)

    def far_positions(self, q_positions, k_positions):
        work = _checks.angle_dtype(q_positions.device)
        if self.k is None:                                                # q at w, k at 0: every distance is w
            return torch.full_like(q_positions, self.window, dtype=work), torch.zeros_like(k_positions, dtype=work)
        q_far = (q_positions.to(work) + self.window * (self.k - 1)) / self.k    # (i + w (k - 1)) / k - j / k
        return q_far, k_positions.to(work) / self.k                             # = w + (d - w) / k

    def extra_repr(self):
        return f"window={self.window}, k={self.k}, log_n_length={self.log_n_length}"


class SelfExtend(_TwoSchemes):
    """Self-Extend on a trained model's RoPE: SelfExtend(rope, window, group, log_n_length=None). Keys within
    `window` tokens at their true distance; farther ones at grouped positions, the query at i // G + W - W // G and
    the key at j // G, so a distance d >= W reads about W + (d - W) / G."""

    def __init__(self, rope: RotaryEmbedding, window: int, group: int, *, log_n_length: int | None = None):
        super().__init__(rope, window, log_n_length)
        self.group = _checks.positive_int("group", group)

    def far_positions(self, q_positions, k_positions):
        work = _checks.angle_dtype(q_positions.device)
        shift = self.window - self.window // self.group
        return ((q_positions // self.group) + shift).to(work), (k_positions // self.group).to(work)

    def extra_repr(self):
        return f"window={self.window}, group={self.group}, log_n_length={self.log_n_length}"


class LogNScaling(PositionalEncoding):
    """A trained model's RoPE with log-n attention scaling: LogNScaling(rope, train_len). rotate_qk is the RoPE's;
    edit_scores multiplies the scores of the query at position i by max(1, log(i + 1) / log(train_len))."""

    def __init__(self, rope: RotaryEmbedding, train_len: int):
        super().__init__()
        self.rope = _check_rope(rope)
        self.train_len = _training_length("train_len", train_len)

    def rotate_qk(self, q, k, q_positions=None, k_positions=None):
        return self.rope.rotate_qk(q, k, q_positions, k_positions)

    def edit_scores(self, scores: torch.Tensor, inputs: ScoreInputs) -> torch.Tensor:
        q_positions = _positions(inputs.q_positions, inputs.q, "q_positions")
        return _scaled_rows(scores, q_positions, self.train_len)

    def extra_repr(self):
        return f"train_len={self.train_len}"
