"""Notebooks 07 and 08: train short, test long, the retrieval probe, and RoPE context extension (linear,
NTK-aware, dynamic NTK, YaRN, Llama 3.1; fine-tuned: plain, PI, YaRN, ABF = the base raised).

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew. The experiment
figures draw the results dicts of `posenc_lib.experiments` they are given (a widget loads them once,
not per redraw). Conventions:
  * loss = mean cross-entropy in nats per character over the LAST L = train_len positions of a
    window of m * L characters (m = "multiple"); the windows end at the same characters for every m.
  * "spread" = min..max over the seeds; a learned table has no value past L and is drawn as "n/a".
  * RoPE pair i turns by m * theta_i at position m; wavelength_i = 2 pi / theta_i (tokens per turn).
    A "slow" pair makes less than one turn over the trained length L0; its "overshoot" under a method
    is how far it turns over the target window in units of how far it turned over L0 in training
    (1 = stays within its trained angles; plain RoPE: the factor itself).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.patches import Polygon
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator

from ..i18n import Text, tr
from ..model import encoding_label
from ..printing import seed_stats
from ..scaling import extension_scaling, rope_inv_freq
from ._style import ENCODING_COLORS, tidy

__all__ = [
    "ENCODING_COLORS", "METHOD_COLORS", "METHOD_LABELS", "render_extrapolation", "render_position_loss",
    "render_training_curves", "render_own_encoding", "rope_scaling_data", "render_rope_scaling",
    "render_overshoot", "render_extension",
    "render_method_position_loss", "render_retrieval", "retrieval_data",
]

METHOD_COLORS = {"none": "#7f7f7f", "linear": "#1f77b4", "ntk": "#2ca02c", "dynamic": "#17becf",
                 "yarn": "#d62728", "llama3": "#9467bd", "abf": "#ff7f0e"}
METHOD_LABELS = {"none": Text("plain RoPE", "原始 RoPE"), "linear": Text("linear (PI)", "线性插值（PI）"),
                 "ntk": "NTK-aware", "dynamic": Text("dynamic NTK", "动态 NTK"), "yarn": "YaRN", "llama3": "Llama 3.1",
                 "abf": Text("ABF (base raised)", "ABF（调大底数）")}  # Text: shown in the language set (str() it)
ABF_BASE = 500000.0  # the experiments' default (ExperimentConfig.abf_base): Llama 3's base


_PLAIN = FuncFormatter(lambda v, _: f"{v:g}")


_tidy = functools.partial(tidy, nbins=5, axis="y", minor_ticks=False)  # these panels' x ticks are set by hand


def _band(ax, x, low, high, *, color, alpha: float) -> None:
    """Shade low..high over x: fill_between's look, drawn as one polygon (fill_between costs ~4 ms each)."""
    x, low, high = (np.asarray(v, dtype=float) for v in (x, low, high))
    if np.isnan(low).any() or np.isnan(high).any():  # gaps: fill_between knows how to leave them out
        ax.fill_between(x, low, high, color=color, alpha=alpha, lw=0)
        return
    outline = np.column_stack((np.concatenate((x, x[::-1])), np.concatenate((high, low[::-1]))))
    ax.add_patch(Polygon(outline, closed=True, facecolor=color, edgecolor="none", alpha=alpha, lw=0))


def _seed_stats(results: dict, encoding: str, multiples) -> tuple:
    """(means, lows, highs) over seeds for one encoding (numbers.seed_stats at each multiple);
    NaN where a run has no value."""
    runs = [r for r in results["runs"] if r["encoding"] == encoding]
    if not runs:
        raise ValueError(f"encoding {encoding!r} is not in these results; have "
                         f"{sorted({r['encoding'] for r in results['runs']})}")
    stats = [seed_stats([r["loss"][str(m)] for r in runs], decimals=None) for m in multiples]
    mean, low, high = (np.array([np.nan if s is None else s[k] for s in stats]) for k in ("mean", "min", "max"))
    return mean, low, high


def _multiples(results: dict) -> list:
    return sorted(int(m) for m in results["runs"][0]["loss"])


