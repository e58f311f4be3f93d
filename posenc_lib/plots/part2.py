"""Figures (and the small computations behind them) for notebooks 04-06.

Every render_*(ax_or_axes, ...) draws on the axes it is given and returns the data it drew.
Conventions, as in the rest of posenc_lib:
  * relative position = key position - query position: a key in the past of the query is negative.
  * ALiBi bias[h, i, j] = -m_h * |i - j| (query i, key j).
  * RoPE pair i of a head is (x[2i], x[2i+1]) in the "interleaved" layout (RoFormer, Meta's Llama) and
    (x[i], x[i + d/2]) in the "half" layout (GPT-NeoX, Hugging Face); position m turns pair i
    counter-clockwise by m * theta_i, theta_i = base ** (-2i/d).
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ..absolute import sinusoidal_table
from ..alibi import alibi_bias, alibi_slopes
from ..learned_demo import position_similarity, similarity_by_distance
from ..relative import relative_positions, t5_relative_bucket
from ..rope import apply_rope, rope_decay_bound
from ..scaling import rope_inv_freq

__all__ = [
    "sinusoidal_similarity", "render_similarity", "render_similarity_pair", "render_learned_snapshot",
    "render_position_accuracy", "shaw_clipped_relative", "render_shaw_clipping", "render_t5_buckets",
    "render_alibi", "rope_scores", "render_rope_score", "render_rope_decay_bound", "naive_rope",
    "rope_precision_errors", "render_rope_precision",
]


def _two_panels(axes):
    """Room for the x labels and between the panels (no constrained layout: it costs ~50 ms a redraw)."""
    axes[0].figure.subplots_adjust(bottom=0.17, wspace=0.3)


def _tidy(ax, nbins: int = 4, labelsize: int = 7):
    """Few, small tick labels: text is most of a redraw's cost."""
    ax.locator_params(nbins=nbins)
    ax.tick_params(labelsize=labelsize)


# ------------------------------------------------------------------------------------------ 04: learned positions

def sinusoidal_similarity(num_positions: int, dim: int, *, base: float = 10000.0) -> torch.Tensor:
    """Cosine similarity of the rows of the sinusoidal table (num_positions, dim): the fixed reference."""
    return position_similarity(sinusoidal_table(num_positions, dim, base=base, dtype=torch.float64))


def render_similarity(ax, similarity, *, title: str = "", colorbar: bool = False):
    """A (T, T) cosine-similarity matrix of position vectors as a heatmap on [-1, 1]; returns it as numpy."""
    data = similarity.detach().double().cpu().numpy() if isinstance(similarity, torch.Tensor) else np.asarray(similarity)
    image = ax.imshow(data, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    ax.set_xlabel("position j", fontsize=8)
    ax.set_ylabel("position i", fontsize=8)
    ax.set_title(title, fontsize=9)
    _tidy(ax)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04).ax.tick_params(labelsize=7)
    return data


def render_similarity_pair(axes, learned, sinusoidal, *, learned_title: str = "learned (trained)",
                           sinusoidal_title: str = "sinusoidal (fixed)"):
    """Learned and sinusoidal similarity matrices side by side; returns dict(learned, sinusoidal) as numpy."""
    ax_l, ax_s = axes
    _two_panels(axes)
    return {"learned": render_similarity(ax_l, learned, title=learned_title),
            "sinusoidal": render_similarity(ax_s, sinusoidal, title=sinusoidal_title, colorbar=True)}


