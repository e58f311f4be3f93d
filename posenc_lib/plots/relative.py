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
from ..i18n import tr
from ..relative import relative_positions, t5_relative_bucket
from ._style import side_colorbar, tidy, to_numpy, two_panels

__all__ = ["shaw_clipped_relative", "render_shaw_clipping", "render_t5_buckets", "render_t5_learned_bias",
           "render_alibi", "alibi_reach", "render_alibi_window"]


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
    two_panels(axes)
    image = ax_map.imshow(clipped, cmap="PuOr", vmin=-max(k, 1), vmax=max(k, 1), interpolation="nearest")
    ax_map.set_xlabel(tr("key j", "键 j"), fontsize=8)
    ax_map.set_ylabel(tr("query i", "查询 i"), fontsize=8)
    ax_map.set_title(tr(f"clip(j - i, -{k}, {k}): {2 * k + 1} embeddings",
                        f"clip(j - i, -{k}, {k})：{2 * k + 1} 个嵌入"), fontsize=9)
    tidy(ax_map)
    side_colorbar(ax_map, image)
    i = length // 2
    j = np.arange(length)
    ax_row.plot(j, j - i, color="0.6", lw=1, ls="--", label="j - i")
    ax_row.step(j, clipped[i], where="mid", color="C1", lw=1.5, label=tr("clipped", "截断后"))
    ax_row.axvline(i, color="0.8", lw=0.5)
    ax_row.set_xlabel(tr("key j", "键 j"), fontsize=8)
    ax_row.set_title(tr(f"query i = {i}: keys farther than {k} share an embedding",
                        f"查询 i = {i}：距离超过 {k} 的键共用一个嵌入"), fontsize=9)
    ax_row.legend(fontsize=8, loc="upper left")
    tidy(ax_row)
    return {"clipped": clipped, "distinct": int(np.unique(clipped).size)}


