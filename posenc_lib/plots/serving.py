"""Figures of notebook 13 (positions in serving systems): the positions before and after a context shift,
the slots of a rolling sliding-window buffer step by step, a speculative-decoding token tree beside its
attention mask, and the loss of short prompts under static and dynamic scaling. Pure render(ax, ...)
functions: each draws what it is given (or the positions the library gives for the settings) and returns it."""
from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Rectangle

from ..i18n import tr
from ..inference import tree_mask, tree_positions
from ._style import tidy, to_numpy, two_panels

__all__ = ["render_context_shift", "render_ring_buffer", "render_token_tree", "render_short_prompt_loss"]

_KEPT, _DROPPED, _MOVED = "#2ca02c", "#cccccc", "#1f77b4"


def render_context_shift(ax, length: int = 16, n_keep: int = 2, n_discard: int = 6) -> dict:
    """Two rows of `length` cached tokens: on top each token's position before the shift, below its
    position after llama.cpp's shift (the first n_keep kept, the next n_discard dropped, the rest moved
    left by n_discard and their keys turned by R(-n_discard)). Returns dict(before, after (None where dropped))."""
    if not (0 <= n_keep and 1 <= n_discard and n_keep + n_discard <= length):
        raise ValueError(f"need 0 <= n_keep and 1 <= n_discard with n_keep + n_discard <= length, got n_keep={n_keep}, "
                         f"n_discard={n_discard}, length={length}")
    before = list(range(length))
    after = [p if p < n_keep else None if p < n_keep + n_discard else p - n_discard for p in before]
    colours = [_KEPT if p < n_keep else _DROPPED if p < n_keep + n_discard else _MOVED for p in before]
    for row, values in enumerate((before, after)):
        for col, (value, colour) in enumerate(zip(values, colours)):
            ax.add_patch(_cell(col, row, colour if value is not None else "white"))
            ax.text(col, row, "" if value is None else str(value), ha="center", va="center", fontsize=8)
    ax.set_xlim(-0.6, length - 0.4)
    ax.set_ylim(1.6, -0.6)
    ax.set_yticks([0, 1], [tr("before", "平移前"), tr("after", "平移后")])
    ax.set_xticks([])
    ax.tick_params(labelsize=8, length=0)
    ax.set_xlabel(tr(f"cached tokens: kept (green), dropped (grey), moved by -{n_discard} (blue); the number is the "
                     f"position RoPE uses",
                     f"缓存的 token：保留（绿）、丢弃（灰）、左移 {n_discard}（蓝）；数字是 RoPE 用的位置"),
                  fontsize=8)
    return {"before": before, "after": after}


def _cell(col, row, colour) -> Rectangle:
    return Rectangle((col - 0.45, row - 0.4), 0.9, 0.8, facecolor=colour, edgecolor="#555555", lw=0.6)


