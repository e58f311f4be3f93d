"""Notebook 14, section 4: what a trained RoPE model does with its frequencies (posenc_lib.frequencies).

render_band_usage     per-head share of q.k each RoPE pair can carry (heatmap), positional heads marked
render_truncation     loss against the window for the model with its slowest or fastest pairs stopped
render_drope          DroPE (RoPE removed, recalibrated) beside notebook 08's fine-tune arms and 07's NoPE
"""
from __future__ import annotations

import numpy as np

from ..i18n import tr
from ._style import ENCODING_COLORS, side_colorbar, tidy, to_numpy

__all__ = ["render_band_usage", "render_truncation", "render_drope"]

STOP_COLORS = {"slowest": "#1f77b4", "fastest": "#d62728"}


def _length_axis(ax, multiples, L) -> np.ndarray:
    lengths = np.array(multiples) * L
    ax.axvline(L, color="k", lw=0.8, ls="--")
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [f"{m}L={n}" if m > 1 else f"L={n}" for m, n in zip(multiples, lengths)])
    ax.minorticks_off()
    ax.set_xlabel(tr("evaluation window (characters)", "评估窗口（字符数）"), fontsize=8)
    ax.set_ylabel(tr("loss on the last L chars (nats/char)", "最后 L 个字符的损失（nats/字符）"), fontsize=8)
    return lengths


def _room_for_the_legend(ax) -> None:
    """Raise the top of the y axis so that a legend in the upper left covers no line."""
    low, high = ax.get_ylim()
    ax.set_ylim(low, high + 0.55 * (high - low))
    ax.legend(fontsize=8, ncol=2, loc="upper left")


def render_band_usage(ax, usage, turns, positional=(), length: int = 64):
    """Heatmap of pair_usage (layers, heads, pairs): one row per (layer, head), one column per pair i
    (i = 0 fastest), each cell the share of the head's q.k that pair can carry; the column labels give the
    turns pair i makes within `length` positions (`turns`, (pairs,)), and rows of `positional` heads
    (positional_heads' dicts) are marked with their offset. Returns dict(usage (rows, pairs), rows, turns)."""
    usage = to_numpy(usage)
    turns = to_numpy(turns)
    if usage.ndim != 3 or turns.shape != (usage.shape[-1],):
        raise ValueError(f"usage must be (layers, heads, pairs) and turns (pairs,), got {usage.shape}, {turns.shape}")
    layers, heads, pairs = usage.shape
    grid = usage.reshape(layers * heads, pairs)
    marks = {(p["layer"], p["head"]): p["offset"] for p in positional}
    rows = []
    for layer in range(layers):
        for head in range(heads):
            mark = marks.get((layer, head))
            extra = "" if mark is None else tr(f"  [offset {mark}]", f"  [偏移 {mark}]")
            rows.append(tr(f"layer {layer} head {head}", f"第 {layer} 层 头 {head}") + extra)
    ax.figure.subplots_adjust(left=0.3, right=0.88, bottom=0.2)  # room for the row labels and the two-line ticks
    image = ax.imshow(grid, cmap="viridis", vmin=0, aspect="auto")
    for r in range(grid.shape[0]):
        for c in range(pairs):
            ax.text(c, r, f"{grid[r, c]:.2f}", ha="center", va="center", fontsize=8,
                    color="w" if grid[r, c] < 0.6 * grid.max() else "k")
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.set_xticks(range(pairs), [f"{i}\n{t:.2g}" for i, t in enumerate(turns)], fontsize=8)
    ax.set_xlabel(tr(f"pair i (top) and its turns within {length} positions (bottom); i = 0 is the fastest",
                     f"第 i 对（上）及其在 {length} 个位置内转过的圈数（下）；i = 0 最快"), fontsize=8)
    ax.set_title(tr("share of each head's q·k a RoPE pair can carry: |q_i||k_i| / Σ_j |q_j||k_j|",
                    "每个头的 q·k 中各旋转对能承载的份额：|q_i||k_i| / Σ_j |q_j||k_j|"), fontsize=8.5)
    side_colorbar(ax, image)
    return {"usage": grid, "rows": rows, "turns": turns}


