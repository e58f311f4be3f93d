"""Notebook 06 (and the RoPE half of 03): RoPE's score depends on m - n only, its long-term decay
bound, and why its angles are computed in float64 whatever the input's dtype.

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew.
Conventions, as in posenc_lib.rope: pair i of a head is (x[2i], x[2i+1]) in the "interleaved" layout
(RoFormer, Meta's Llama) and (x[i], x[i + d/2]) in the "half" layout (GPT-NeoX, Hugging Face);
position m turns pair i counter-clockwise by m * theta_i, theta_i = base ** (-2i/d); the score
<R_m q, R_n k> depends on m - n (query position minus key position).
"""
from __future__ import annotations

import numpy as np
import torch

from ..rope import apply_rope, rope_decay_bound
from ..scaling import rope_inv_freq
from ._style import tidy, two_panels

__all__ = ["rope_scores", "render_rope_score", "render_rope_decay_bound", "naive_rope", "rope_precision_errors",
           "render_rope_precision"]


def rope_scores(q: torch.Tensor, k: torch.Tensor, q_positions, k_positions, *, base: float = 10000.0,
                layout: str = "half") -> torch.Tensor:
    """<R_m q, R_n k> for each pair (m, n) of q_positions[t], k_positions[t]: q, k (dim,) -> scores (T,) float64."""
    m = torch.as_tensor(q_positions, dtype=torch.long).reshape(-1)
    n = torch.as_tensor(k_positions, dtype=torch.long).reshape(-1)
    qs = apply_rope(q.double().expand(len(m), -1), m, base=base, layout=layout)
    ks = apply_rope(k.double().expand(len(n), -1), n, base=base, layout=layout)
    return (qs * ks).sum(-1)


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
    ax_shift.set_xlabel("shift s", fontsize=8)
    ax_shift.set_title(f"score(m+s, n+s), m={m}, n={n}: {score:.4f}", fontsize=9)
    tidy(ax_shift)
    relative = torch.arange(-span, span + 1)
    ax_rel.plot(relative.numpy(), curve, color="0.5", lw=1)
    ax_rel.plot([m - n], [score], "o", color="C3", ms=6)
    ax_rel.set_xlabel("m - n", fontsize=8)
    ax_rel.set_title("score against m - n", fontsize=9)
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


def render_rope_decay_bound(ax, base: float = 10000.0, dim: int = 128, *, max_distance: int = 1024):
    """RoFormer's relative upper bound (1/(d/2)) sum_j |S_j| against the distance m - n (posenc_lib.rope.
    rope_decay_bound), for this base and dim, with the paper's setting (base 10000, dim 128) in grey.
    Returns dict(distance, bound) as numpy."""
    distance = torch.arange(max_distance + 1)
    bound = rope_decay_bound(distance, dim, base).numpy()
    reference = _reference_bound(max_distance)
    ax.plot(distance.numpy(), reference, color="0.7", lw=1, label="base 10000, dim 128")
    ax.plot(distance.numpy(), bound, color="C0", lw=1.2, label=f"base {base:g}, dim {dim}")
    ax.set_xlabel("relative distance m - n", fontsize=8)
    ax.set_ylabel("relative upper bound", fontsize=8)
    ax.set_title(f"RoPE long-term decay: {bound[0]:.1f} at 0 -> {bound[-1]:.2f} at {max_distance}", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    tidy(ax)
    return {"distance": distance.numpy(), "bound": bound}


_REFERENCE_BOUNDS: dict = {}


def _reference_bound(max_distance):
    if max_distance not in _REFERENCE_BOUNDS:
        _REFERENCE_BOUNDS[max_distance] = rope_decay_bound(torch.arange(max_distance + 1), 128, 10000.0).numpy()
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
    (from rope_precision_errors); returns errors."""
    pos = errors["positions"]
    styles = {"naive_bf16": ("C3", "naive: angles in bf16"), "naive_fp32": ("C1", "naive: angles in float32"),
              "library_bf16": ("C0", "library, bf16 input"), "library_fp32": ("C2", "library, float32 input"),
              "bf16_rounding": ("0.5", "rounding to bf16 alone")}
    for name, (color, label) in styles.items():
        if name in errors:
            ax.loglog(pos, np.maximum(errors[name], 1e-12), color=color, lw=1.2 if name != "bf16_rounding" else 0.8,
                      ls="-" if name != "bf16_rounding" else "--", label=label)
    ax.set_xlabel("position", fontsize=8)
    ax.set_ylabel("max |error| vs float64", fontsize=8)
    ax.set_title("RoPE on a bf16 vector: where the angles are computed matters", fontsize=9)
    ax.legend(fontsize=7, loc="center left")
    ax.tick_params(labelsize=7)
    return errors
