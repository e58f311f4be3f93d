"""Notebook 06 (and the RoPE half of 03): RoPE as a rotation in the plane, its score depends on m - n
only, its long-term decay bound, and why its angles are computed in float64 whatever the input's dtype.

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew.
Conventions, as in posenc_lib.rope: pair i of a head is (x[2i], x[2i+1]) in the "interleaved" layout
(RoFormer, Meta's Llama) and (x[i], x[i + d/2]) in the "half" layout (GPT-NeoX, Hugging Face);
position m turns pair i counter-clockwise by m * theta_i, theta_i = base ** (-2i/d); the score
<R_m q, R_n k> depends on m - n, query position minus key position, as RoFormer writes it: that is
-r in the course's relative position r = key - query (posenc_lib.relative, notebook 05).
"""
from __future__ import annotations

import numpy as np
import torch

from ..i18n import tr
from ..rope import apply_rope, rope_decay_bound
from ..scaling import rope_inv_freq
from ._style import tidy, two_panels

__all__ = ["rope_scores", "render_rope_rotation", "render_rope_score", "DECAY_REFERENCE", "render_rope_decay_bound",
           "naive_rope", "rope_precision_errors", "render_rope_precision"]


def rope_scores(q: torch.Tensor, k: torch.Tensor, q_positions, k_positions, *, base: float = 10000.0,
                layout: str = "half") -> torch.Tensor:
    """<R_m q, R_n k> for each pair (m, n) of q_positions[t], k_positions[t]: q, k (dim,) -> scores (T,) float64."""
    m = torch.as_tensor(q_positions, dtype=torch.long).reshape(-1)
    n = torch.as_tensor(k_positions, dtype=torch.long).reshape(-1)
    qs = apply_rope(q.double().expand(len(m), -1), m, base=base, layout=layout)
    ks = apply_rope(k.double().expand(len(n), -1), n, base=base, layout=layout)
    return (qs * ks).sum(-1)


def _turned(pair, position: int, theta: float) -> np.ndarray:
    """One pair (x1, x2) turned by position * theta with the library's apply_rope (interleaved, one pair)."""
    x = torch.tensor([pair], dtype=torch.float64)  # (1, 2): one position, one pair
    freq = torch.tensor([theta], dtype=torch.float64)
    return apply_rope(x, torch.tensor([position]), inv_freq=freq, layout="interleaved")[0].numpy()


def _arc(ax, start: float, stop: float, radius: float, **style) -> None:
    t = np.linspace(start, stop, 40)
    ax.plot(radius * np.cos(t), radius * np.sin(t), **style)