def render_truncation(ax, results: dict):
    """Loss vs window (data/experiments_frequencies.json): the trained model, its slowest or fastest `count`
    pairs stopped (no retraining), and RoPE removed altogether. Returns dict(lengths, curves {label: array})."""
    L, pairs = results["train_len"], results["pairs"]
    multiples = sorted(int(m) for m in results["baseline"])
    lengths = _length_axis(ax, multiples, L)

    def values(losses):
        return np.array([losses[str(m)] for m in multiples])

    curves = {"baseline": values(results["baseline"])}
    ax.plot(lengths, curves["baseline"], "o-", color=ENCODING_COLORS["rope"], lw=3.2, ms=5, alpha=0.8,
            label=tr("RoPE as trained", "训练所得的 RoPE"))
    for stop, table in results["truncation"].items():
        counts = sorted(table, key=int)
        for j, count in enumerate(counts):
            label = (tr(f"slowest {count}/{pairs} pairs stopped", f"停转最慢的 {count}/{pairs} 对") if stop == "slowest"
                     else tr(f"fastest {count}/{pairs} pairs stopped", f"停转最快的 {count}/{pairs} 对"))
            curves[f"{stop} {count}"] = values(table[count])
            ax.plot(lengths, curves[f"{stop} {count}"], "s--" if stop == "fastest" else "o-", ms=3, lw=1.1,
                    color=STOP_COLORS[stop], alpha=0.35 + 0.65 * (j + 1) / len(counts), label=label)
    curves["all"] = values(results["drope"]["no_recalibration"])
    ax.plot(lengths, curves["all"], "x:", color=ENCODING_COLORS["nope"], lw=1.2,
            label=tr(f"all {pairs} stopped (RoPE removed)", f"全部 {pairs} 对停转（去掉 RoPE）"))
    ax.set_title(tr(f"07's RoPE model (L={L}) with pairs stopped after training: no retraining",
                    f"07 的 RoPE 模型（L={L}）训练后停转部分旋转对：不重新训练"), fontsize=8.5)
    _room_for_the_legend(ax)
    tidy(ax, axis="y")
    return {"lengths": lengths, "curves": curves}


def render_drope(ax, results: dict, extension: dict, extrapolation: dict):
    """DroPE's recalibrated runs (mean line, min..max band over the recalibration seeds) beside notebook 08's
    fine-tune arms (mean over their seeds), 07's RoPE model as trained (seed 0) and 07's NoPE trained from
    scratch (mean over seeds). Returns dict(lengths, curves {label: array})."""
    L = results["train_len"]
    multiples = sorted(int(m) for m in results["baseline"])
    lengths = _length_axis(ax, multiples, L)
    curves = {}
    runs = np.array([[r["loss"][str(m)] for m in multiples] for r in results["drope"]["runs"]])
    curves["drope"] = runs.mean(0)
    recal = results["drope"]["recal_len"]
    steps = results["provenance"]["frequencies_config"]["recal_steps"]
    ax.plot(lengths, curves["drope"], "o-", color="k", lw=1.8, ms=4,
            label=tr(f"DroPE: RoPE removed, {steps} steps at {recal} ({len(runs)} runs)",
                     f"DroPE：去掉 RoPE，在 {recal} 上校准 {steps} 步（{len(runs)} 次）"))
    if len(runs) > 1:
        ax.fill_between(lengths, runs.min(0), runs.max(0), color="k", alpha=0.15, lw=0)
    cfg = extension["provenance"]["config"]
    arm_colors = {"none": "#ff7f0e", "linear": "#9467bd", "yarn": "#2ca02c", "abf": "#8c564b"}
    for arm, row in extension["finetuned_summary"].items():
        curves[arm] = np.array([row[str(m)]["mean"] for m in multiples])
        ax.plot(lengths, curves[arm], "s--", ms=3, lw=1.1, color=arm_colors.get(arm, "0.4"),
                label=tr(f"08: {arm} + {cfg['finetune_steps']} steps at {cfg['finetune_multiple'] * L}",
                         f"08：{arm} + 在 {cfg['finetune_multiple'] * L} 上微调 {cfg['finetune_steps']} 步"))
    curves["rope"] = np.array([results["baseline"][str(m)] for m in multiples])
    ax.plot(lengths, curves["rope"], "o:", color=ENCODING_COLORS["rope"], lw=1.0, ms=3,
            label=tr("07: RoPE as trained", "07：训练所得的 RoPE"))
    nope = extrapolation["summary"]["nope"]
    curves["nope"] = np.array([nope[str(m)]["mean"] for m in multiples])
    ax.plot(lengths, curves["nope"], "x:", color=ENCODING_COLORS["nope"], lw=1.0,
            label=tr("07: NoPE trained from scratch", "07：从头训练的 NoPE"))
    ax.set_title(tr("DroPE beside 08's context-extension fine-tunes (same steps and tokens per step)",
                    "DroPE 与 08 的上下文扩展微调并列（步数与每步 token 数相同）"), fontsize=8.5)
    _room_for_the_legend(ax)
    tidy(ax, axis="y")
    return {"lengths": lengths, "curves": curves}