def render_learned_snapshot(axes, step: int, *, snapshots: dict, reference=None):
    """Left: the learned table's similarity at training step `step` (one of snapshots['steps']).
    Right: mean similarity of positions k apart (k = 0 .. T-1) at this step, at the last step and, if
    given, for the `reference` (sinusoidal) similarity matrix.
    Returns dict(step, similarity (T, T) numpy, by_distance (T,) numpy, loss)."""
    steps = list(snapshots["steps"])
    if step not in steps:
        raise ValueError(f"step must be one of the recorded steps {steps}, got {step}")
    index = steps.index(step)
    ax_map, ax_curve = axes
    similarity = position_similarity(snapshots["tables"][index])
    losses = snapshots["losses"]
    loss = losses[step] if step < len(losses) else losses[-1]
    data = render_similarity(ax_map, similarity, title=f"step {step}: loss {loss:.3f}")
    by_distance = similarity_by_distance(similarity).numpy()
    distance = np.arange(len(by_distance))
    ax_curve.plot(distance, by_distance, color="C0", lw=1.5, label=f"learned, step {step}")
    final = similarity_by_distance(position_similarity(snapshots["tables"][-1])).numpy()
    ax_curve.plot(distance, final, color="C0", lw=0.8, ls="--", label=f"learned, final (step {steps[-1]})")
    if reference is not None:
        ax_curve.plot(distance, similarity_by_distance(torch.as_tensor(reference)).numpy(), color="0.5", lw=0.8,
                      label="sinusoidal")
    ax_curve.axhline(0, color="0.8", lw=0.5)
    ax_curve.set_ylim(-1, 1.05)
    ax_curve.set_xlabel("distance k = |i - j|", fontsize=8)
    ax_curve.set_title("mean similarity of positions k apart", fontsize=9)
    ax_curve.legend(fontsize=7, loc="upper right")
    _tidy(ax_curve)
    _two_panels(axes)
    return {"step": step, "similarity": data, "by_distance": by_distance, "loss": loss}


def render_position_accuracy(ax, accuracy, *, trained_len: int, label: str = ""):
    """Per-position accuracy (seq,) with the trained length marked; returns the accuracy as numpy."""
    acc = accuracy.detach().double().cpu().numpy() if isinstance(accuracy, torch.Tensor) else np.asarray(accuracy)
    ax.plot(np.arange(len(acc)), acc, lw=1.2, label=label or None)
    ax.axvline(trained_len - 0.5, color="C3", lw=1, ls="--")
    ax.text(trained_len, 0.5, f" trained length {trained_len}", color="C3", fontsize=8)
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("position", fontsize=8)
    ax.set_ylabel("accuracy", fontsize=8)
    _tidy(ax)
    if label:
        ax.legend(fontsize=7)
    return acc


# ------------------------------------------------------------------------------------------ 05: relative biases

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
    _tidy(ax_map)
    i = length // 2
    j = np.arange(length)
    ax_row.plot(j, j - i, color="0.6", lw=1, ls="--", label="j - i")
    ax_row.step(j, clipped[i], where="mid", color="C1", lw=1.5, label="clipped")
    ax_row.axvline(i, color="0.8", lw=0.5)
    ax_row.set_xlabel("key j", fontsize=8)
    ax_row.set_title(f"query i = {i}: keys farther than {k} share an embedding", fontsize=9)
    ax_row.legend(fontsize=7, loc="upper left")
    _tidy(ax_row)
    _two_panels(axes)
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
        _tidy(ax)
    axes[0].set_ylabel("bucket", fontsize=8)
    axes[1].text(-span, num_buckets * 0.9, "past (r < 0)", fontsize=7)
    axes[1].text(span * 0.15, num_buckets * 0.1, "future: bucket 0", fontsize=7)
    _two_panels(axes)
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
    _tidy(ax_map)
    colors = ["C1" if h == head else "C0" for h in range(num_heads)]
    ax_slopes.bar(np.arange(num_heads), np.log2(slopes.numpy()), color=colors)
    ax_slopes.set_xticks(range(0, num_heads, max(1, num_heads // 8)))
    ax_slopes.set_xlabel("head", fontsize=8)
    ax_slopes.set_ylabel("log2(slope)", fontsize=8)
    power = (num_heads & (num_heads - 1)) == 0
    ax_slopes.set_title(f"{num_heads} heads ({'a power of 2' if power else 'not a power of 2'})", fontsize=9)
    ax_slopes.tick_params(labelsize=7)
    _two_panels(axes)
    return {"slopes": slopes.numpy(), "bias": bias}


# ------------------------------------------------------------------------------------------ 06: RoPE

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
    _tidy(ax_shift)
    relative = torch.arange(-span, span + 1)
    ax_rel.plot(relative.numpy(), curve, color="0.5", lw=1)
    ax_rel.plot([m - n], [score], "o", color="C3", ms=6)
    ax_rel.set_xlabel("m - n", fontsize=8)
    ax_rel.set_title("score against m - n", fontsize=9)
    _tidy(ax_rel)
    _two_panels(axes)
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
    _tidy(ax)
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