def render_extrapolation(axes, results: dict, encoding: str = "all", multiple: int = 4):
    """Left: loss vs evaluation length per encoding (mean line, min..max band over seeds); `encoding`
    ("all" or one name) is drawn strong and the others faint; a dotted line marks `multiple`.
    Right: every encoding's rise (loss at multiple*L minus loss at L), "n/a" for a learned table;
    its labels are the colour key of both panels (no legend: text is most of a redraw's cost).
    Returns dict(lengths, mean, low, high, rise, focus, multiple)."""
    ax_curve, ax_bar = axes
    cfg = results["provenance"]["config"]
    L = cfg["train_len"]
    multiples = _multiples(results)
    if int(multiple) not in multiples:
        raise ValueError(f"multiple must be one of {multiples}, got {multiple!r}")
    encodings = list(results["summary"])
    if encoding != "all" and encoding not in encodings:
        raise ValueError(f"encoding must be 'all' or one of {encodings}, got {encoding!r}")
    lengths = np.array(multiples) * L
    out = {"lengths": lengths, "mean": {}, "low": {}, "high": {}, "rise": {}, "focus": encoding,
           "multiple": int(multiple)}
    for enc in encodings:
        mean, low, high = _seed_stats(results, enc, multiples)
        out["mean"][enc], out["low"][enc], out["high"][enc] = mean, low, high
        strong = encoding in ("all", enc)
        color = ENCODING_COLORS.get(enc, "k")
        alpha = 1.0 if strong else 0.15
        ax_curve.plot(lengths, mean, "o-", color=color, alpha=alpha, lw=2 if encoding == enc else 1.4, ms=4,
                      label=encoding_label(enc))
        if not np.isnan(mean[1:]).all():  # a learned table: one point, nothing to shade
            _band(ax_curve, lengths, low, high, color=color, alpha=0.2 * alpha)
        i = multiples.index(int(multiple))
        out["rise"][enc] = None if np.isnan(mean[i]) else float(mean[i] - mean[0])
    ax_curve.axvline(L, color="k", lw=0.8, ls="--")
    ax_curve.text(L * 0.97, 0.03, tr("train length L", "训练长度 L"), fontsize=8, rotation=90, ha="right", va="bottom",
                  transform=ax_curve.get_xaxis_transform())
    ax_curve.axvline(int(multiple) * L, color="k", lw=0.8, ls=":")
    ax_curve.set_xscale("log", base=2)
    ax_curve.set_xticks(lengths, [f"{m}L={n}" if m > 1 else f"L={n}" for m, n in zip(multiples, lengths)])
    ax_curve.set_xlabel(tr("evaluation window (characters)", "评估窗口（字符数）"), fontsize=8)
    ax_curve.set_ylabel(tr("loss on the last L chars (nats/char)", "最后 L 个字符的损失（nats/字符）"), fontsize=8)
    seeds = len(results["provenance"]["config"]["seeds"])
    seeds_text = tr(f"{seeds} seeds", f"{seeds} 个种子") if seeds > 1 else tr(f"{seeds} seed", f"{seeds} 个种子")
    ax_curve.set_title(tr(f"train at L={L}, test longer ({seeds_text}, band = min..max; "
                          "colours as on the right)",
                          f"L={L} 上训练、更长窗口上测试（{seeds_text}，色带 = min..max；"
                          "颜色同右图）"), fontsize=9, y=1.0)
    _tidy(ax_curve)
    order = sorted(encodings, key=lambda e: (out["rise"][e] is None, out["rise"][e] or 0.0))
    rises = [out["rise"][enc] or 0.0 for enc in order]  # a learned table (None) gets an empty bar
    faded = [to_rgba(ENCODING_COLORS.get(enc, "k"), 1.0 if encoding in ("all", enc) else 0.3) for enc in order]
    ax_bar.barh(range(len(order)), rises, color=faded)  # one call for all bars: each barh call costs ~2 ms
    for y, enc in enumerate(order):
        rise = out["rise"][enc]
        if rise is None:
            ax_bar.text(0, y, tr(" n/a (no value past L)", " n/a（超过 L 没有值）"), va="center", fontsize=8,
                        color=ENCODING_COLORS.get(enc, "k"))
        else:
            ax_bar.text(rise, y, f" {rise:+.2f}", va="center", fontsize=8)
    _tidy(ax_bar)
    ax_bar.set_yticks(range(len(order)), order, fontsize=8)
    for label, enc in zip(ax_bar.get_yticklabels(), order):  # the colour key of both panels
        label.set_color(ENCODING_COLORS.get(enc, "k"))
    ax_bar.axvline(0, color="k", lw=0.6)
    ax_bar.set_xlabel(tr(f"loss at {multiple}L minus loss at L", f"{multiple}L 处的损失减去 L 处的损失"), fontsize=8)
    ax_bar.set_title(tr(f"rise at {int(multiple) * L} chars", f"{int(multiple) * L} 个字符处的上升"), fontsize=9, y=1.0)
    ax_curve.figure.subplots_adjust(left=0.07, right=0.97, wspace=0.3, bottom=0.16)
    return out


