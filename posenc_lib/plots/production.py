"""Notebook 10: RoPE as production checkpoints use it. The base against the context length (wavelengths,
and Men et al.'s similarity sum), which dims a partial-rotary head turns, LongRoPE's two sets of factors,
what each layer of a model does with positions (local/global bases, NoPE layers, chunks), why MLA's key
up-projection can be absorbed only without RoPE, the softmax's budget of attention, and every model's
wavelength spectrum against its context.

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew. The helpers above
them compute that data from posenc_lib's core (`configs.from_hf_config`'s reports, `rope.apply_rope`,
`scaling.rope_inv_freq`); nothing here reads data/ (the notebook hands the reports in).
Conventions, as in posenc_lib.rope: pair i turns counter-clockwise by m * theta_i at position m,
theta_i = base ** (-2i/r) over the r ROTATED dims; wavelength_i = 2 pi / theta_i tokens per full turn;
a pair "makes less than one turn" in L tokens when its wavelength exceeds L.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from matplotlib import colormaps
from matplotlib.patches import Rectangle
from matplotlib.ticker import LogLocator, NullLocator

from .. import _checks
from ..configs import (
    ATTENTION_KINDS,
    MIXERS,
    LayerPositions,
    ModelPositions,
    attention_temperature,
    table_cell,
)
from ..configs.report import KindLabel
from ..i18n import display_width as _width, ljust as _ljust, tr
from ..rope import apply_rope
from ..scaling import longrope_attention_factor, rope_inv_freq, rotary_dim, yarn_attention_factor
from ._style import tidy, to_numpy, two_panels

__all__ = [
    "rope_self_similarity", "first_negative_distance", "pairs_without_a_turn", "render_base_context",
    "render_rotated_dims", "partial_rotary_scores", "render_partial_rotary", "render_longrope",
    "KIND_COLORS", "layer_kind", "render_layer_positions", "render_absorption_error",
    "needle_weight", "log_n_scale", "render_attention_budget",
    "long_context_wavelengths", "spectrum_rows", "checkpoint_table", "render_checkpoint_spectra",
]


# ----------------------------------------------------------------------------- the base against the context
def _frequencies(inv_freq) -> torch.Tensor:
    """theta_i as a float64 CPU tensor (r/2,), checked finite and >= 0, not all 0. A zero is p-RoPE's stopped pair
    (Gemma 4's `proportional`): it never turns, its wavelength 2 pi / 0 is infinite, its cosine always 1."""
    theta = torch.as_tensor(inv_freq, dtype=torch.float64).detach().cpu().reshape(-1)
    if (theta.numel() == 0 or not bool(torch.isfinite(theta).all()) or bool((theta < 0).any())
            or not bool((theta > 0).any())):
        raise ValueError("inv_freq must hold finite frequencies theta_i >= 0, at least one of them > 0")
    return theta


def rope_self_similarity(inv_freq, length: int, *, start: int = 0) -> np.ndarray:
    """B(m) = sum_i cos(m * theta_i) for m = start .. start + length - 1, float64 numpy (length,).

    Men et al. (2024, "Base of RoPE Bounds Context Length") use this sum: for a query q with independent
    unit-variance entries, the expected RoPE score of q against a copy of itself m tokens away is
    q^T R_m q = tr(R_m) = 2 B(m) on average, and against an unrelated key 0; they ask that B(m) >= 0 over
    the whole context (a token still scores its own copy above a random one). B(0) = r/2.
    Exact in float64 without an angle per (m, i) in memory: cos((a + j) t) = cos(a t) cos(j t) - sin(a t)
    sin(j t), so blocks of 1024 positions are two matrix products.
    """
    theta = _frequencies(inv_freq).numpy()
    length = _checks.positive_int("length", length)
    start = _checks.positive_int("start", start, allow_zero=True)
    block = 1024  # numpy: small float64 products, where torch's thread pool costs more than the work
    j = np.arange(block, dtype=np.float64)[:, None] * theta                           # (block, r/2): j theta_i
    a = np.arange(start, start + length, block, dtype=np.float64)[:, None] * theta   # (blocks, r/2): a theta_i
    sums = np.cos(a) @ np.cos(j).T - np.sin(a) @ np.sin(j).T                         # (blocks, block): B(a + j)
    return sums.reshape(-1)[:length]


def first_negative_distance(inv_freq, limit: int) -> int | None:
    """The first distance m < limit with B(m) = sum_i cos(m theta_i) < 0 (`rope_self_similarity`), or None
    when B stays >= 0 over 0 .. limit - 1. Scans in chunks of 2**18 positions and stops at the first."""
    limit = _checks.positive_int("limit", limit)
    chunk = 1 << 18
    for start in range(0, limit, chunk):
        values = rope_self_similarity(inv_freq, min(chunk, limit - start), start=start)
        below = np.nonzero(values < 0)[0]
        if below.size:
            return start + int(below[0])
    return None


def pairs_without_a_turn(inv_freq, length: int) -> int:
    """How many pairs make less than one full turn in `length` tokens: wavelength 2 pi / theta_i > length."""
    theta = _frequencies(inv_freq)
    length = _checks.positive_int("length", length)
    return int((2 * math.pi / theta > length).sum())


def _few_log_ticks(ax, axis: str = "y") -> None:
    """At most ~5 labelled decades and no minor ticks on a log axis: tick text is most of a redraw."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_locator(LogLocator(numticks=5))
    target.set_minor_locator(NullLocator())


def _envelope(values: np.ndarray, bins: int = 600):
    """(x, low, high): the min and max of `values` in up to `bins` runs of consecutive positions."""
    step = max(1, math.ceil(len(values) / bins))
    padded = np.pad(values, (0, (-len(values)) % step), mode="edge").reshape(-1, step)
    x = np.arange(padded.shape[0]) * step
    return x, padded.min(axis=1), padded.max(axis=1)


def render_base_context(axes, base: float = 10000.0, context: int = 4096, *, head_dim: int = 128):
    """The base against a context length, for a head of `head_dim` dims (all rotated).

    Left: wavelength 2 pi / theta_i of every pair (log scale) with the context length as a line; pairs
    above it (red) make less than one turn inside the context. Right: B(m) / (head_dim/2) for m = 0 ..
    context - 1 (`rope_self_similarity`; drawn as its min-max envelope), with the first m where it drops
    below 0 marked. Returns dict(wavelengths (r/2,), slow (count above the line), similarity (context,),
    first_negative (int or None)).
    """
    base = _checks.positive_float("base", base, minimum=1.0)
    context = _checks.positive_int("context", context)
    theta, _ = rope_inv_freq(head_dim, base=base)
    waves = (2 * math.pi / theta).numpy()
    slow = waves > context
    ax_wave, ax_sim = axes
    pairs = np.arange(len(waves))
    ax_wave.semilogy(pairs[~slow], waves[~slow], "o", ms=2.5, color="C0",
                     label=tr(">= 1 turn in the context", "上下文内转 >= 1 圈"))
    ax_wave.semilogy(pairs[slow], waves[slow], "o", ms=2.5, color="C3",
                     label=tr("< 1 turn in the context", "上下文内转不满 1 圈"))
    ax_wave.axhline(context, color="k", lw=1, ls="--")
    ax_wave.set_ylim(1, max(2 * math.pi * base, 4 * context))
    ax_wave.set_xlabel(tr("pair i", "频率对 i"), fontsize=8)
    ax_wave.set_ylabel(tr("wavelength (tokens)", "波长（token 数）"), fontsize=8)
    ax_wave.set_title(tr(f"base {base:.3g}: {int(slow.sum())} of {len(waves)} pairs < 1 turn in {context:,}",
                         f"底数 {base:.3g}：{len(waves)} 对中有 {int(slow.sum())} 对在 {context:,} 内转不满 1 圈"),
                      fontsize=9)
    ax_wave.legend(fontsize=8, loc="upper left", frameon=False)
    tidy(ax_wave, axis="x")
    _few_log_ticks(ax_wave)
    similarity = rope_self_similarity(theta, context)
    x, low, high = _envelope(similarity / (head_dim // 2))
    ax_sim.fill_between(x, low, high, color="C0", lw=0.6, alpha=0.6)
    ax_sim.axhline(0, color="k", lw=0.8)
    below = np.nonzero(similarity < 0)[0]
    first = int(below[0]) if below.size else None
    if first is not None:
        ax_sim.axvline(first, color="C3", lw=1.2)
        title = tr(f"B(m) < 0 first at m = {first:,}", f"m = {first:,} 处 B(m) 首次 < 0")
    else:
        title = tr(f"B(m) >= 0 for every m < {context:,}", f"所有 m < {context:,} 都有 B(m) >= 0")
    ax_sim.set_xlim(0, context)
    ax_sim.set_ylim(-0.25, 1.02)
    ax_sim.set_xlabel(tr("distance m (tokens)", "距离 m（token 数）"), fontsize=8)
    ax_sim.set_ylabel("B(m) / (d/2)", fontsize=8)
    ax_sim.set_title(title, fontsize=9)
    tidy(ax_sim)
    two_panels(axes)
    return {"wavelengths": waves, "slow": int(slow.sum()), "similarity": similarity, "first_negative": first}


# ----------------------------------------------------------------------------- partial rotary
_DIM_COLORS = colormaps["viridis"].with_extremes(bad="0.88")  # a pair's place, fast (dark) to slow; grey: not turned


def _pair_of_dim(layer: LayerPositions) -> np.ndarray:
    """(head_dim,) float: each rotated dim's pair index / (pairs - 1) (0 fastest, 1 slowest), NaN where
    the dim is not turned. "half" pairs dims (s + i, s + i + r/2), "interleaved" (s + 2i, s + 2i + 1)."""
    values = np.full(layer.head_dim, np.nan)
    start, stop = layer.rotary_dims
    r = stop - start
    if r:
        pairs = np.arange(r) % (r // 2) if layer.layout == "half" else np.arange(r) // 2
        values[start:stop] = pairs / max(r // 2 - 1, 1)
    return values


def render_rotated_dims(ax, layers: dict):
    """Which dims of one head turn, one row per model: `layers` maps a label to a LayerPositions (e.g.
    `from_hf_config(config).layer(0)`). Each dim is a cell, coloured by the pair it belongs to (dark:
    fast pairs, light: slow), grey where nothing turns; the two dims of a pair share a colour, so the
    "half" layout shows two matching ramps and "interleaved" one ramp of twins.
    Returns dict(label -> (head_dim,) array of pair positions, NaN = not turned)."""
    out = {}
    labels = list(layers)
    for row, label in enumerate(labels):
        layer = layers[label]
        values = _pair_of_dim(layer)
        out[label] = values
        ax.pcolormesh(np.arange(layer.head_dim + 1), [row - 0.38, row + 0.38], np.ma.masked_invalid(values[None]),
                      cmap=_DIM_COLORS, vmin=0, vmax=1)
        start, stop = layer.rotary_dims
        ax.text(layer.head_dim + 3, row, tr(f"{stop - start} of {layer.head_dim}, {layer.layout}",
                                           f"{stop - start}/{layer.head_dim} 维，{layer.layout}"), va="center",
                fontsize=8)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlim(0, 1.35 * max(layer.head_dim for layer in layers.values()))
    ax.set_xlabel(tr("dim of the head (grey: not rotated; colour: pair, dark = fast, light = slow)",
                     "头内的维度（灰：不旋转；颜色：所属频率对，深 = 快，浅 = 慢）"), fontsize=8)
    ax.set_title(tr("which dims of a q/k head RoPE turns", "RoPE 旋转 q/k 头的哪些维度"), fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    ax.figure.subplots_adjust(left=0.27, right=0.97, bottom=0.16)
    return out


def partial_rotary_scores(fraction: float, *, head_dim: int = 96, span: int = 256, base: float = 10000.0,
                          seed: int = 0) -> dict:
    """Score of a seeded q (query) at position m against a seeded k at position 0, for m = 0 .. span, with
    RoPE on the first int(head_dim * fraction) dims ("half" layout within them, `apply_rope`). The dims left
    alone add q[rot:] . k[rot:] at every distance (`position_free`). float64 numpy."""
    gen = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, head_dim, generator=gen, dtype=torch.float64)
    rot = rotary_dim(head_dim, fraction)
    m = torch.arange(span + 1)
    qs = apply_rope(q.expand(span + 1, head_dim), m, base=base, partial_rotary_factor=fraction)
    ks = apply_rope(k[None], torch.tensor([0]), base=base, partial_rotary_factor=fraction)
    return {"distance": m.numpy(), "score": (qs @ ks[0]).numpy(), "position_free": float(q[rot:] @ k[rot:]),
            "rotary_dim": rot, "head_dim": head_dim}


def render_partial_rotary(axes, fraction: float = 0.25, *, head_dim: int = 96, span: int = 256,
                          base: float = 10000.0):
    """Partial rotary on a head of `head_dim` dims. Left: the head's dims (as `render_rotated_dims`, half
    layout): the first int(head_dim * fraction) turn. Right: the score of a seeded q, k against the distance
    (`partial_rotary_scores`), with the position-free part of the unrotated dims dashed: the score wiggles
    around it, and less as the fraction shrinks. Returns partial_rotary_scores' dict + pairs (dims' pairs)."""
    data = partial_rotary_scores(fraction, head_dim=head_dim, span=span, base=base)
    ax_dims, ax_score = axes
    rot = data["rotary_dim"]
    layer = LayerPositions(0, True, head_dim, (0, rot), "half", base, "default", None, None, 1.0, head_dim ** -0.5,
                           "full", None)
    pairs = _pair_of_dim(layer)
    ax_dims.pcolormesh(np.arange(head_dim + 1), [0, 1], np.ma.masked_invalid(pairs[None]), cmap=_DIM_COLORS, vmin=0,
                       vmax=1)
    ax_dims.set_yticks([])
    ax_dims.set_xlabel(tr("dim of the head (grey: copied unchanged)", "头内的维度（灰：原样保留）"), fontsize=8)
    ax_dims.set_title(tr(f"rotary fraction {fraction:g}: dims 0..{rot - 1} of {head_dim} turn",
                         f"旋转比例 {fraction:g}：{head_dim} 维中第 0..{rot - 1} 维旋转"), fontsize=9)
    tidy(ax_dims, axis="x")
    ax_score.plot(data["distance"], data["score"], color="C0", lw=1.2, label="q . k")
    ax_score.axhline(data["position_free"], color="k", lw=1, ls="--",
                     label=tr("unrotated dims' part", "不旋转维度的贡献"))
    ax_score.set_xlabel(tr("m - n (query - key)", "m - n（查询 - 键）"), fontsize=8)
    ax_score.set_title(tr(f"score against the distance ({rot // 2} pairs turn)",
                          f"分数随距离的变化（{rot // 2} 对旋转）"), fontsize=9)
    ax_score.legend(fontsize=8, loc="upper right", frameon=False)
    tidy(ax_score)
    two_panels(axes)
    return {**data, "pairs": pairs}


# ----------------------------------------------------------------------------- LongRoPE
def render_longrope(axes, layer: LayerPositions, context: int):
    """A LongRoPE layer (Phi-3): left, its short and long rescale factors lambda_i per pair; right, the
    wavelengths of plain RoPE (grey), of theta_i / short_i (used while the length L <= L0) and of
    theta_i / long_i (L > L0), with L0 and `context` as lines.
    Returns dict(short, long, plain, short_waves, long_waves, original) as numpy."""
    if layer.rope_type != "longrope":
        raise ValueError(f"layer {layer.index} is not a LongRoPE layer (rope_type {layer.rope_type!r})")
    l0 = layer.scaling["original_max_position_embeddings"]
    short, long = (np.asarray(layer.scaling[k], dtype=float) for k in ("short_factor", "long_factor"))
    plain = to_numpy(2 * math.pi / rope_inv_freq(layer.rotary_dim, base=layer.base)[0])
    short_waves = to_numpy(2 * math.pi / layer.frequencies(l0)[0])
    long_waves = to_numpy(2 * math.pi / layer.frequencies(l0 + 1)[0])
    ax_f, ax_w = axes
    pairs = np.arange(len(short))
    ax_f.plot(pairs, short, color="C0", lw=1.4, label="short_factor (L <= L0)")
    ax_f.plot(pairs, long, color="C3", lw=1.4, label="long_factor (L > L0)")
    ax_f.set_yscale("log")
    ax_f.set_xlabel(tr("pair i", "频率对 i"), fontsize=8)
    ax_f.set_ylabel(tr("rescale factor lambda_i", "缩放因子 lambda_i"), fontsize=8)
    ax_f.set_title(tr("one factor per pair, two sets", "每对一个因子，共两套"), fontsize=9)
    ax_f.legend(fontsize=8, loc="upper left", frameon=False)
    tidy(ax_f, axis="x")
    ax_w.semilogy(pairs, plain, color="0.6", lw=1.2, label=tr("plain RoPE", "原始 RoPE"))
    ax_w.semilogy(pairs, short_waves, color="C0", lw=1.4, label=tr("theta / short", "theta / 短因子"))
    ax_w.semilogy(pairs, long_waves, color="C3", lw=1.4, label=tr("theta / long", "theta / 长因子"))
    ax_w.axhline(l0, color="k", lw=0.9, ls="--")
    ax_w.axhline(context, color="k", lw=0.9, ls=":")
    ax_w.text(0, l0 * 1.3, f"L0 = {l0:,}", fontsize=8)
    ax_w.text(0, context * 1.3, tr(f"context {context:,}", f"上下文 {context:,}"), fontsize=8)
    ax_w.set_xlabel(tr("pair i", "频率对 i"), fontsize=8)
    ax_w.set_ylabel(tr("wavelength (tokens)", "波长（token 数）"), fontsize=8)
    ax_w.set_title(tr("wavelengths with each set", "两套因子下的波长"), fontsize=9)
    ax_w.legend(fontsize=8, loc="lower right", frameon=False)
    tidy(ax_w, axis="x")
    two_panels(axes)
    return {"short": short, "long": long, "plain": plain, "short_waves": short_waves, "long_waves": long_waves,
            "original": l0}


# ----------------------------------------------------------------------------- one model, layer by layer
KIND_COLORS = {"RoPE, full": "C0", "RoPE, sliding": "C2", "RoPE, chunked": "C1", "NoPE": "0.55",
               "linear attention": "C4", "recurrent": "C5", "cross-attention": "C6"}
# layer_kind's names as figures and tables show them, in words from the configs report's one table (KIND_NAMES)
_KIND_NAMES = {kind: KindLabel(kind) for kind in (*(f"RoPE, {attention}" for attention in ATTENTION_KINDS),
                                                  *MIXERS.values())}


def layer_kind(layer: LayerPositions) -> str:
    """"RoPE, full" | "RoPE, sliding" | "RoPE, chunked" | "NoPE" (softmax attention without positions) | the
    mixer of a layer that has no positions of its own kind ("linear attention", "recurrent", "cross-attention"):
    what the layer does with positions, in short."""
    if layer.rope:
        return f"RoPE, {layer.attention}"
    return "NoPE" if layer.mixer == "attention" else layer.mixer


def long_context_wavelengths(layer: LayerPositions, context: int) -> np.ndarray:
    """The layer's wavelengths when the length is `context` (dynamic NTK and LongRoPE depend on it; the
    others do not), float64 numpy (r/2,)."""
    return to_numpy(2 * math.pi / layer.frequencies(context)[0])


def _seen(layer: LayerPositions, context: int) -> int:
    """The longest distance + 1 a query of this layer meets in a context of `context` tokens."""
    return context if layer.window is None else min(layer.window, context)


def render_layer_positions(axes, model: str, layer: int, *, reports: dict):
    """What layer `layer` of `model` does with positions. reports: {name: ModelPositions} (from_hf_config).

    Left: every layer of the model as a cell coloured by `layer_kind` (KIND_COLORS), the chosen one boxed.
    Right, a RoPE layer: its wavelengths at the full context (log scale) against the longest distance it
    sees (its window or chunk, else the context; dashed) and the context (dotted); red: pairs that make
    less than one turn over the distances it sees. A NoPE layer with Llama 4's temperature: the factor its
    queries are multiplied by, against the position; without: a note. Returns dict(kinds (list),
    description, wavelengths or None, seen, slow or None, temperature or None)."""
    if model not in reports:
        raise ValueError(f"model must be one of {list(reports)}, got {model!r}")
    positions: ModelPositions = reports[model]
    chosen = positions.layer(layer)
    context = positions.max_position_embeddings
    ax_layers, ax_right = axes
    kinds = [layer_kind(item) for item in positions.layers]
    for i, kind in enumerate(kinds):
        ax_layers.add_patch(_cell(i, KIND_COLORS[kind]))
    i = chosen.index
    ax_layers.plot([i - 0.5, i + 0.5, i + 0.5, i - 0.5, i - 0.5], [-0.75, -0.75, 0.75, 0.75, -0.75], color="k", lw=1.6)
    present = [kind for kind in KIND_COLORS if kind in kinds]
    for n, kind in enumerate(present):  # a legend of the kinds this model has, left to right
        ax_layers.text(0.02 + n / len(present), 0.88, str(_KIND_NAMES.get(kind, kind)), color=KIND_COLORS[kind],
                       fontsize=8, fontweight="bold",
                       transform=ax_layers.transAxes)
    ax_layers.set_xlim(-0.6, len(kinds) - 0.4)
    ax_layers.set_ylim(-1.2, 1.9)
    ax_layers.set_yticks([])
    ax_layers.set_xlabel(tr("layer", "层"), fontsize=8)
    ax_layers.set_title(tr(f"{model}: {len(kinds)} layers", f"{model}：共 {len(kinds)} 层"), fontsize=9)
    tidy(ax_layers, axis="x")
    out = {"kinds": kinds, "description": chosen.describe(), "wavelengths": None, "seen": _seen(chosen, context),
           "slow": None, "temperature": None}
    if chosen.rope:
        waves = long_context_wavelengths(chosen, context)
        seen = out["seen"]
        slow = waves > seen
        pairs = np.arange(len(waves))
        ax_right.semilogy(pairs[~slow], waves[~slow], "o", ms=2.2, color=KIND_COLORS[kinds[i]])
        ax_right.semilogy(pairs[slow], waves[slow], "o", ms=2.2, color="C3")
        ax_right.axhline(seen, color="k", lw=1, ls="--")
        if seen != context:
            ax_right.axhline(context, color="k", lw=0.8, ls=":")
        ax_right.set_xlabel(tr("pair i", "频率对 i"), fontsize=8)
        ax_right.set_ylabel(tr("wavelength (tokens)", "波长（token 数）"), fontsize=8)
        ax_right.set_title(tr(f"layer {i}: base {chosen.base:g}, {chosen.rope_type}; {int(slow.sum())} of {len(waves)} "
                              f"pairs < 1 turn in {seen:,}",
                              f"第 {i} 层：底数 {chosen.base:g}，{chosen.rope_type}；{len(waves)} 对中有 "
                              f"{int(slow.sum())} 对在 {seen:,} 内转不满 1 圈"), fontsize=8)
        tidy(ax_right, axis="x")
        _few_log_ticks(ax_right)
        out.update(wavelengths=waves, slow=int(slow.sum()))
    elif chosen.temperature is not None:
        m = torch.unique(torch.logspace(0, math.log10(context), 300).round().long())  # positions 1 .. context
        scale = to_numpy(chosen.query_scale(m))
        ax_right.semilogx(to_numpy(m), scale, color=KIND_COLORS["NoPE"], lw=1.6)
        ax_right.set_xlabel(tr("query position m", "查询位置 m"), fontsize=8)
        ax_right.set_ylabel(tr("query x", "查询的乘数"), fontsize=8)
        ax_right.set_title(tr(f"layer {i}: NoPE, full attention; query temperature",
                              f"第 {i} 层：NoPE，全注意力；查询温度"), fontsize=8)
        tidy(ax_right, axis="y")
        _few_log_ticks(ax_right, "x")
        out["temperature"] = (to_numpy(m), scale)
    else:
        where = tr(f"sees all {context:,} positions", f"能看到全部 {context:,} 个位置") if chosen.window is None else \
            tr(f"attention {chosen.attention} {chosen.window}", f"注意力：{chosen.attention} {chosen.window}")
        ax_right.text(0.5, 0.5, tr(f"layer {i}: NoPE\nno rotation of q or k\n{where}",
                                   f"第 {i} 层：NoPE\nq、k 都不旋转\n{where}"),
                      ha="center", va="center",
                      fontsize=9, transform=ax_right.transAxes)
        ax_right.set_xticks([])
        ax_right.set_yticks([])
    two_panels(axes)
    return out


def _cell(i: int, color):
    return Rectangle((i - 0.45, -0.6), 0.9, 1.2, color=color, lw=0)


# ----------------------------------------------------------------------------- MLA
def render_absorption_error(ax, distance, errors: dict):
    """|absorbed score - true score| against the distance n - m (key - query), one line per case in
    `errors` (label -> array like distance; the first red, the others green), on a linear axis."""
    distance = to_numpy(distance)
    for n, (label, values) in enumerate(errors.items()):
        ax.plot(distance, to_numpy(values), marker="o", ms=3, lw=1.2, color=f"C{3 if n == 0 else 2}", label=label)
    tidy(ax)
    ax.set_xlabel(tr("n - m (key - query)", "n - m（键 - 查询）"), fontsize=8)
    ax.set_ylabel(tr("|absorbed - true score|", "|吸收后分数 - 真实分数|"), fontsize=8)
    ax.set_title(tr("one fixed absorbed matrix: exact only when RoPE is kept out of it",
                    "同一个吸收后的固定矩阵：只有不含 RoPE 时才精确"), fontsize=9)
    ax.legend(fontsize=8, loc="upper right", frameon=False)  # the first case is largest far from 0
    ax.figure.subplots_adjust(left=0.12, bottom=0.16)
    return errors


# ----------------------------------------------------------------------------- the softmax's budget
def needle_weight(n, advantage: float, scale=1.0) -> np.ndarray:
    """Softmax weight of one key whose logit is `advantage` above n - 1 others (all equal), with every logit
    multiplied by `scale` (a number or an array like n): e^(s a) / (e^(s a) + n - 1). float64 numpy."""
    n = np.asarray(n, dtype=float)
    if (n < 1).any():
        raise ValueError("n (the number of keys) must be >= 1")
    lift = np.exp(np.asarray(scale, dtype=float) * float(advantage))
    return lift / (lift + n - 1)


def log_n_scale(n, original: int) -> np.ndarray:
    """Log-n scaling of the logits (Chiang & Cholak 2022 scale by log n; here normalised to 1 at the trained
    length L0): max(1, ln n / ln L0). A key `ln L0` logits above n - 1 equal others then keeps the weight
    n / (2n - 1), about one half, at every n >= L0."""
    n = np.asarray(n, dtype=float)
    return np.maximum(1.0, np.log(np.maximum(n, 1)) / math.log(original))


def render_attention_budget(axes, factor: float = 32.0, *, original: int = 4096, floor_scale: int = 8192,
                            attn_scale: float = 0.1):
    """The softmax spreads a weight of 1 over the keys, and each fix multiplies q.k by about 1 + c ln(n / L0).
    Left: what q.k is multiplied by at n = s L0 keys (L0 = `original`), against s: log-n scaling
    (`log_n_scale`), LongRoPE's 1 + ln s / ln L0 (dots: the same curve), YaRN's (0.1 ln s + 1)^2 and Llama 4's
    query temperature at position s * floor_scale (`attention_temperature`); the current factor dashed.
    Right: the weight of one key ln(L0) logits above all others (about one half among L0 keys;
    `needle_weight`) against the number of keys n up to factor * L0 (the query at position n - 1):
    plain, with log-n scaling, and with Llama 4's temperature.
    Returns dict(factors, log_n, longrope, yarn, llama4, n, plain, with_log_n, with_temperature) as numpy."""
    factor = _checks.positive_float("factor", factor, minimum=1.0, inclusive=True)
    original = _checks.positive_int("original", original)
    ax_f, ax_w = axes
    factors = np.geomspace(1, 128, 120)
    log_n = log_n_scale(factors * original, original)
    longrope = np.array([longrope_attention_factor(s, original) for s in factors]) ** 2
    yarn = np.array([yarn_attention_factor(s) for s in factors]) ** 2
    llama4 = to_numpy(attention_temperature(torch.as_tensor(np.round(factors * floor_scale) - 1, dtype=torch.long),
                                            floor_scale=floor_scale, attn_scale=attn_scale))
    ax_f.semilogx(factors, log_n, color="k", lw=1.4, label="log-n: ln n / ln L0")
    ax_f.semilogx(factors[::8], longrope[::8], "o", ms=3.5, color="C4", label="LongRoPE: 1 + ln s / ln L0")
    ax_f.semilogx(factors, yarn, color="C1", lw=1.4, label="YaRN: (0.1 ln s + 1)^2")
    ax_f.semilogx(factors, llama4, color="0.55", lw=1.4, ls="--",
                  label=tr("Llama 4 temperature at s x 8192", "Llama 4 温度（位置 s x 8192）"))
    ax_f.axvline(factor, color="k", lw=0.9, ls=":")
    ax_f.set_xlabel("s = n / L0", fontsize=8)
    ax_f.set_ylabel(tr("q.k multiplied by", "q.k 的乘数"), fontsize=8)
    ax_f.set_title(tr(f"at s = {factor:g}: log-n x{float(log_n_scale(factor * original, original)):.3f}, "
                      f"YaRN x{float(yarn_attention_factor(factor)) ** 2:.3f}",
                      f"s = {factor:g} 时：log-n x{float(log_n_scale(factor * original, original)):.3f}，"
                      f"YaRN x{float(yarn_attention_factor(factor)) ** 2:.3f}"), fontsize=9)
    ax_f.legend(fontsize=8, loc="upper left", frameon=False)
    tidy(ax_f, axis="y")
    _few_log_ticks(ax_f, "x")
    advantage = math.log(original)
    top = max(int(round(factor * original)), 2)
    n = np.unique(np.geomspace(1, top, 300).round())
    plain = needle_weight(n, advantage)
    with_log_n = needle_weight(n, advantage, log_n_scale(n, original))
    temperature = to_numpy(attention_temperature(torch.as_tensor(n - 1, dtype=torch.long),
                                                 floor_scale=floor_scale, attn_scale=attn_scale))
    with_temperature = needle_weight(n, advantage, temperature)
    ax_w.semilogx(n, plain, color="C3", lw=1.4, label=tr("plain softmax", "普通 softmax"))
    ax_w.semilogx(n, with_log_n, color="k", lw=1.4, label=tr("log-n scaling", "log-n 缩放"))
    ax_w.semilogx(n, with_temperature, color="0.55", lw=1.4, ls="--", label=tr("Llama 4 temperature", "Llama 4 温度"))
    ax_w.axvline(original, color="k", lw=0.8, ls=":")
    ax_w.set_ylim(-0.02, 1.02)
    ax_w.set_xlabel(tr(f"number of keys n (up to {factor:g} x L0)", f"键的个数 n（最多 {factor:g} x L0）"), fontsize=8)
    ax_w.set_ylabel(tr("weight of the one right key", "唯一正确键的权重"), fontsize=8)
    ax_w.set_title(tr(f"a key ln L0 = {advantage:.2f} logits ahead (L0 = {original:,} dotted)",
                      f"该键的 logit 高出 ln L0 = {advantage:.2f}（点线：L0 = {original:,}）"), fontsize=9)
    ax_w.legend(fontsize=8, loc="lower left", frameon=False)
    tidy(ax_w, axis="y")
    _few_log_ticks(ax_w, "x")
    two_panels(axes)
    return {"factors": factors, "log_n": log_n, "longrope": longrope, "yarn": yarn, "llama4": llama4, "n": n,
            "plain": plain, "with_log_n": with_log_n, "with_temperature": with_temperature}


# ----------------------------------------------------------------------------- every checkpoint
def spectrum_rows(reports: dict) -> list:
    """One dict per (model, kind of layer) of `reports` ({name: ModelPositions}):
    model, layers ("0-31", "5-29 every 6"; a long list as "all but 3-47 every 4"), kind (`layer_kind`), rope,
    layout, rotary ("r of d"), base, rope_type, attention_factor, context (max_position_embeddings),
    pretrained (original_max_position_embeddings or None), seen (the longest distance + 1 the layer meets:
    its window or chunk, else the context), wavelengths (numpy, at the full context; None for NoPE and
    learned positions), slow (pairs with a wavelength > seen), pairs (r/2), first_negative
    (`first_negative_distance` over the distances seen), position_encoding (the model's)."""
    rows = []
    for name, positions in reports.items():
        context = positions.max_position_embeddings
        for row, (_, indices) in zip(positions.rows(), positions.kinds()):
            layer = positions.layer(indices[0])
            entry = {"model": name, "layers": row["layers"], "kind": layer_kind(layer), "rope": layer.rope,
                     "layout": layer.layout,
                     "rotary": tr(f"{layer.rotary_dim} of {layer.head_dim}", f"{layer.rotary_dim}/{layer.head_dim} 维"),
                     "base": layer.base,
                     "rope_type": layer.rope_type, "attention_factor": layer.attention_factor, "context": context,
                     "pretrained": positions.original_max_position_embeddings, "seen": _seen(layer, context),
                     "wavelengths": None, "slow": None, "pairs": layer.rotary_dim // 2, "first_negative": None,
                     "position_encoding": positions.position_encoding}
            if layer.rope:
                inv_freq = layer.frequencies(context)[0]
                entry["wavelengths"] = to_numpy(2 * math.pi / inv_freq)
                entry["slow"] = int((entry["wavelengths"] > entry["seen"]).sum())
                entry["first_negative"] = first_negative_distance(inv_freq, entry["seen"])
            rows.append(entry)
    return rows


def checkpoint_table(rows: list) -> str:
    """spectrum_rows' rows as plain text, one line per (model, kind of layer), in two tables that each fit a
    notebook column: what the layers do with positions, then the lengths (context, distances seen, pairs
    that turn less than once, the first distance where the decay bound B goes negative)."""
    what = [("model", tr("model", "模型")), ("layers", tr("layers", "层")), ("kind", tr("attention", "注意力")),
            ("layout", tr("layout", "布局")), ("rotary", tr("rotated", "旋转维度")), ("base", tr("base", "底数")),
            ("rope_type", "rope_type"), ("attention_factor", "cos/sin x")]
    lengths = [("model", tr("model", "模型")), ("layers", tr("layers", "层")), ("context", tr("context", "上下文")),
               ("seen", tr("sees", "可见距离")), ("slow", tr("<1 turn", "<1 圈")),
               ("first_negative", tr("B<0 at", "B<0 处"))]
    cells = []
    for row in rows:
        line = {key: table_cell(row[key], digits=4) for key, _ in what + lengths}
        line["kind"] = str(_KIND_NAMES.get(row["kind"], row["kind"]))
        if row["position_encoding"] != "rope":
            line["kind"] = tr("learned absolute", "可学习绝对位置")
        if row["slow"] is not None:
            line["slow"] = f"{row['slow']}/{row['pairs']}"
        cells.append(line)
    widths = {key: max(_width(title), *(_width(c[key]) for c in cells)) for key, title in what + lengths}
    tables = []
    for columns in (what, lengths):
        lines = ["  ".join(_ljust(title, widths[key]) for key, title in columns)]
        lines += ["  ".join(_ljust(c[key], widths[key]) for key, _ in columns) for c in cells]
        tables.append("\n".join(lines))
    return "\n\n".join(tables)




def render_checkpoint_spectra(ax, rows: list):
    """Every RoPE row of `spectrum_rows` as one line of dots: the wavelength of each pair (log scale), blue
    when the pair makes at least one turn over the distances the layer sees, red when less; a black bar at
    that distance (the context, or the window/chunk) and, where it differs, a grey bar at the context.
    NoPE and learned-position rows are listed without dots. Returns the rows drawn."""
    ax.set_xscale("log")
    labels = []
    for y, row in enumerate(rows):
        labels.append(f"{row['model']}  [{row['layers']}]")
        if row["wavelengths"] is None:
            what = (tr("learned absolute positions", "可学习绝对位置") if row["position_encoding"] != "rope"
                    else tr("NoPE: no rotation", "NoPE：不旋转") if row["kind"] == "NoPE"
                    else tr(f"{_KIND_NAMES[row['kind']]}: no positions", f"{_KIND_NAMES[row['kind']]}：没有位置"))
            ax.text(2.0, y, what, va="center", fontsize=8, color="0.4")
            continue
        waves = row["wavelengths"]
        slow = waves > row["seen"]
        ax.plot(waves[~slow], np.full((~slow).sum(), y), "|", ms=6, color="C0", mew=1.0)
        ax.plot(waves[slow], np.full(slow.sum(), y), "|", ms=6, color="C3", mew=1.0)
        stopped = int(np.isinf(waves).sum())  # p-RoPE's pairs at theta = 0: no finite wavelength to draw
        if stopped:
            ax.text(2e6, y, tr(f"+ {stopped} pairs at theta = 0", f"+ {stopped} 对 theta = 0"), va="center",
                    fontsize=8, color="C3")
        ax.plot([row["seen"]], [y], "s", ms=4, color="k")
        if row["seen"] != row["context"]:
            ax.plot([row["context"]], [y], "s", ms=4, color="0.6")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(1, 1e9)
    ax.set_xlabel(tr("wavelength of each pair (tokens per turn); black: the farthest distance the layer sees; "
                     "grey: the context", "各频率对的波长（每圈 token 数）；黑：该层看到的最远距离；灰：上下文长度"),
                  fontsize=8)
    ax.set_title(tr("every checkpoint's RoPE spectrum against its context (red: < 1 turn)",
                    "各检查点的 RoPE 波长谱与其上下文（红：转不满 1 圈）"), fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    # margins in inches (tick labels, the two-line x label; the title), so a figure of a few rows fits too
    height = ax.figure.get_figheight()
    ax.figure.subplots_adjust(left=0.36, right=0.98, bottom=min(0.45, max(0.08, 0.7 / height)),
                              top=1 - min(0.3, max(0.05, 0.4 / height)))
    return rows