def render_ring_buffer(ax, window: int = 4, tokens: int = 10) -> dict:
    """Step t (row) against slot s (column) of a ring buffer of `window` slots after token t was written
    (token t goes to slot t % window, over token t - window); each cell shows the text position of the key
    it holds, the newest in blue. The key's rotation uses that text position, never the slot.
    Returns dict(grid: (tokens, window) int numpy, -1 for an empty slot)."""
    if window < 1 or tokens < 1:
        raise ValueError(f"window and tokens must be >= 1, got window={window}, tokens={tokens}")
    grid = np.full((tokens, window), -1)
    for t in range(tokens):
        if t:
            grid[t] = grid[t - 1]
        grid[t, t % window] = t                                   # the new token overwrites token t - window
    newest = np.zeros_like(grid)
    newest[np.arange(tokens), np.arange(tokens) % window] = 1
    shade = np.where(grid < 0, 0, np.where(newest == 1, 2, 1))
    ax.imshow(shade, cmap=ListedColormap(["white", "#dddddd", "#9ecae1"]), vmin=0, vmax=2, aspect="auto",
              interpolation="nearest")
    for (t, s), value in np.ndenumerate(grid):
        if value >= 0:
            ax.text(s, t, str(value), ha="center", va="center", fontsize=8)
    ax.set_xticks(range(window))
    ax.set_yticks(range(0, tokens, max(1, tokens // 6)))
    ax.set_xlabel(tr(f"slot (= position % {window})", f"槽位（= 位置 % {window}）"), fontsize=8)
    ax.set_ylabel(tr("after token t", "写入 token t 之后"), fontsize=8)
    ax.tick_params(labelsize=8)
    ax.set_title(tr(f"a ring of W = {window} slots: the newest key (blue) and the W - 1 before it",
                    f"W = {window} 个槽位的环形缓冲：最新的键（蓝）和它之前的 W - 1 个"), fontsize=9)
    return {"grid": grid}


def render_token_tree(axes, parents=(-1, 0, 0, 1, 1, 2, 2)) -> dict:
    """Left: the token tree, each node drawn at its position (its depth: siblings share one), edges to
    its parent. Right: the tree mask (`tree_mask`), node i (row) may attend node j (column): itself and its
    ancestors only. Returns dict(positions (N,) numpy, mask (N, N) bool numpy)."""
    parents = list(parents)
    positions, mask = tree_positions(parents).numpy(), tree_mask(parents).numpy()
    left, right = axes
    rows, used = np.zeros(len(parents)), {}
    for i, depth in enumerate(positions):                      # spread each level's nodes vertically
        rows[i] = used.get(depth, 0)
        used[depth] = rows[i] + 1
    heights = np.array([used[d] for d in positions])
    y = (rows + 0.5) / heights
    for i, p in enumerate(parents):
        if p >= 0:
            left.plot([positions[p], positions[i]], [y[p], y[i]], color="#888888", lw=1)
    left.scatter(positions, y, s=160, color="#9ecae1", edgecolor="#1f77b4", zorder=3)
    for i in range(len(parents)):
        left.text(positions[i], y[i], str(i), ha="center", va="center", fontsize=8, zorder=4)
    left.set_xticks(range(int(positions.max()) + 1))
    left.set_yticks([])
    left.set_xlim(-0.5, positions.max() + 0.5)
    left.set_ylim(-0.05, 1.05)
    left.set_xlabel(tr("position = depth (after the prefix)", "位置 = 深度（接在前缀之后）"), fontsize=8)
    left.set_title(tr("token tree (numbers: flattened order)", "token 树（数字：展平后的顺序）"), fontsize=9)
    left.tick_params(labelsize=8)
    right.imshow(mask, cmap=ListedColormap(["white", "#1f77b4"]), vmin=0, vmax=1, interpolation="nearest")
    step = max(1, len(parents) // 8)
    right.set_xticks(range(0, len(parents), step))
    right.set_yticks(range(0, len(parents), step))
    right.set_xlabel(tr("key node j", "键节点 j"), fontsize=8)
    right.set_ylabel(tr("query node i", "查询节点 i"), fontsize=8)
    right.set_title(tr("tree mask: ancestors and itself", "树掩码：祖先和自己"), fontsize=9)
    right.tick_params(labelsize=8)
    two_panels(axes)
    return {"positions": positions, "mask": mask}


def render_short_prompt_loss(ax, lengths, curves: dict, trained_length: int | None = None) -> dict:
    """Mean loss against the prompt length, one line per scaling (label -> values); a dashed line at the
    trained length L0 when given."""
    x = to_numpy(lengths)
    drawn = {}
    for (label, values), style in zip(curves.items(), (dict(color="#bbbbbb", lw=5), dict(color="#d62728", lw=1.5,
                                                                                        marker="o", ms=4),
                                                        dict(color="#1f77b4", lw=1.2, ls="--", marker="x", ms=5))):
        drawn[label] = to_numpy(values)
        ax.plot(x, drawn[label], label=label, **style)
    if trained_length is not None:
        ax.axvline(trained_length, color="grey", ls=":", lw=1)
    ax.set_xlabel(tr("prompt length (characters)", "提示长度（字符）"), fontsize=8)
    ax.set_ylabel(tr("loss (nats/char)", "损失（nats/字符）"), fontsize=8)
    tidy(ax)
    ax.legend(fontsize=8, frameon=False)
    return drawn