def render_position_loss(ax, results: dict, encodings=None, bin_size: int = 8):
    """Mean loss (over windows and seeds) at each position of the longest window, in bins of
    `bin_size` positions; a learned table only up to L. Returns dict(encoding -> (positions, loss))."""
    encodings = list(results["summary"]) if encodings is None else list(encodings)
    L = results["provenance"]["config"]["train_len"]
    out = {}
    for enc in encodings:
        curves = np.array([r["per_position_loss"] for r in results["runs"] if r["encoding"] == enc])
        if curves.size == 0:
            raise ValueError(f"encoding {enc!r} is not in these results")
        mean = curves.mean(0)
        n = len(mean) // bin_size * bin_size
        binned = mean[:n].reshape(-1, bin_size).mean(1)
        centers = np.arange(len(binned)) * bin_size + bin_size / 2
        ax.plot(centers, binned, color=ENCODING_COLORS.get(enc, "k"), lw=1.4, label=encoding_label(enc))
        out[enc] = (centers, binned)
    ax.axvline(L, color="k", lw=0.8, ls="--")
    ax.text(L, ax.get_ylim()[1], " L", fontsize=8, va="top")
    ax.set_xlabel(tr("position in the window", "窗口内的位置"), fontsize=8)
    ax.set_ylabel(tr("loss (nats/char)", "损失（nats/字符）"), fontsize=8)
    ax.set_title(tr(f"loss at each position of a {len(mean)}-char window (bins of {bin_size})",
                 f"{len(mean)} 字符窗口中各位置的损失（每 {bin_size} 个位置一组）"), fontsize=9, y=1.0)
    ax.legend(fontsize=8, ncol=3)
    _tidy(ax)
    return out


def render_training_curves(ax, results: dict):
    """Training loss (mean over seeds) against the step, per encoding. Returns dict(encoding -> (steps, loss))."""
    out = {}
    for enc in results["summary"]:
        curves = [r["train_curve"] for r in results["runs"] if r["encoding"] == enc]
        steps = np.array([s for s, _ in curves[0]])
        loss = np.array([[v for _, v in c] for c in curves]).mean(0)
        ax.plot(steps, loss, color=ENCODING_COLORS.get(enc, "k"), lw=1.2, label=encoding_label(enc))
        out[enc] = (steps, loss)
    ax.set_xlabel(tr("step", "训练步"), fontsize=8)
    ax.set_ylabel(tr("training loss (nats/char)", "训练损失（nats/字符）"), fontsize=8)
    ax.set_title(tr("training at L (windows the same for every encoding)", "在 L 上训练（各编码用的窗口相同）"),
                 fontsize=9, y=1.0)
    ax.legend(fontsize=8, ncol=3)
    _tidy(ax)
    return out


def render_own_encoding(axes, results: dict, run: dict):
    """Your encoding's run (posenc_lib.experiments.own_encoding.train_own_encoding) beside the cached arms.
    Left: loss vs evaluation window, cached arms faint (mean over seeds, min..max band), yours in black
    (dashed when its steps or windows differ from the cached run's: then the numbers do not compare).
    Right: training loss vs step, where the same step does compare (same batches for the same seed).
    Returns dict(lengths, mean, own, comparable, train, own_train)."""
    ax_curve, ax_train = axes
    cfg = results["provenance"]["config"]
    L, multiples = cfg["train_len"], _multiples(results)
    if sorted(int(m) for m in run["loss"]) != multiples:
        raise ValueError(f"run must be evaluated at the cached multiples {multiples}, got {sorted(run['loss'])}")
    lengths = np.array(multiples) * L
    comparable = run["steps"] == cfg["steps"] and run["eval_windows"] == cfg["eval_windows"]
    out = {"lengths": lengths, "mean": {}, "comparable": comparable, "train": {}}
    for enc in results["summary"]:
        mean, low, high = _seed_stats(results, enc, multiples)
        color = ENCODING_COLORS.get(enc, "k")
        ax_curve.plot(lengths, mean, "o-", color=color, alpha=0.45, lw=1.2, ms=3, label=encoding_label(enc))
        if not np.isnan(mean[1:]).all():
            _band(ax_curve, lengths, low, high, color=color, alpha=0.08)
        out["mean"][enc] = mean
    own = np.array([np.nan if run["loss"][str(m)] is None else run["loss"][str(m)] for m in multiples])
    label = tr(f"{run['encoding']} (seed {run['seed']}, {run['steps']} steps)",
               f"{run['encoding']}（种子 {run['seed']}，{run['steps']} 步）")
    ax_curve.plot(lengths, own, "o-" if comparable else "o--", color="k", lw=2.2, ms=5, label=label)
    out["own"] = own
    ax_curve.axvline(L, color="k", lw=0.8, ls="--")
    ax_curve.set_xscale("log", base=2)
    ax_curve.set_xticks(lengths, [f"{m}L={n}" if m > 1 else f"L={n}" for m, n in zip(multiples, lengths)])
    ax_curve.set_xlabel(tr("evaluation window (characters)", "评估窗口（字符数）"), fontsize=8)
    ax_curve.set_ylabel(tr("loss on the last L chars (nats/char)", "最后 L 个字符的损失（nats/字符）"), fontsize=8)
    seeds = len(cfg["seeds"])
    ax_curve.set_title(tr(f"yours: 1 seed; cached: {seeds} seeds, {cfg['steps']} steps",
                          f"你的运行：1 个种子；缓存结果：{seeds} 个种子，{cfg['steps']} 步") if comparable else
                       tr(f"NOT comparable: yours {run['steps']} steps, {run['eval_windows']} windows; "
                          f"cached {cfg['steps']}, {cfg['eval_windows']}",
                          f"不可比：你的运行 {run['steps']} 步、{run['eval_windows']} 个窗口；"
                          f"缓存结果为 {cfg['steps']} 步、{cfg['eval_windows']} 个窗口"), fontsize=9, y=1.0,
                       color="k" if comparable else "#d62728")
    _tidy(ax_curve)
    for enc in results["summary"]:
        curves = [r["train_curve"] for r in results["runs"] if r["encoding"] == enc]
        steps = np.array([s for s, _ in curves[0]])
        loss = np.array([[v for _, v in c] for c in curves]).mean(0)
        ax_train.plot(steps, loss, color=ENCODING_COLORS.get(enc, "k"), alpha=0.45, lw=1.0)
        out["train"][enc] = (steps, loss)
    own_steps, own_loss = (np.array(v, dtype=float) for v in zip(*run["train_curve"]))
    ax_train.plot(own_steps, own_loss, "o-" if len(own_steps) < 8 else "-", color="k", lw=2.0, ms=3)
    out["own_train"] = (own_steps, own_loss)
    ax_train.set_xlabel(tr("step", "训练步"), fontsize=8)
    ax_train.set_ylabel(tr("training loss (nats/char)", "训练损失（nats/字符）"), fontsize=8)
    ax_train.set_title(tr("training loss at L (the same batches at the same step)",
                          "L 上的训练损失（同一步用同一批数据）"), fontsize=9, y=1.0)
    ax_train.legend(*ax_curve.get_legend_handles_labels(), fontsize=8, loc="upper right")  # the key of both panels
    tidy(ax_train, nbins=5)
    ax_curve.figure.subplots_adjust(left=0.07, right=0.97, wspace=0.25, bottom=0.16)
    return out


