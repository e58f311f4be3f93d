"""Notebook 04: learned absolute positions. Cosine similarity of a position table's rows, its
training snapshots, and accuracy by position. The figures draw tables and accuracies they are given
(posenc_lib.experiments.learned trains and stores them).

Every render_*(axes, ...) draws on the axes it is given and returns the data it drew.
"""
from __future__ import annotations

import numpy as np
import torch

from ..absolute import position_similarity, similarity_by_distance, sinusoidal_table
from ..i18n import Text, tr
from ._style import side_colorbar, tidy, to_numpy, two_panels

__all__ = ["sinusoidal_similarity", "render_similarity", "render_similarity_pair", "render_learned_snapshot",
           "render_position_accuracy", "render_attention_logits"]


def sinusoidal_similarity(num_positions: int, dim: int, *, base: float = 10000.0) -> torch.Tensor:
    """Cosine similarity of the rows of the sinusoidal table (num_positions, dim): the fixed reference."""
    return position_similarity(sinusoidal_table(num_positions, dim, base=base, dtype=torch.float64))


def render_similarity(ax, similarity, *, title: str = "", colorbar: bool = False):
    """A (T, T) cosine-similarity matrix of position vectors as a heatmap on [-1, 1]; returns it as numpy."""
    data = to_numpy(similarity)
    image = ax.imshow(data, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    ax.set_xlabel(tr("position j", "位置 j"), fontsize=8)
    ax.set_ylabel(tr("position i", "位置 i"), fontsize=8)
    ax.set_title(str(title), fontsize=9)
    tidy(ax)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04).ax.tick_params(labelsize=8)
    return data


def render_similarity_pair(axes, learned, sinusoidal, *,
                           learned_title: str = Text("learned (trained)", "可学习（训练所得）"),
                           sinusoidal_title: str = Text("sinusoidal (fixed)", "正弦（固定）")):
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
    data = render_similarity(ax_map, similarity,
                             title=tr(f"step {step}: loss {loss:.3f}", f"第 {step} 步：损失 {loss:.3f}"))
    by_distance = similarity_by_distance(similarity).numpy()
    distance = np.arange(len(by_distance))
    ax_curve.plot(distance, by_distance, color="C0", lw=1.5, label=tr(f"learned, step {step}", f"可学习，第 {step} 步"))
    final = similarity_by_distance(position_similarity(snapshots["tables"][-1])).numpy()
    ax_curve.plot(distance, final, color="C0", lw=0.8, ls="--",
                  label=tr(f"learned, final (step {steps[-1]})", f"可学习，最终（第 {steps[-1]} 步）"))
    if reference is not None:
        ax_curve.plot(distance, similarity_by_distance(torch.as_tensor(reference)).numpy(), color="0.5", lw=0.8,
                      label=tr("sinusoidal", "正弦"))
    ax_curve.axhline(0, color="0.8", lw=0.5)
    ax_curve.set_ylim(-1, 1.05)
    ax_curve.set_xlabel(tr("distance k = |i - j|", "距离 k = |i - j|"), fontsize=8)
    ax_curve.set_title(tr("mean similarity of positions k apart", "相距 k 的位置的平均相似度"), fontsize=9)
    ax_curve.legend(fontsize=8, loc="upper right")
    tidy(ax_curve)
    two_panels(axes)
    return {"step": step, "similarity": data, "by_distance": by_distance, "loss": loss}


def render_position_accuracy(ax, accuracy, *, trained_len: int, label: str = ""):
    """Per-position accuracy (seq,) with the trained length marked; returns the accuracy as numpy."""
    acc = to_numpy(accuracy)
    ax.plot(np.arange(len(acc)), acc, lw=1.2, label=label or None)
    ax.axvline(trained_len - 0.5, color="C3", lw=1, ls="--")
    ax.text(trained_len, 0.5, tr(f" trained length {trained_len}", f" 训练长度 {trained_len}"), color="C3", fontsize=8)
    ax.set_ylim(-0.02, 1.05)
    ax.set_xlabel(tr("position", "位置"), fontsize=8)
    ax.set_ylabel(tr("accuracy", "准确率"), fontsize=8)
    tidy(ax)
    if label:
        ax.legend(fontsize=8)
    return acc


def render_attention_logits(axes, logits, *, lag: int = 1, title: str = Text("head {h}", "头 {h}"),
                            floor: float = -6.0):
    """One heatmap per head of (H, T, T) attention logits (query t = row, key s = column), each row shown
    relative to its own largest visible logit (the softmax of a row ignores a constant added to it), down
    to `floor`; the masked future (s > t) blank, each row's largest logit marked with a dot, the diagonal
    s = t - lag dashed, a colorbar beside the last panel. Returns dict(argmax (H, T) numpy: the key of
    each row's largest logit, hits (H,): rows t >= lag whose largest logit is at s = t - lag)."""
    data = to_numpy(logits)
    if data.ndim != 3 or data.shape[1] != data.shape[2]:
        raise ValueError(f"logits must have shape (heads, T, T), got {data.shape}")
    heads, T, _ = data.shape
    axes = list(np.atleast_1d(axes))
    if len(axes) != heads:
        raise ValueError(f"need one axes per head: {heads} heads, got {len(axes)} axes")
    causal = np.tri(T, dtype=bool)
    visible = np.where(causal, data, -np.inf)
    argmax = visible.argmax(-1)                                                      # (H, T)
    shown = np.where(causal, data - visible.max(-1, keepdims=True), np.nan)         # <= 0, row max = 0
    rows = np.arange(T)
    hits = (argmax[:, lag:] == rows[lag:] - lag).sum(-1)
    axes[0].figure.subplots_adjust(bottom=0.17, wspace=0.3, right=0.86)
    for h, ax in enumerate(axes):
        image = ax.imshow(shown[h], cmap="viridis", vmin=floor, vmax=0, interpolation="nearest")
        ax.plot(rows[lag:] - lag, rows[lag:], color="w", lw=0.8, ls="--")
        ax.plot(argmax[h], rows, "o", color="C3", ms=2.5)
        ax.set_xlabel(tr("key position s", "键位置 s"), fontsize=8)
        ax.set_title(title.format(h=h) + tr(f": row max at s = t - {lag} in {hits[h]} of {T - lag} rows",
                                            f"：{T - lag} 行中 {hits[h]} 行的最大值在 s = t - {lag}"), fontsize=8)
        tidy(ax)
    axes[0].set_ylabel(tr("query position t", "查询位置 t"), fontsize=8)
    bar = side_colorbar(axes[-1], image)
    bar.set_label(tr("logit - row max", "logit - 行最大值"), fontsize=8)
    return {"argmax": argmax, "hits": hits}
