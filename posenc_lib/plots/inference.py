"""Figures of notebook 12 (positions at inference time): the position ids of a padded batch, which tokens a
sink + window cache keeps step by step, and how far cached keys drift from a full forward when the
frequencies change with the length. Pure render(ax, ...) functions: each draws what it is given and returns it."""
from __future__ import annotations

import numpy as np
import torch
from matplotlib.colors import ListedColormap

from ..i18n import tr

__all__ = ["render_query_scores", "render_position_ids", "render_padding", "render_streaming_cache",
           "render_sink_window", "sink_window_kept", "render_cache_drift"]


def render_query_scores(ax, key_positions, curves: dict, query_position: int) -> dict:
    """The scores of one new query against the cached keys, one line per way of computing them (label ->
    (n,) scores); the first is drawn thick, the others on top of it, so equal curves overlap."""
    x = np.asarray(key_positions)
    drawn = {}
    for (label, scores), style in zip(curves.items(), (dict(color="#bbbbbb", lw=5), dict(color="#1f77b4", lw=1.5,
                                                                                           marker="o", ms=3),
                                                        dict(color="#d62728", lw=1.2, ls="--", marker="x", ms=4))):
        values = np.asarray(scores, dtype=float)
        ax.plot(x, values, label=label, **style)
        drawn[label] = values
    ax.set_xlabel(tr(f"position n of the cached key (the query is at m = {query_position})",
                     f"缓存键的位置 n（查询在 m = {query_position}）"), fontsize=8)
    ax.set_ylabel(tr("score q·k", "分数 q·k"), fontsize=8)
    ax.tick_params(labelsize=8)
    ax.legend(fontsize=8, frameon=False)
    return drawn


def render_position_ids(ax, attention_mask: torch.Tensor, position_ids: torch.Tensor, title: str = "") -> dict:
    """One row per sequence, one cell per slot: grey for a pad, the position id written in every real slot."""
    mask, ids = attention_mask.bool().cpu().numpy(), position_ids.cpu().numpy()
    ax.imshow(np.where(mask, 0.08, 0.4), cmap="Greys", vmin=0, vmax=1, aspect="auto")  # real: light, pad: grey
    for (row, col), real in np.ndenumerate(mask):
        ax.text(col, row, str(ids[row, col]) if real else tr("pad", "填充"), ha="center", va="center",
                fontsize=8, color="black" if real else "#333333")
    ax.set_xticks(range(mask.shape[1]))
    ax.set_yticks(range(mask.shape[0]))
    ax.set_xlabel(tr("slot in the batch tensor", "批张量中的槽位"), fontsize=8)
    ax.set_ylabel(tr("sequence", "序列"), fontsize=8)
    ax.tick_params(labelsize=8)
    ax.set_title(title, fontsize=9)
    return {"mask": mask, "position_ids": ids}


def render_padding(axes, pads_1: int = 0, pads_2: int = 3, pads_3: int = 5, slots: int = 7) -> dict:
    """Three prompts padded to `slots` slots, row r with `pads_r` pads: left padding (generation) on the
    left axes, right padding on the right, each slot showing the position id that
    `position_ids_from_mask` gives it. Returns dict(left/right: (mask, position_ids) numpy, next: the
    position of each left-padded row's next token)."""
    from ..inference import position_ids_from_mask
    pads = [int(pads_1), int(pads_2), int(pads_3)]
    if min(pads) < 0 or max(pads) >= slots:
        raise ValueError(f"pad counts must lie in [0, slots={slots}), got {pads}")
    left = torch.tensor([[0] * p + [1] * (slots - p) for p in pads])
    right = left.flip(-1)
    drawn = {}
    for ax, name, mask, title in ((axes[0], "left", left, tr("left padding (generation)", "左填充（生成时）")),
                                  (axes[1], "right", right, tr("right padding", "右填充"))):
        ids = position_ids_from_mask(mask)
        shown = render_position_ids(ax, mask, ids, title)
        drawn[name] = (shown["mask"], shown["position_ids"])
    drawn["next"] = (position_ids_from_mask(left).amax(-1) + 1).tolist()
    axes[0].figure.subplots_adjust(wspace=0.3, bottom=0.25)
    return drawn