def retrieval_data(results: dict, key: str = "probe_summary") -> dict:
    """The retrieval probe's cells sorted into the two views of `render_retrieval`, per group (an encoding
    of the extrapolation results, or with key="finetuned_probe_summary" a fine-tune arm of the
    context-extension results). k = the string's length (results["probe_len"]), L = train_len.
    "by_distance": the far cells (first copy k + 1 characters into a window of n, distance n - 2k)
    and the near cell in a window of L (distance k), by distance; "by_window": the near cells
    (distance k: the copies back to back, at the window's end) by window length. Each: dict(x, mean,
    low, high, control, accuracy) arrays over seeds (NaN where the model has no value).
    Returns dict(groups {group: {"by_distance": ..., "by_window": ...}}, k, L)."""
    cfg = results["provenance"]["config"]
    k, L = results["probe_len"], cfg["train_len"]
    table = results.get(key)
    if not table:
        raise ValueError(f"these results have no {key!r} (re-run `make experiments`)")

    def view(cells, x_of):
        cells = sorted(cells, key=x_of)

        def stat(field, which="mean"):
            return np.array([np.nan if c[field] is None else c[field][which] for c in cells], dtype=float)

        return {"x": np.array([x_of(c) for c in cells]), "mean": stat("gain"), "low": stat("gain", "min"),
                "high": stat("gain", "max"), "control": stat("control_loss"), "accuracy": stat("accuracy"),
                "control_accuracy": stat("control_accuracy")}

    groups = {}
    for group, cells in table.items():
        far = [c for c in cells if c["distance"] == c["window"] - 2 * k and c["distance"] != k]
        near = [c for c in cells if c["distance"] == k]
        groups[group] = {"by_distance": view([c for c in near if c["window"] == L] + far, lambda c: c["distance"]),
                         "by_window": view(near, lambda c: c["window"])}
    return {"groups": groups, "k": k, "L": L}