def render_rope_rotation(axes, m: int = 3, n: int = 1, *, shift: int = 3, q=(1.0, 0.2), k=(0.9, -0.3),
                         theta: float = 0.35):
    """RoPE on one pair, drawn as arrows in the plane (the pair (x1, x2) as a point).

    Left: q turned counter-clockwise by m * theta (query at position m) and k by n * theta (key at
    position n), the unturned q and k dashed. Right: both positions moved on by `shift`. The angle from
    R_n k to R_m q is arg q - arg k + (m - n) theta in both panels, so their dot product (the score)
    is the same. The turns come from posenc_lib.rope.apply_rope (one interleaved pair, inv_freq theta).
    Returns dict(angles (2,) radians from R_n k to R_m q, scores (2,), rotated_q (2, 2), rotated_k (2, 2),
    positions [(m, n), (m + shift, n + shift)]) as numpy / lists.
    """
    q0, k0 = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    radius = 1.1 * max(np.hypot(*q0), np.hypot(*k0))
    out = {"angles": [], "scores": [], "rotated_q": [], "rotated_k": [], "positions": []}
    for ax, (pm, pn) in zip(axes, [(m, n), (m + shift, n + shift)]):
        rq, rk = _turned(q, pm, theta), _turned(k, pn, theta)
        angle = float(np.arctan2(rk[0] * rq[1] - rk[1] * rq[0], rk @ rq))  # signed, from R_n k to R_m q
        circle = np.linspace(0, 2 * np.pi, 120)
        ax.plot(radius * np.cos(circle), radius * np.sin(circle), color="0.88", lw=0.8)
        for vec, color, ls, lw in ((q0, "C0", "--", 0.9), (k0, "C1", "--", 0.9),
                                   (rq, "C0", "-", 1.8), (rk, "C1", "-", 1.8)):
            ax.annotate("", xy=tuple(vec), xytext=(0, 0),
                        arrowprops={"arrowstyle": "->", "color": color, "lw": lw, "ls": ls})
        arg_q, arg_k = float(np.arctan2(q0[1], q0[0])), float(np.arctan2(k0[1], k0[0]))
        _arc(ax, arg_q, arg_q + pm * theta, 0.35 * radius, color="C0", lw=0.8)  # the turn of q: m * theta
        _arc(ax, arg_k, arg_k + pn * theta, 0.5 * radius, color="C1", lw=0.8)  # the turn of k: n * theta
        start = float(np.arctan2(rk[1], rk[0]))
        _arc(ax, start, start + angle, 0.75 * radius, color="k", lw=1.2)  # the angle between them
        ax.text(*(1.25 * rq), tr(f"q at m={pm}", f"q 位于 m={pm}"), color="C0", fontsize=8, ha="center", va="center")
        ax.text(*(1.25 * rk), tr(f"k at n={pn}", f"k 位于 n={pn}"), color="C1", fontsize=8, ha="center", va="center")
        score = float(rq @ rk)
        ax.set_title(tr(f"m={pm}, n={pn}: angle {np.degrees(angle):.0f}°, score {score:.3f}",
                     f"m={pm}，n={pn}：夹角 {np.degrees(angle):.0f}°，分数 {score:.3f}"), fontsize=9)
        ax.set_aspect("equal")
        ax.set_xlim(-1.3 * radius, 1.3 * radius)
        ax.set_ylim(-1.3 * radius, 1.3 * radius)
        ax.set_xticks([])
        ax.set_yticks([])
        # one short line each, so that the caption stays under its own square panel
        ax.set_xlabel(tr(f"dashed: q, k before turning;\nthin arcs: the turns {pm}θ, {pn}θ;\n"
                         "black arc: the angle between them",
                         f"虚线：旋转前的 q、k；\n细弧：转角 {pm}θ、{pn}θ；\n"
                         "黑弧：旋转后两个向量的夹角"), fontsize=8)
        out["angles"].append(angle)
        out["scores"].append(score)
        out["rotated_q"].append(rq)
        out["rotated_k"].append(rk)
        out["positions"].append((pm, pn))
    return {key: (np.asarray(value) if key != "positions" else value) for key, value in out.items()}


def render_rope_score(axes, m: int = 5, n: int = 2, *, q: torch.Tensor, k: torch.Tensor, shifts: int = 200,
                      span: int = 64, base: float = 10000.0):
    """Left: the score of q at m+s and k at n+s for s = 0 .. shifts-1 (a flat line: only m - n matters).
    Right: the score against m - n for the same q, k, the current m - n marked.
    Returns dict(score, shift_scores (shifts,), relative (2*span+1,), curve (2*span+1,)) as numpy."""
    ax_shift, ax_rel = axes
    s = torch.arange(shifts)
    shift_scores = rope_scores(q, k, m + s, n + s, base=base).numpy()
    score = float(shift_scores[0])
    ax_shift.plot(s.numpy(), shift_scores, color="C0", lw=1.5)
    curve = _relative_curve(q, k, span, base)
    ax_shift.set_ylim(*_padded((min(curve.min(), score), max(curve.max(), score))))
    ax_shift.set_xlabel(tr("shift s", "平移量 s"), fontsize=8)
    ax_shift.set_title(tr(f"score(m+s, n+s), m={m}, n={n}: {score:.4f}",
                          f"m={m}，n={n} 时的分数 score(m+s, n+s)：{score:.4f}"),
                       fontsize=9)
    tidy(ax_shift)
    relative = torch.arange(-span, span + 1)
    ax_rel.plot(relative.numpy(), curve, color="0.5", lw=1)
    ax_rel.plot([m - n], [score], "o", color="C3", ms=6)
    ax_rel.set_xlabel(tr("m - n  (query - key; = -r, r = key - query)", "m - n（查询 - 键；= -r，r = 键 - 查询）"),
                      fontsize=8)
    ax_rel.set_title(tr("score against m - n", "分数随 m - n 的变化"), fontsize=9)
    tidy(ax_rel)
    two_panels(axes)
    return {"score": score, "shift_scores": shift_scores, "relative": relative.numpy(), "curve": curve}