def render_streaming_cache(ax, kept_per_step: list, num_sinks: int) -> dict:
    """Step t (row) against text position (column): which tokens the cache holds after step t; sinks in
    red, the window in blue, evicted tokens empty. kept_per_step[t] is the list of kept text positions."""
    steps = len(kept_per_step)
    grid = np.zeros((steps, steps))
    for t, kept in enumerate(kept_per_step):
        for p in kept:
            grid[t, p] = 2.0 if p < num_sinks else 1.0
    ax.imshow(grid, cmap=ListedColormap(["white", "#1f77b4", "#d62728"]), vmin=0, vmax=2, aspect="auto",
              interpolation="nearest")
    ax.set_xlabel(tr("text position of the token", "token 在文本中的位置"), fontsize=8)
    ax.set_ylabel(tr("after step", "第几步之后"), fontsize=8)
    ax.tick_params(labelsize=8)
    ax.set_title(tr("kept in the cache: sinks (red) + window (blue)", "缓存中保留的：注意力汇聚点（红）+ 窗口（蓝）"),
                 fontsize=9)
    return {"grid": grid}


def sink_window_kept(num_sinks: int, window: int, tokens: int) -> list:
    """The text positions a `SinkWindowCache(num_sinks=..., window=...)` holds after each of `tokens` steps
    of one token, read from the library's cache itself (fed placeholder keys of one number)."""
    from ..inference import SinkWindowCache
    cache, kept = SinkWindowCache(num_layers=1, num_sinks=num_sinks, window=window), []
    one = torch.zeros(1, 1, 1, 1)
    for t in range(tokens):
        cache.update(0, one, one, torch.tensor([[t]]))
        kept.append(cache.text_positions()[0].tolist())
    return kept


def render_sink_window(ax, num_sinks: int = 4, window: int = 8, tokens: int = 32) -> dict:
    """The sink + window cache of StreamingLLM step by step (as render_streaming_cache) for `tokens`
    tokens fed one at a time, with the positions RoPE uses for the last step's kept tokens in the title.
    Returns dict(grid, kept_per_step, positions: the kept tokens' positions in the cache, 0 .. len - 1)."""
    kept_per_step = sink_window_kept(num_sinks, window, tokens)
    drawn = render_streaming_cache(ax, kept_per_step, num_sinks)
    last = kept_per_step[-1]
    ax.set_title(tr(f"{num_sinks} sinks (red) + window {window} (blue): {len(last)} kept, "
                    f"numbered 0..{len(last) - 1}",
                    f"{num_sinks} 个注意力汇聚点（红）+ 窗口 {window}（蓝）：保留 {len(last)} 个，"
                    f"编号 0..{len(last) - 1}"), fontsize=9)
    return {**drawn, "kept_per_step": kept_per_step, "positions": list(range(len(last)))}


def render_cache_drift(ax, steps, curves: dict, switch: int | None = None) -> dict:
    """max |logit difference| from a full forward at each decoding step, one line per kind of cache
    (log scale, floored at 1e-9 so exact zeros show); a dashed line at the length where the frequencies
    start to change (L0)."""
    drawn = {}
    for (label, values), color in zip(curves.items(), ("#d62728", "#2ca02c", "#1f77b4", "#9467bd")):
        values = np.maximum(np.asarray(values, dtype=float), 1e-9)
        ax.semilogy(steps, values, color=color, lw=1.4, label=label)
        drawn[label] = values
    if switch is not None:
        ax.axvline(switch, color="grey", ls="--", lw=1)
    ax.set_xlabel(tr("tokens so far", "已有 token 数"), fontsize=8)
    ax.set_ylabel(tr("max |logits - full forward|", "max |logits - 完整前向|"), fontsize=8)
    ax.tick_params(labelsize=8)
    ax.legend(fontsize=8, frameon=False)
    return drawn