def render_retrieval(axes, results: dict, key: str = "probe_summary", groups=None):
    """The retrieval probe: gain = control loss - probe loss on the second copy (nats/char; mean over
    seeds, min..max band); 0 = nothing retrieved, a perfect copier gains about the control loss.
    Left: by the distance between the copies (each in the shortest window that holds it); right: the
    copies back to back (distance k) at the end of ever longer windows. Encodings (or fine-tune arms)
    in their colours. Returns retrieval_data plus "ylim" and "copier_gain" (the smallest and largest
    mean control loss drawn: what a model copying every character would gain; None if nothing is drawn)."""
    ax_dist, ax_win = axes
    data = retrieval_data(results, key)
    k, L = data["k"], data["L"]
    names = list(data["groups"]) if groups is None else list(groups)
    colors = METHOD_COLORS if key.startswith("finetuned") else ENCODING_COLORS
    values = []
    for name in names:
        if name not in data["groups"]:
            raise ValueError(f"groups must be among {list(data['groups'])}, got {name!r}")
        color = colors.get(name, "k")
        label = str(METHOD_LABELS.get(name, name)) if key.startswith("finetuned") else encoding_label(name)
        for ax, part in ((ax_dist, "by_distance"), (ax_win, "by_window")):
            v = data["groups"][name][part]
            ax.plot(v["x"], v["mean"], "o-", color=color, ms=3.5, lw=1.3, label=label)
            if not np.isnan(v["mean"]).all():
                ok = ~np.isnan(v["mean"])
                _band(ax, v["x"][ok], v["low"][ok], v["high"][ok], color=color, alpha=0.15)
            values += [x for x in (*v["low"], *v["high"]) if not np.isnan(x)]
    low, high = (min(values), max(values)) if values else (0.0, 0.0)
    ylim = (min(-0.1, low - 0.05), max(0.5, high + 0.1))
    controls = [x for name in names for part in ("by_distance", "by_window")
                for x in data["groups"][name][part]["control"] if not np.isnan(x)]
    copier = (min(controls), max(controls)) if controls else None  # what copying every character would gain
    if copier is not None and copier[0] > ylim[1]:
        ax_dist.text(0.98, 0.97, tr(f"a perfect copier would gain {copier[0]:.1f}-{copier[1]:.1f} (off the scale)",
                                    f"完美照抄的模型增益为 {copier[0]:.1f}-{copier[1]:.1f}（超出坐标范围）"),
                     fontsize=8, ha="right", va="top", transform=ax_dist.transAxes)
    for ax in (ax_dist, ax_win):
        ax.axhline(0.0, color="k", lw=0.8, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_ylim(*ylim)
        _tidy(ax)
    dist = data["groups"][names[0]]["by_distance"]["x"] if names else []
    ax_dist.set_xticks(dist, [f"{d:g}" for d in dist])
    ax_dist.axvline(L - k, color="k", lw=0.8, ls=":")
    ax_dist.text(L - k, 0.03, tr(" both copies fit in L to the left", " 此线左侧两份都落在 L 之内"), fontsize=8,
                 va="bottom", transform=ax_dist.get_xaxis_transform())
    ax_dist.set_xlabel(tr("distance between the copies (characters)", "两份之间的距离（字符数）"), fontsize=8)
    ax_dist.set_ylabel(tr("gain: control - probe loss (nats/char)", "增益：对照损失 - 探针损失（nats/字符）"),
                       fontsize=8)
    ax_dist.set_title(tr(f"retrieval by distance ({k} random letters, scored on the 2nd copy)",
                         f"检索随距离的变化（{k} 个随机字母，在第 2 份上计分）"), fontsize=9, y=1.0)
    wins = data["groups"][names[0]]["by_window"]["x"] if names else []
    ax_win.set_xticks(wins, [f"{w // L}L={w}" if w > L else f"L={w}" for w in wins])
    ax_win.axvline(L, color="k", lw=0.8, ls=":")
    ax_win.set_xlabel(tr("window (the copies back to back at its end)", "窗口（两份首尾相接放在末尾）"), fontsize=8)
    ax_win.set_title(tr(f"distance {k}, ever further into the window", f"距离 {k}，在窗口中越来越靠后"),
                     fontsize=9, y=1.0)
    ax_win.legend(fontsize=8, ncol=2, loc="upper left")
    ax_dist.figure.subplots_adjust(left=0.08, right=0.98, wspace=0.25, bottom=0.16)
    return {**data, "ylim": ylim, "copier_gain": copier}


# ------------------------------------------------------------------------------- 08: context extension


def rope_scaling_data(method: str = "yarn", factor: float = 4.0, dim: int = 16, base: float = 10000.0,
                      original_max: int = 64, abf_base: float = ABF_BASE) -> dict:
    """Frequencies of plain RoPE and of `method` extended by `factor` from `original_max` positions.

    The scaling dict is the experiments' (`posenc_lib.scaling.extension_scaling`; dynamic: its fixed
    factor at seq_len = factor * original_max); method "abf" is plain RoPE with the base raised from
    `base` to `abf_base` ({"rope_type": "default", "rope_theta": abf_base}, whatever the factor). Returns
    dict(theta, scaled, attention_factor, wavelength, scaled_wavelength, turns_train (original_max * theta
    / 2 pi), turns_long (factor * original_max * scaled / 2 pi), ratio (scaled / theta), scaling, long_len,
    and per pair: slow (turns_train < 1), kept (ratio 1: untouched), interpolated (ratio 1/factor: fully interpolated),
    interpolation ((1 - ratio) / (1 - 1/factor): 0 untouched, 1 fully interpolated; above 1 where a
    method slows a pair more than 1/factor, e.g. dynamic NTK); and first_slow (index of the first slow
    pair, None if none) and overshoot (max turns_long / turns_train over the slow pairs, None if none)).
    """
    if method == "abf":
        scaling = {"rope_type": "default", "rope_theta": float(abf_base)}
    else:
        scaling = extension_scaling(method, float(factor), original_max_position_embeddings=int(original_max))
    theta, _ = rope_inv_freq(dim, base=base)
    long_len = int(round(factor * original_max))
    scaled, attention_factor = rope_inv_freq(dim, base=base, scaling=scaling, seq_len=long_len)
    theta, scaled = theta.numpy(), scaled.numpy()
    ratio = scaled / theta
    turns_train, turns_long = original_max * theta / (2 * math.pi), long_len * scaled / (2 * math.pi)
    slow = turns_train < 1.0
    full = 1.0 - 1.0 / factor  # the slow-down of a fully interpolated pair
    interpolation = (1.0 - ratio) / full if full > 0 else np.zeros_like(ratio)
    return {"theta": theta, "scaled": scaled, "attention_factor": float(attention_factor),
            "wavelength": 2 * math.pi / theta, "scaled_wavelength": 2 * math.pi / scaled,
            "turns_train": turns_train, "turns_long": turns_long, "ratio": ratio, "scaling": scaling,
            "long_len": long_len, "slow": slow, "kept": np.abs(ratio - 1.0) < 1e-9,
            "interpolated": np.abs(ratio - 1.0 / factor) < 1e-9, "interpolation": interpolation,
            "first_slow": int(np.argmax(slow)) if slow.any() else None,
            "overshoot": float((turns_long[slow] / turns_train[slow]).max()) if slow.any() else None}


def render_rope_scaling(axes, method: str = "yarn", factor: float = 4.0, dim: int = 16, base: float = 10000.0,
                        original_max: int = 64):
    """Left: wavelength of every pair, plain vs `method` (log axis), with the trained length and the
    target length. Right: theta'/theta per pair (1 = untouched, 1/factor = fully interpolated), and
    the turns each pair makes over the target window vs over the training window. Returns rope_scaling_data."""
    ax_wave, ax_ratio = axes
    d = rope_scaling_data(method, factor, dim, base, original_max)
    i = np.arange(len(d["theta"]))
    color = METHOD_COLORS.get(method, "k")
    ax_wave.semilogy(i, d["wavelength"], "o-", color="#bbbbbb", ms=3, lw=1, label=tr("plain RoPE", "原始 RoPE"))
    if method != "none":
        ax_wave.semilogy(i, d["scaled_wavelength"], "o-", color=color, ms=3, lw=1.4, label=str(METHOD_LABELS[method]))
    ax_wave.axhline(original_max, color="k", ls="--", lw=0.8)
    ax_wave.axhline(d["long_len"], color="k", ls=":", lw=0.8)
    ax_wave.text(i[-1], original_max, f"L0={original_max}", fontsize=8, ha="right", va="bottom")
    ax_wave.text(i[-1], d["long_len"], f"{factor:g}·L0={d['long_len']}", fontsize=8, ha="right", va="bottom")
    ax_wave.set_xlabel(tr("pair index i (high frequency -> low)", "频率对序号 i（高频 -> 低频）"), fontsize=8)
    ax_wave.set_ylabel(tr("wavelength 2π/θ (tokens)", "波长 2π/θ（token 数）"), fontsize=8)
    ax_wave.legend(fontsize=8, loc="upper left")
    ax_wave.set_title(tr(f"{METHOD_LABELS[method]}, factor {factor:g}, head dim {dim}, L0 {original_max}",
                         f"{METHOD_LABELS[method]}，因子 {factor:g}，头维度 {dim}，L0 {original_max}"),
                      fontsize=9, y=1.0)
    _tidy(ax_wave)
    top = int(math.ceil(math.log10(max(d["scaled_wavelength"].max(), d["long_len"]))))
    ax_wave.yaxis.set_major_locator(FixedLocator([10.0 ** k for k in range(0, top + 1, 2 if top > 5 else 1)]))
    ax_wave.yaxis.set_major_formatter(_PLAIN)  # plain text, not mathtext: parsing "10^k" is slow
    ax_ratio.plot(i, d["ratio"], "o-", color=color, ms=3, lw=1.4, label="θ'/θ")
    ax_ratio.axhline(1.0, color="#bbbbbb", lw=0.8)
    ax_ratio.axhline(1.0 / factor, color="k", ls=":", lw=0.8)
    ax_ratio.text(0, 1.0 / factor, tr(" 1/factor: a shaded pair on or below stays in its trained angles",
                                     " 1/factor：阴影中的频率对只要不高于此线，就不超出训练角度"), fontsize=8,
                  va="bottom")
    unseen = d["turns_train"] < 1.0  # pairs that never made a full turn in training
    if unseen.any():
        ax_ratio.axvspan(i[unseen][0] - 0.5, i[-1] + 0.5, color="#f3d7d7", lw=0, zorder=0)
        ax_ratio.text(i[-1] + 0.4, 0.02, tr("shaded: < 1 turn in L0 (angles unseen past L0)",
                                            "阴影：L0 内转不满 1 圈（超过 L0 的角度没见过）"), fontsize=8,
                      color="#a33", ha="right", transform=ax_ratio.get_xaxis_transform())
        if d["overshoot"] > 1.0 + 1e-9:  # some slow pair turns past the angles it saw in training
            ax_ratio.text(i[-1] + 0.4, 0.1, tr(f"slow pairs reach {d['overshoot']:.2f}x their trained angles",
                                               f"慢速频率对转到训练角度的 {d['overshoot']:.2f} 倍"),
                          fontsize=8, color="#a33", ha="right", transform=ax_ratio.get_xaxis_transform())
    ax_ratio.set_ylim(0, 1.1)
    ax_ratio.set_xlabel(tr("pair index i", "频率对序号 i"), fontsize=8)
    ax_ratio.set_ylabel(tr("θ' / θ (1 = untouched)", "θ' / θ（1 = 不变）"), fontsize=8)
    extra = (tr(f", attention x{d['attention_factor']:.3f}", f"，注意力 x{d['attention_factor']:.3f}")
             if d["attention_factor"] != 1.0 else "")
    ax_ratio.set_title(tr(f"what {METHOD_LABELS[method]} does to each frequency{extra}",
                          f"{METHOD_LABELS[method]} 对各频率的改动{extra}"), fontsize=9, y=1.0)
    _tidy(ax_ratio)
    for ax in (ax_wave, ax_ratio):  # few pair-index ticks: tick labels are most of the drawing time
        ax.xaxis.set_major_locator(MaxNLocator(4, integer=True))
    ax_wave.figure.subplots_adjust(left=0.08, right=0.97, wspace=0.3, bottom=0.16)
    return d


def render_overshoot(ax, method: str = "ntk", factor: float = 4.0, settings=((16, 64), (128, 64), (128, 4096)),
                     base: float = 10000.0):
    """How far each pair turns over factor * L0 in units of its turns over L0 in training
    (turns_long / turns_train = factor * theta'/theta), against the pair's place i / (d/2) in the head,
    for each (head dim d, L0) in `settings`: fast pairs thin, slow pairs (< 1 turn in L0) bold, the first
    slow pair marked with its overshoot. For NTK-aware the curve is factor ** (1 - 2i/(d-2)) whatever d,
    so the overshoot is set by WHERE the slow pairs start (L0 against the base), not by how many pairs
    there are. Returns dict((d, L0) -> rope_scaling_data)."""
    out = {}
    colors = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")
    for k, (dim, l0) in enumerate(settings):
        d = rope_scaling_data(method, factor, dim=int(dim), base=base, original_max=int(l0))
        out[(int(dim), int(l0))] = d
        x = np.arange(len(d["theta"])) / len(d["theta"])
        reach = d["turns_long"] / d["turns_train"]
        color = colors[k % len(colors)]
        ax.plot(x, reach, "-", color=color, lw=0.8, alpha=0.5)
        ax.plot(x[d["slow"]], reach[d["slow"]], "o-", color=color, ms=3 if dim <= 32 else 1.5, lw=1.6,
                label=tr(f"d={dim}, L0={l0}: first slow pair {d['first_slow']}, overshoot {d['overshoot']:.2f}x",
                         f"d={dim}，L0={l0}：首个慢速对 {d['first_slow']}，达训练角度的 {d['overshoot']:.2f} 倍")
                if d["slow"].any() else tr(f"d={dim}, L0={l0}: no slow pair", f"d={dim}，L0={l0}：没有慢速对"))
        if d["slow"].any():
            i0 = d["first_slow"]
            ax.plot([x[i0]], [reach[i0]], "D", color=color, ms=6, mfc="none")
    ax.axhline(1.0, color="k", lw=0.8, ls="--")
    ax.text(0.01, 1.0, tr("trained range", "训练范围"), fontsize=8, ha="left", va="bottom",
            transform=ax.get_yaxis_transform())
    ax.set_xlabel(tr("pair index / number of pairs (fast -> slow)", "频率对序号 / 总对数（快 -> 慢）"), fontsize=8)
    ax.set_ylabel(tr("turns over factor·L0 / turns over L0", "factor·L0 内圈数 / L0 内圈数"), fontsize=8)
    ax.set_title(tr(f"{METHOD_LABELS[method]} at factor {factor:g}: how far past its trained angles each pair turns",
                    f"{METHOD_LABELS[method]}，因子 {factor:g}：各频率对超出训练角度多少"),
                 fontsize=9, y=1.0)
    ax.set_ylim(0, factor * 1.08)
    ax.legend(fontsize=8, loc="upper right")
    _tidy(ax)
    return out


def render_extension(ax, extension: dict, highlight: str = "all", show_finetuned: bool = True):
    """Loss vs evaluation length for the RoPE models of 07 with every extension method (mean line,
    min..max band over seeds, no fine-tuning), plus (dashed, mean and band over the fine-tune seeds) each
    arm fine-tuned at finetune_multiple * L. Returns dict(lengths, mean (method -> array), finetuned
    (arm -> array of the mean over seeds), highlight)."""
    cfg = extension["provenance"]["config"]
    L = cfg["train_len"]
    evals = extension["no_finetune"]
    methods = list(evals[0]["loss"])
    if highlight != "all" and highlight not in methods:
        raise ValueError(f"highlight must be 'all' or one of {methods}, got {highlight!r}")
    multiples = sorted(int(m) for m in evals[0]["loss"][methods[0]])
    lengths = np.array(multiples) * L
    out = {"lengths": lengths, "mean": {}, "finetuned": {}, "highlight": highlight}
    for method in methods:
        values = np.array([[e["loss"][method][str(m)] for m in multiples] for e in evals])
        mean = values.mean(0)
        out["mean"][method] = mean
        alpha = 1.0 if highlight in ("all", method) else 0.15
        color = METHOD_COLORS.get(method, "k")
        ax.plot(lengths, mean, "o-", color=color, alpha=alpha, ms=4, lw=1.4, label=str(METHOD_LABELS[method]))
        _band(ax, lengths, values.min(0), values.max(0), color=color, alpha=0.2 * alpha)
    if show_finetuned:
        fts = extension["finetuned"]
        for method in dict.fromkeys(ft["method"] for ft in fts):
            values = np.array([[ft["loss"][str(m)] for m in multiples] for ft in fts if ft["method"] == method])
            out["finetuned"][method] = values.mean(0)
            color = METHOD_COLORS.get(method, "k")
            seeds = (tr(f"{len(values)} seeds", f"{len(values)} 个种子") if len(values) > 1
                     else tr(f"{len(values)} seed", f"{len(values)} 个种子"))
            ax.plot(lengths, values.mean(0), "s--", color=color, ms=4, lw=1.2,
                    label=tr(f"{METHOD_LABELS[method]} + fine-tune ({seeds})",
                             f"{METHOD_LABELS[method]} + 微调（{seeds}）"))
            if len(values) > 1:
                _band(ax, lengths, values.min(0), values.max(0), color=color, alpha=0.12)
    ax.axvline(L, color="k", lw=0.8, ls="--")
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [f"{m}L={n}" if m > 1 else f"L={n}" for m, n in zip(multiples, lengths)])
    ax.set_xlabel(tr("evaluation window (characters)", "评估窗口（字符数）"), fontsize=8)
    ax.set_ylabel(tr("loss on the last L chars (nats/char)", "最后 L 个字符的损失（nats/字符）"), fontsize=8)
    ax.set_title(tr(f"RoPE trained at L={L}: extension methods (factor = window / L; dynamic: 2); dashed: fine-tuned "
                    f"{cfg['finetune_steps']} steps at {cfg['finetune_multiple'] * L}",
                    f"L={L} 上训练的 RoPE：各扩展方法（因子 = 窗口 / L；动态 NTK 取 2）；虚线：在 "
                    f"{cfg['finetune_multiple'] * L} 上微调 {cfg['finetune_steps']} 步"), fontsize=8.5, y=1.0)
    ax.legend(fontsize=8, ncol=2, loc="upper left")
    _tidy(ax)
    return out


