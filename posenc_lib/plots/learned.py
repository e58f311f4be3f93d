"""Notebook 04: learned absolute positions. Cosine similarity of a position table's rows, its
training snapshots, and accuracy by position. The figures draw tables and accuracies they are given
(posenc_lib.experiments.learned trains and stores them).

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew.
"""
from __future__ import annotations

import numpy as np
import torch

from ..absolute import sinusoidal_table
from ..absolute import position_similarity, similarity_by_distance
from ._style import tidy, to_numpy, two_panels

__all__ = ["sinusoidal_similarity", "render_similarity", "render_similarity_pair", "render_learned_snapshot",
           "render_position_accuracy"]


def sinusoidal_similarity(num_positions: int, dim: int, *, base: float = 10000.0) -> torch.Tensor:
    """Cosine similarity of the rows of the sinusoidal table (num_positions, dim): the fixed reference."""
    return position_similarity(sinusoidal_table(num_positions, dim, base=base, dtype=torch.float64))


def render_similarity(ax, similarity, *, title: str = "", colorbar: bool = False):
    """A (T, T) cosine-similarity matrix of position vectors as a heatmap on [-1, 1]; returns it as numpy."""
    data = to_numpy(similarity)
    image = ax.imshow(data, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    ax.set_xlabel("position j", fontsize=8)
    ax.set_ylabel("position i", fontsize=8)
    ax.set_title(title, fontsize=9)
    tidy(ax)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04).ax.tick_params(labelsize=7)
    return data


def render_similarity_pair(axes, learned, sinusoidal, *, learned_title: str = "learned (trained)",
                           sinusoidal_title: str = "sinusoidal (fixed)"):
    """Learned and sinusoidal similarity matrices side by side; returns dict(learned, sinusoidal) as numpy."""
    ax_l, ax_s = axes
    two_panels(axes)
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
    tidy(ax_curve)
    two_panels(axes)
    return {"step": step, "similarity": data, "by_distance": by_distance, "loss": loss}


def render_position_accuracy(ax, accuracy, *, trained_len: int, label: str = ""):
    """Per-position accuracy (seq,) with the trained length marked; returns the accuracy as numpy."""
    acc = to_numpy(accuracy)
    ax.plot(np.arange(len(acc)), acc, lw=1.2, label=label or None)
    ax.axvline(trained_len - 0.5, color="C3", lw=1, ls="--")
    ax.text(trained_len, 0.5, f" trained length {trained_len}", color="C3", fontsize=8)
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel("position", fontsize=8)
    ax.set_ylabel("accuracy", fontsize=8)
    tidy(ax)
    if label:
        ax.legend(fontsize=7)
    return acc
