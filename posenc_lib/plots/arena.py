"""The arena's figure: loss against the evaluation window for every method, from the arena's table
(posenc_lib.arena.table.arena_table: plain data, drawn as given).

Left: the training methods (each trained at L under the same protocol); right: the inference methods on the trained
RoPE model, with RoPE itself as the reference. A point is the mean over seeds; the bar its 95% confidence interval
(Student's t; none for one seed).
"""
from __future__ import annotations

import matplotlib
import numpy as np

from ..i18n import tr
from ._style import ENCODING_COLORS, tidy

__all__ = ["render_arena"]


def _colors(names) -> dict:
    """One colour per method: the course's own for the encodings of notebook 07, tab20b's for the rest."""
    palette = matplotlib.colormaps["tab20b"]   # none of its colours is one of the course's
    others = [n for n in names if n not in ENCODING_COLORS]
    return {n: ENCODING_COLORS.get(n) or palette(others.index(n) % 20) for n in names}


def render_arena(axes, table: dict, reference: str = "rope"):
    """Draw `table` (arena_table's dict) on two axes: training methods left, inference methods (and `reference`,
    the model they change) right. Returns dict(lengths, mean: {method: (k,) array}, half: {method: (k,) array,
    NaN without an interval}, panels: {"training": [...], "inference": [...]})."""
    if not isinstance(table, dict) or "rows" not in table or "multiples" not in table:
        raise TypeError("table must be posenc_lib.arena.table.arena_table's dict (with 'rows' and 'multiples')")
    if len(axes) != 2:
        raise ValueError(f"axes must be two axes (training methods, inference methods), got {len(axes)}")
    multiples, L = table["multiples"], table["train_len"]
    lengths = np.array(multiples) * L
    rows = {row["method"]: row for row in table["rows"]}
    panels = {"training": [m for m, r in rows.items() if r["kind"] == "training"],
              "inference": ([reference] if reference in rows else []) + [m for m, r in rows.items()
                                                                        if r["kind"] == "inference"]}
    colors = _colors(list(rows))
    out = {"lengths": lengths, "mean": {}, "half": {}, "panels": panels}
    for ax, (kind, names) in zip(axes, panels.items()):
        for i, name in enumerate(names):
            cells = [rows[name]["cells"][f"loss_{m}L"] for m in multiples]
            mean = np.array([np.nan if c is None else c["mean"] for c in cells])
            half = np.array([np.nan if c is None or c["half_width"] is None else c["half_width"] for c in cells])
            out["mean"][name], out["half"][name] = mean, half
            shift = 2 ** ((i - len(names) / 2) * 0.012)   # a small offset so the intervals do not hide each other
            ax.errorbar(lengths * shift, mean, yerr=np.nan_to_num(half), marker="o", ms=3, lw=1.2, capsize=2,
                        color=colors[name], label=name, ls="--" if name == reference and kind == "inference" else "-")
        ax.axvline(L, color="k", lw=0.8, ls=":")
        ax.set_xscale("log", base=2)
        ax.set_xticks(lengths, [f"{m}L" if m > 1 else "L" for m in multiples])
        ax.set_xlabel(tr(f"evaluation window (L = {L} characters)", f"评估窗口（L = {L} 个字符）"), fontsize=8)
        ax.legend(fontsize=8, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.12), frameon=False)
        tidy(ax, axis="y")
    axes[0].set_ylabel(tr("loss on the last L chars (nats/char, lower is better)",
                          "最后 L 个字符的损失（nats/字符，越低越好）"), fontsize=8)
    axes[0].set_title(tr("trained at L, each method the same budget", "在 L 上训练，每种方法预算相同"), fontsize=9)
    axes[1].set_title(tr(f"on the trained {reference} model, no training", f"在训练好的 {reference} 模型上，不再训练"),
                      fontsize=9)
    axes[0].figure.subplots_adjust(left=0.07, right=0.98, wspace=0.2, bottom=0.3, top=0.93)   # legends below
    return out
