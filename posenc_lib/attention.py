"""Scaled dot-product attention and the one protocol every positional encoding speaks.

An encoding can act in exactly four places, and `PositionalEncoding` has one hook for each; the
defaults do nothing, so an encoding overrides only the hook it needs. `MultiHeadAttention` calls the
three attention-side hooks unconditionally and `TinyLM` calls `add_to_input` once, before the first
block (no `if kind == ...` ladder anywhere); code that uses `MultiHeadAttention` on its own must call
`add_to_input` itself:

    add_to_input(x, positions)        x + P[positions]            sinusoidal, learned
    rotate_qk(q, k, q_pos, k_pos)     (R_m q, R_n k)              RoPE
    score_bias(q, q_pos, k_pos)       scores + B[i, j]            T5, Shaw, ALiBi
    value_bias(probs, q_pos, k_pos)   out + sum_j p_ij a_{j-i}    Shaw (value term)

With none of them overridden (`NoPE`), attention sees no order at all.
Shapes: q, k, v are (batch, heads, seq, head_dim); positions are (seq,) or (batch, seq), int64.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from . import _checks


def default_positions(x: torch.Tensor, seq_dim: int = -2) -> torch.Tensor:
    """0, 1, ..., seq-1 on x's device: the positions used when the caller gives none."""
    return torch.arange(x.shape[seq_dim], device=x.device)


def check_positions(positions, seq_len: int, name: str = "positions", *, device=None) -> torch.Tensor:
    """positions must be an integer tensor of shape (seq,) or (batch, seq) with seq == seq_len.

    With `device` (the device of the x they index), positions made elsewhere -- typically a bare
    torch.arange on the CPU -- are moved there, so every result stays on x's device.
    """
    positions = _checks.int_tensor(name, positions)
    if positions.dim() not in (1, 2) or positions.shape[-1] != seq_len:
        raise ValueError(
            f"{name} must have shape (seq,) or (batch, seq) with seq={seq_len} to fit x, "
            f"got shape {tuple(positions.shape)}"
        )
    if device is not None and positions.device != torch.device(device):
        positions = positions.to(device)
    return positions


class PositionalEncoding(nn.Module):
    """Base class: every hook defaults to 'no position information here'."""

    def add_to_input(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:  # (B, T, D)
        return x

    def rotate_qk(self, q, k, q_positions, k_positions):  # (B, H, T, hd) each
        return q, k

    def score_bias(self, q: torch.Tensor, q_positions, k_positions):  # -> broadcastable to (B, H, Tq, Tk)
        return None

    def value_bias(self, probs: torch.Tensor, q_positions, k_positions):  # -> (B, H, Tq, hd) or None
        return None


HOOKS = ("add_to_input", "rotate_qk", "score_bias", "value_bias")
HOOK_PLACES = {"add_to_input": "added to the input", "rotate_qk": "rotates q and k",
               "score_bias": "bias on the scores", "value_bias": "term on the values"}


def where_it_acts(encoding) -> list:
    """The PositionalEncoding hooks an encoding overrides (its class, read off the code, not a table)."""
    cls = encoding if isinstance(encoding, type) else type(encoding)
    if not issubclass(cls, PositionalEncoding):
        raise TypeError(f"encoding must be a PositionalEncoding (instance or class), got {cls.__name__}")
    return [h for h in HOOKS if getattr(cls, h) is not getattr(PositionalEncoding, h)]


class NoPE(PositionalEncoding):
    """No positional encoding: self-attention is then permutation-equivariant (unless causal)."""


def attention(q, k, v, *, bias=None, causal: bool = False, return_weights: bool = False):
    """softmax(q k^T / sqrt(d) + bias) v.

    q: (..., Tq, d), k: (..., Tk, d), v: (..., Tk, dv); bias broadcastable to (..., Tq, Tk), added
    to the scores before the softmax. `causal=True` masks key j > query i (queries are taken to be
    the last Tq of the Tk positions, so Tq < Tk works for cached decoding).
    Returns the output (..., Tq, dv), and the weights (..., Tq, Tk) too if `return_weights`.
    The softmax runs in float32 or better; the output comes back in q's dtype.
    """
    for name, t in (("q", q), ("k", k), ("v", v)):
        _checks.float_tensor(name, t)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share the last dimension, got {q.shape[-1]} and {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of positions, got {k.shape[-2]} and {v.shape[-2]}")
    work = _checks.compute_dtype(q.dtype)
    scores = q.to(work) @ k.to(work).transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., Tq, Tk)
    if bias is not None:
        scores = scores + bias.to(work)
    if causal:
        tq, tk = scores.shape[-2:]
        if tq > tk:
            raise ValueError(f"causal attention needs q_len <= k_len (queries are the last q_len of the k_len "
                             f"positions), got q_len={tq}, k_len={tk}")
        i = torch.arange(tk - tq, tk, device=q.device)[:, None]
        j = torch.arange(tk, device=q.device)[None, :]
        scores = scores.masked_fill(j > i, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = (weights @ v.to(work)).to(q.dtype)
    return (out, weights.to(q.dtype)) if return_weights else out


class MultiHeadAttention(nn.Module):
    """Multi-head self-attention over (batch, seq, d_model), with one positional encoding.

    The encoding's hooks are called in order: rotate q/k, add its score bias, add its value term.
    Input-added encodings (sinusoidal, learned) act before the block, in the model, so here they
    are no-ops; pass the same encoding object to every layer to share it (T5 shares its bias).
    """

    def __init__(self, d_model: int, num_heads: int, *, encoding: PositionalEncoding | None = None,
                 causal: bool = False, bias: bool = False):
        super().__init__()
        _checks.positive_int("d_model", d_model)
        _checks.positive_int("num_heads", num_heads)
        if d_model % num_heads:
            raise ValueError(f"d_model must be divisible by num_heads, got d_model={d_model}, num_heads={num_heads}")
        if encoding is not None and not isinstance(encoding, PositionalEncoding):
            raise TypeError(f"encoding must be a posenc_lib PositionalEncoding or None, got {type(encoding).__name__}")
        self.num_heads, self.head_dim, self.causal = num_heads, d_model // num_heads, causal
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=bias)
        self.proj = nn.Linear(d_model, d_model, bias=bias)
        self.encoding = encoding if encoding is not None else NoPE()
        self.last_weights = None  # (B, H, T, T) of the last forward, for plots

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        _checks.float_tensor("x", x)
        if x.dim() != 3 or x.shape[-1] != self.num_heads * self.head_dim:
            raise ValueError(f"x must have shape (batch, seq, d_model={self.num_heads * self.head_dim}), "
                             f"got {tuple(x.shape)}")
        B, T, D = x.shape
        positions = default_positions(x) if positions is None else check_positions(positions, T, device=x.device)
        q, k, v = self.qkv(x).view(B, T, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)  # 3 x (B, H, T, hd)
        enc = self.encoding
        q, k = enc.rotate_qk(q, k, positions, positions)
        out, weights = attention(q, k, v, bias=enc.score_bias(q, positions, positions),
                                 causal=self.causal, return_weights=True)
        extra = enc.value_bias(weights, positions, positions)
        if extra is not None:
            out = out + extra.to(out.dtype)
        self.last_weights = weights.detach()
        return self.proj(out.transpose(1, 2).reshape(B, T, D))