def render_method_position_loss(ax, data: dict, bin_size: int = 16):
    """Per-position loss of the RoPE model with each method (from experiments.method_position_loss),
    in bins of `bin_size` positions, the trained length marked. Returns dict(label -> (centers, binned))."""
    out = {}
    for label, curve in data["curves"].items():
        values = np.asarray(curve, dtype=float)
        n = len(values) // bin_size * bin_size
        binned = values[:n].reshape(-1, bin_size).mean(1)
        centers = np.arange(len(binned)) * bin_size + bin_size / 2
        ax.plot(centers, binned, lw=1.4, color=METHOD_COLORS.get(label, None),
                label=str(METHOD_LABELS.get(label, label)))
        out[label] = (centers, binned)
    ax.axvline(data["L"], color="k", lw=0.8, ls="--")
    ax.text(data["L"], 0.02, " L", fontsize=8, transform=ax.get_xaxis_transform())
    ax.set_xlabel(tr("position in the window", "窗口内的位置"), fontsize=8)
    ax.set_ylabel(tr("loss (nats/char)", "损失（nats/字符）"), fontsize=8)
    ax.set_title(tr(f"RoPE model, windows of {data['multiple']}L, factor {data['multiple']} (bins of {bin_size})",
                    f"RoPE 模型，窗口 {data['multiple']}L，因子 {data['multiple']}（每 {bin_size} 个位置一组）"),
                 fontsize=9, y=1.0)
    ax.legend(fontsize=8, ncol=2)
    _tidy(ax)
    return out