def render_t5_buckets(axes, num_buckets: int = 32, max_distance: int = 128, *, span: int | None = None):
    """T5's bucket of every relative position r = key - query in [-span, span] (default 1.5 * max_distance).
    Left: bidirectional (encoder); right: causal (decoder, bidirectional=False). The r axis is symlog:
    linear for |r| <= num_buckets / 2 (every exact bucket is a visible step), logarithmic beyond. Each title
    counts the buckets some r actually reaches: the bidirectional form never uses bucket num_buckets / 2 (a key
    after the query is at distance >= 1), so 31 of 32 at the defaults.
    Returns dict(relative, bidirectional, causal, linthresh) as numpy / int."""
    span = int(span if span is not None else math.ceil(1.5 * max_distance))
    relative = torch.arange(-span, span + 1)
    both = t5_relative_bucket(relative, bidirectional=True, num_buckets=num_buckets, max_distance=max_distance)
    causal = t5_relative_bucket(relative, bidirectional=False, num_buckets=num_buckets, max_distance=max_distance)
    r = relative.numpy()
    linthresh = max(1, num_buckets // 2)  # the causal form's exact buckets; the bidirectional one has half as many
    for ax, buckets, name, total in ((axes[0], both, tr("bidirectional (encoder)", "双向（编码器）"), num_buckets),
                                     (axes[1], causal, tr("causal (decoder)", "因果（解码器）"), num_buckets)):
        ax.set_xscale("symlog", linthresh=linthresh, linscale=2.5)
        ax.step(r, buckets.numpy(), where="mid", lw=1.2)
        for x in (-max_distance, max_distance):
            ax.axvline(x, color="C3", lw=0.7, ls="--")
        for x in (-linthresh, linthresh):
            ax.axvline(x, color="0.85", lw=0.5, ls=":")
        ax.axvline(0, color="0.7", lw=0.5)
        ax.set_xlim(-span, span)
        ax.set_ylim(-1, total)
        ax.set_xlabel(tr(f"r = key - query (linear for |r| <= {linthresh}, log beyond)",
                         f"r = 键 - 查询（|r| <= {linthresh} 为线性，之外为对数）"), fontsize=8)
        used = int(torch.unique(buckets).numel())  # bidirectional: bucket n (the after side's distance 0) is never used
        ax.set_title(tr(f"{name}: {used} of {total} buckets used", f"{name}：用到 {total} 个桶中的 {used} 个"),
                     fontsize=9)
        tidy(ax)
    axes[0].set_ylabel(tr("bucket", "桶"), fontsize=8)
    axes[1].text(-span * 0.8, num_buckets * 0.1, tr("past (r < 0)", "过去（r < 0）"), fontsize=8)
    axes[1].text(2, num_buckets * 0.1, tr("future: bucket 0", "未来：桶 0"), fontsize=8)
    two_panels(axes)
    return {"relative": r, "bidirectional": both.numpy(), "causal": causal.numpy(), "linthresh": linthresh}


def render_t5_learned_bias(axes, tables, *, max_distance: int, span: int, titles=None):
    """Learned causal T5 bias tables as profiles over r = key - query = 0, -1, ..., -span: one panel per
    table, one line per head, bias_h(r) = table[bucket(r), h] (t5_relative_bucket, bidirectional=False,
    num_buckets = the tables' rows). The r axis is symlog as in render_t5_buckets (linear over the
    num_buckets / 2 exact buckets); red dashes at r = -max_distance, past which every key shares the
    last bucket. tables: (panels, num_buckets, num_heads) nested lists, array or tensor; axes: one per
    panel; titles: one per panel (default "table i").
    Returns dict(relative (span + 1,), buckets (span + 1,), bias (panels, num_heads, span + 1)) as numpy."""
    values = to_numpy(tables)
    if values.ndim != 3:
        raise ValueError(f"tables must have shape (panels, num_buckets, num_heads), got {values.shape}")
    panels, num_buckets, num_heads = values.shape
    axes = list(np.atleast_1d(axes))
    if len(axes) != panels:
        raise ValueError(f"axes must hold one axes per table ({panels}), got {len(axes)}")
    titles = [tr(f"table {i}", f"表 {i}") for i in range(panels)] if titles is None else list(titles)
    if len(titles) != panels:
        raise ValueError(f"titles must hold one title per table ({panels}), got {len(titles)}")
    relative = -torch.arange(int(span) + 1)  # 0, -1, ..., -span: the query itself and its past
    buckets = t5_relative_bucket(relative, bidirectional=False, num_buckets=num_buckets,
                                 max_distance=max_distance).numpy()
    bias = values[:, buckets, :].transpose(0, 2, 1)  # (panels, heads, span + 1)
    r = relative.numpy()
    linthresh = max(1, num_buckets // 2)
    for ax, panel, title in zip(axes, bias, titles):
        ax.set_xscale("symlog", linthresh=linthresh, linscale=2.5)
        for h in range(num_heads):
            ax.step(r, panel[h], where="mid", lw=1.2, color=_head_color(h, num_heads), label=tr(f"head {h}", f"头 {h}"))
        ax.axvline(-max_distance, color="C3", lw=0.7, ls="--")
        ax.axvline(-linthresh, color="0.85", lw=0.5, ls=":")
        ax.axhline(0, color="0.7", lw=0.5)
        ax.set_xlim(-span, 0)
        ax.set_xlabel(tr("r = key - query", "r = 键 - 查询"), fontsize=8)
        ax.set_title(title, fontsize=9)
        tidy(ax)
    axes[0].set_ylabel(tr("learned bias", "学到的偏置"), fontsize=8)
    axes[-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[0].figure.subplots_adjust(bottom=0.17, wspace=0.3, right=0.85)
    return {"relative": r, "buckets": buckets, "bias": bias}


def render_alibi(axes, num_heads: int = 8, head: int = 0, *, length: int = 16):
    """Left: ALiBi's bias -m_h * |i - j| of head `head` (the masked future shaded out, as a causal model sees it).
    Right: every head's slope on a log2 scale, this head highlighted.
    Returns dict(slopes (num_heads,) numpy, bias (length, length) numpy of this head)."""
    if not 0 <= head < num_heads:
        raise ValueError(f"head must be in [0, num_heads={num_heads}), got {head}")
    slopes = alibi_slopes(num_heads, dtype=torch.float64)
    bias = alibi_bias(num_heads, length, dtype=torch.float64)[head].numpy()
    ax_map, ax_slopes = axes
    two_panels(axes)
    shown = np.where(np.tri(length, dtype=bool), bias, np.nan)  # future keys masked under a causal mask
    image = ax_map.imshow(shown, cmap="magma", vmin=bias.min(), vmax=0, interpolation="nearest")
    ax_map.set_xlabel(tr("key j", "键 j"), fontsize=8)
    ax_map.set_ylabel(tr("query i", "查询 i"), fontsize=8)
    ax_map.set_title(tr(f"head {head}: -{slopes[head].item():.4g} * |i - j|",
                        f"头 {head}：-{slopes[head].item():.4g} * |i - j|"),
                     fontsize=9)
    tidy(ax_map)
    side_colorbar(ax_map, image)
    colors = ["C1" if h == head else "C0" for h in range(num_heads)]
    ax_slopes.bar(np.arange(num_heads), np.log2(slopes.numpy()), color=colors)
    ax_slopes.set_xticks(range(0, num_heads, max(1, num_heads // 8)))
    ax_slopes.set_xlabel(tr("head", "头"), fontsize=8)
    ax_slopes.set_ylabel(tr("log2(slope)", "log2(斜率)"), fontsize=8)
    power = (num_heads & (num_heads - 1)) == 0
    kind = tr("a power of 2", "是 2 的幂") if power else tr("not a power of 2", "不是 2 的幂")
    ax_slopes.set_title(tr(f"{num_heads} heads ({kind})", f"{num_heads} 个头（{kind}）"), fontsize=9)
    ax_slopes.tick_params(labelsize=8)
    return {"slopes": slopes.numpy(), "bias": bias}


def alibi_reach(num_heads: int = 8, length: int = 4096, *, mass: float = 0.99) -> dict:
    """ALiBi's soft window, with the content taken out: a query with equal scores for every key (q = 0)
    attends to the key at distance d with weight proportional to exp(-m_h * d). For the last query of
    `length` keys: the (num_heads, length) cumulative weight of the keys at distances 0..D, and for each
    head the smallest D holding `mass` of the weight (for an unbounded past, ln(1 / (1 - mass)) / m_h).
    Returns dict(slopes, distance, cumulative, reach) as numpy."""
    if not 0 < mass < 1:
        raise ValueError(f"mass must be in (0, 1), got {mass}")
    slopes = alibi_slopes(num_heads, dtype=torch.float64)
    distance = torch.arange(length, dtype=torch.float64)
    weights = torch.softmax(-slopes[:, None] * distance, dim=-1)  # (H, length): row of the last query, keys by distance
    cumulative = weights.cumsum(-1)
    reach = (cumulative < mass).sum(-1)  # first distance where the cumulative weight reaches `mass`
    return {"slopes": slopes.numpy(), "distance": distance.numpy(), "cumulative": cumulative.numpy(),
            "reach": reach.numpy()}


def render_alibi_window(ax, num_heads: int = 8, *, length: int = 4096, mass: float = 0.99):
    """Each head's cumulative attention weight over the keys within distance D (content-neutral scores, see
    alibi_reach), D on a log axis; a dot where each head reaches `mass`. Returns alibi_reach's dict."""
    data = alibi_reach(num_heads, length, mass=mass)
    d = data["distance"][1:]
    for h in range(num_heads):
        color = _head_color(h, num_heads)
        ax.plot(d, data["cumulative"][h, 1:], color=color, lw=1.2, label=f"2^{np.log2(data['slopes'][h]):.3g}")
        ax.plot(data["reach"][h], data["cumulative"][h, data["reach"][h]], "o", color=color, ms=3)
    ax.axhline(mass, color="0.6", lw=0.7, ls="--")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(tr("distance D to the query", "到查询的距离 D"), fontsize=8)
    ax.set_ylabel(tr("weight on keys within D", "距离 D 以内的键分到的权重"), fontsize=8)
    ax.set_title(tr(f"ALiBi's soft window: equal content scores, {length} keys",
                 f"ALiBi 的软窗口：内容分数都相同，{length} 个键"), fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title=tr("slope", "斜率"), title_fontsize=8)
    tidy(ax, axis="y")
    ax.tick_params(labelsize=8)
    ax.figure.subplots_adjust(bottom=0.17, right=0.8)
    return data


def _head_color(h: int, n: int):
    """Head h of n on a sequential colormap: steep (local) heads dark, shallow ones light."""
    import matplotlib
    return matplotlib.colormaps["viridis"](h / max(1, n - 1) * 0.9)