def _padded(limits, pad: float = 0.05):
    low, high = limits
    return low - pad * (high - low), high + pad * (high - low)


_CURVES: dict = {}


def _relative_curve(q, k, span, base):
    """score for m - n in [-span, span] (query at m - n, key at 0... shifted to be >= 0), cached per input."""
    key = (q.double().numpy().tobytes(), k.double().numpy().tobytes(), span, float(base))
    if key not in _CURVES:
        rel = torch.arange(-span, span + 1)
        _CURVES.clear()
        _CURVES[key] = rope_scores(q, k, rel + span, torch.full_like(rel, span), base=base).numpy()
    return _CURVES[key]


# The grey reference curve of the decay-bound figure: base 10000 and head dim 128, the settings of the
# 7B LLaMA models (transformers' LlamaConfig defaults: hidden_size 4096 / 32 heads, rope_theta 10000;
# tests/test_plots_rope.py reads them). RoFormer's Figure 2 plots the same bound for theta_i =
# 10000 ** (-2i/d); no head dim is claimed for it here.
DECAY_REFERENCE = {"base": 10000.0, "dim": 128}


def render_rope_decay_bound(ax, base: float = 10000.0, dim: int = 128, *, max_distance: int = 1024):
    """RoFormer's relative upper bound (1/(d/2)) sum_p |S_p| against the distance |m - n| (posenc_lib.rope.
    rope_decay_bound; it depends on |m - n| only), for this base and dim (blue), with DECAY_REFERENCE
    (base 10000, dim 128) as a dashed black line drawn over it, so that neither hides the other when the
    settings coincide. The legend sits outside the axes, to the right, off the data.
    Returns dict(distance, bound, reference) as numpy."""
    distance = torch.arange(max_distance + 1)
    bound = rope_decay_bound(distance, dim, base).numpy()
    reference = _reference_bound(max_distance)
    ax.plot(distance.numpy(), bound, color="C0", lw=2.0,
            label=tr(f"base {base:g}, dim {dim}", f"底数 {base:g}，维度 {dim}"), zorder=2)
    ax.plot(distance.numpy(), reference, color="k", lw=0.8, ls=(0, (4, 3)), zorder=3,
            label=tr(f"reference: base {DECAY_REFERENCE['base']:g}, dim {DECAY_REFERENCE['dim']}",
                     f"参考：底数 {DECAY_REFERENCE['base']:g}，维度 {DECAY_REFERENCE['dim']}"))
    ax.set_xlabel(tr("distance |m - n| (tokens)", "距离 |m - n|（token 数）"), fontsize=8)
    ax.set_ylabel(tr("relative upper bound", "相对上界"), fontsize=8)
    ax.set_title(tr(f"RoPE long-term decay: {bound[0]:.1f} at 0 -> {bound[-1]:.2f} at {max_distance}",
                 f"RoPE 远程衰减：0 处为 {bound[0]:.1f} -> {max_distance} 处为 {bound[-1]:.2f}"), fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    ax.figure.subplots_adjust(left=0.1, right=0.66, bottom=0.15)
    tidy(ax)
    return {"distance": distance.numpy(), "bound": bound, "reference": reference}


_REFERENCE_BOUNDS: dict = {}


def _reference_bound(max_distance):
    if max_distance not in _REFERENCE_BOUNDS:
        _REFERENCE_BOUNDS[max_distance] = rope_decay_bound(torch.arange(max_distance + 1), DECAY_REFERENCE["dim"],
                                                           DECAY_REFERENCE["base"]).numpy()
    return _REFERENCE_BOUNDS[max_distance]


def naive_rope(x: torch.Tensor, positions: torch.Tensor, *, base: float = 10000.0,
               angle_dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """The WRONG way, for the precision demonstration only: positions, frequencies, angles, cos and sin all
    in `angle_dtype` (as code does that builds its tables in the model's dtype). Half-split layout."""
    dim = x.shape[-1]
    inv_freq, _ = rope_inv_freq(dim, base=base, device=x.device)
    angles = positions.to(angle_dtype)[:, None] * inv_freq.to(angle_dtype)[None, :]  # rounded to angle_dtype
    cos, sin = angles.cos(), angles.sin()
    cos, sin = torch.cat((cos, cos), -1), torch.cat((sin, sin), -1)
    x1, x2 = x.chunk(2, dim=-1)
    return x.to(angle_dtype) * cos + torch.cat((-x2, x1), -1).to(angle_dtype) * sin


def rope_precision_errors(positions, *, dim: int = 64, base: float = 10000.0, seed: int = 0) -> dict:
    """Max |error| per position against a float64 rotation of the same bf16 vector, for
    library_bf16: apply_rope on a bf16 input (angles in float64 inside, result rounded to bf16),
    library_fp32: apply_rope on the same vector in float32,
    naive_bf16: naive_rope with angles in bf16, naive_fp32: naive_rope with angles in float32.
    Also bf16_rounding: the error of merely rounding the exact result to bf16 (the best a bf16 output can do).
    Returns numpy arrays keyed by those names, plus positions."""
    positions = torch.as_tensor(positions, dtype=torch.long)
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(len(positions), dim, generator=gen).to(torch.bfloat16)
    exact = apply_rope(x.double(), positions, base=base)
    errors = {
        "library_bf16": apply_rope(x, positions, base=base),
        "library_fp32": apply_rope(x.float(), positions, base=base),
        "naive_bf16": naive_rope(x, positions, base=base, angle_dtype=torch.bfloat16),
        "naive_fp32": naive_rope(x, positions, base=base, angle_dtype=torch.float32),
        "bf16_rounding": exact.to(torch.bfloat16),
    }
    out = {name: (value.double() - exact).abs().amax(-1).numpy() for name, value in errors.items()}
    out["positions"] = positions.numpy()
    return out


def render_rope_precision(ax, errors: dict):
    """Max |error| against the position (log-log), one line per computation in `errors`
    (from rope_precision_errors); returns errors. "rounding to bf16 alone" is a wide pale band under
    the library's bf16 line (drawn thin, with dots, on top): where they coincide both stay visible.
    The legend sits outside the axes, to the right."""
    pos = errors["positions"]
    styles = {  # name: (label, plot keywords); drawn in this order, later on top
        "bf16_rounding": (tr("rounding to bf16 alone", "仅舍入到 bf16"),
                          {"color": "0.75", "lw": 6, "solid_capstyle": "butt"}),
        "naive_bf16": (tr("naive: angles in bf16", "朴素：角度用 bf16 算"), {"color": "C3", "lw": 1.2}),
        "naive_fp32": (tr("naive: angles in float32", "朴素：角度用 float32 算"), {"color": "C1", "lw": 1.2}),
        "library_fp32": (tr("library, float32 input", "本库，float32 输入"), {"color": "C2", "lw": 1.2}),
        "library_bf16": (tr("library, bf16 input", "本库，bf16 输入"),
                         {"color": "C0", "lw": 1.0, "marker": "o", "ms": 3}),
    }
    for name, (label, style) in styles.items():
        if name in errors:
            ax.loglog(pos, np.maximum(errors[name], 1e-12), label=label, **style)
    ax.set_xlabel(tr("position", "位置"), fontsize=8)
    ax.set_ylabel(tr("max |error| vs float64", "相对 float64 的最大 |误差|"), fontsize=8)
    ax.set_title(tr("RoPE on a bf16 vector: where the angles are computed matters",
                    "对 bf16 向量做 RoPE：角度用什么精度算很关键"), fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    ax.figure.subplots_adjust(left=0.1, right=0.68, bottom=0.15)
    ax.tick_params(labelsize=8)
    return errors
