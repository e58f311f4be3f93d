"""Notebook 05: relative positions as a bias on the scores. Shaw et al.'s clipped relative
embeddings, T5's log-spaced buckets and ALiBi's linear penalty.

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew.
Conventions, as in posenc_lib.relative and posenc_lib.alibi:
  * relative position = key position - query position: a key in the past of the query is negative.
  * ALiBi bias[h, i, j] = -m_h * |i - j| (query i, key j).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ..alibi import alibi_bias, alibi_slopes
from ..relative import relative_positions, t5_relative_bucket
from ._style import tidy, two_panels

__all__ = ["shaw_clipped_relative", "render_shaw_clipping", "render_t5_buckets", "render_alibi"]


def shaw_clipped_relative(length: int, max_relative_position: int) -> torch.Tensor:
    """(length, length) clip(key - query, -k, k): which of the 2k+1 relative embeddings pair (i, j) uses
    (the table row is this value + k, as ShawRelativePosition.relative_index)."""
    pos = torch.arange(length)
    return relative_positions(pos, pos)[0].clamp(-max_relative_position, max_relative_position)


def render_shaw_clipping(axes, max_relative_position: int = 3, *, length: int = 16):
    """Left: clip(j - i, -k, k) for every query i, key j. Right: the row of the middle query, unclipped and
    clipped. Returns dict(clipped (length, length) numpy, distinct = number of different embeddings used)."""
    k = int(max_relative_position)
    clipped = shaw_clipped_relative(length, k).numpy()
    ax_map, ax_row = axes
    ax_map.imshow(clipped, cmap="PuOr", vmin=-max(k, 1), vmax=max(k, 1), interpolation="nearest")
    ax_map.set_xlabel("key j", fontsize=8)
    ax_map.set_ylabel("query i", fontsize=8)
    ax_map.set_title(f"clip(j - i, -{k}, {k}): {2 * k + 1} embeddings", fontsize=9)
    tidy(ax_map)
    i = length // 2
    j = np.arange(length)
    ax_row.plot(j, j - i, color="0.6", lw=1, ls="--", label="j - i")
    ax_row.step(j, clipped[i], where="mid", color="C1", lw=1.5, label="clipped")
    ax_row.axvline(i, color="0.8", lw=0.5)
    ax_row.set_xlabel("key j", fontsize=8)
    ax_row.set_title(f"query i = {i}: keys farther than {k} share an embedding", fontsize=9)
    ax_row.legend(fontsize=7, loc="upper left")
    tidy(ax_row)
    two_panels(axes)
    return {"clipped": clipped, "distinct": int(np.unique(clipped).size)}


def render_t5_buckets(axes, num_buckets: int = 32, max_distance: int = 128, *, span: int | None = None):
    """T5's bucket of every relative position r = key - query in [-span, span] (default 1.5 * max_distance).
    Left: bidirectional (encoder); right: causal (decoder, bidirectional=False).
    Returns dict(relative, bidirectional, causal) as numpy."""
    span = int(span if span is not None else math.ceil(1.5 * max_distance))
    relative = torch.arange(-span, span + 1)
    both = t5_relative_bucket(relative, bidirectional=True, num_buckets=num_buckets, max_distance=max_distance)
    causal = t5_relative_bucket(relative, bidirectional=False, num_buckets=num_buckets, max_distance=max_distance)
    r = relative.numpy()
    for ax, buckets, name, total in ((axes[0], both, "bidirectional (encoder)", num_buckets),
                                     (axes[1], causal, "causal (decoder)", num_buckets)):
        ax.step(r, buckets.numpy(), where="mid", lw=1.2)
        for x in (-max_distance, max_distance):
            ax.axvline(x, color="C3", lw=0.7, ls="--")
        ax.axvline(0, color="0.7", lw=0.5)
        ax.set_ylim(-1, total)
        ax.set_xlabel("relative position r = key - query", fontsize=8)
        ax.set_title(f"{name}: {int(buckets.max()) + 1 - int(buckets.min())} buckets used", fontsize=9)
        tidy(ax)
    axes[0].set_ylabel("bucket", fontsize=8)
    axes[1].text(-span, num_buckets * 0.9, "past (r < 0)", fontsize=7)
    axes[1].text(span * 0.15, num_buckets * 0.1, "future: bucket 0", fontsize=7)
    two_panels(axes)
    return {"relative": r, "bidirectional": both.numpy(), "causal": causal.numpy()}


def render_alibi(axes, num_heads: int = 8, head: int = 0, *, length: int = 16):
    """Left: ALiBi's bias -m_h * |i - j| of head `head` (the masked future shaded out, as a causal model sees it).
    Right: every head's slope on a log2 scale, this head highlighted.
    Returns dict(slopes (num_heads,) numpy, bias (length, length) numpy of this head)."""
    if not 0 <= head < num_heads:
        raise ValueError(f"head must be in [0, num_heads={num_heads}), got {head}")
    slopes = alibi_slopes(num_heads, dtype=torch.float64)
    bias = alibi_bias(num_heads, length, dtype=torch.float64)[head].numpy()
    ax_map, ax_slopes = axes
    shown = np.where(np.tri(length, dtype=bool), bias, np.nan)  # future keys masked under a causal mask
    ax_map.imshow(shown, cmap="magma", vmin=bias.min(), vmax=0, interpolation="nearest")
    ax_map.set_xlabel("key j", fontsize=8)
    ax_map.set_ylabel("query i", fontsize=8)
    ax_map.set_title(f"head {head}: -{slopes[head].item():.4g} * |i - j|", fontsize=9)
    tidy(ax_map)
    colors = ["C1" if h == head else "C0" for h in range(num_heads)]
    ax_slopes.bar(np.arange(num_heads), np.log2(slopes.numpy()), color=colors)
    ax_slopes.set_xticks(range(0, num_heads, max(1, num_heads // 8)))
    ax_slopes.set_xlabel("head", fontsize=8)
    ax_slopes.set_ylabel("log2(slope)", fontsize=8)
    power = (num_heads & (num_heads - 1)) == 0
    ax_slopes.set_title(f"{num_heads} heads ({'a power of 2' if power else 'not a power of 2'})", fontsize=9)
    ax_slopes.tick_params(labelsize=7)
    two_panels(axes)
    return {"slopes": slopes.numpy(), "bias": bias}
