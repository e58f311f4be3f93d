"""Slider figures for notebooks 04-06: each builder returns an InteractiveFigure over a render_* of plots.part2."""
from __future__ import annotations

import ipywidgets as widgets
import torch

from ..learned_demo import load_learned_snapshots
from ..plots.part2 import (render_alibi, render_learned_snapshot, render_rope_decay_bound, render_rope_score,
                           render_shaw_clipping, render_t5_buckets, sinusoidal_similarity)
from ._base import InteractiveFigure

__all__ = ["learned_snapshot_widget", "shaw_clipping_widget", "t5_buckets_widget", "alibi_widget",
           "rope_score_widget", "rope_decay_widget", "rope_demo_vectors"]


def learned_snapshot_widget(snapshots: dict | None = None) -> InteractiveFigure:
    """Slider over the recorded training steps of data/learned_snapshots (notebook 04): the learned table's
    similarity matrix forming, and its similarity-by-distance curve against the sinusoidal one."""
    snapshots = snapshots if snapshots is not None else load_learned_snapshots()
    steps = list(snapshots["steps"])
    _, num_positions, dim = snapshots["tables"].shape
    step = widgets.SelectionSlider(options=steps, value=steps[-1], description="step")
    return InteractiveFigure(render_learned_snapshot, {"step": step}, figsize=(8, 3.4), ncols=2,
                             extra={"snapshots": snapshots, "reference": sinusoidal_similarity(num_positions, dim)})


def shaw_clipping_widget() -> InteractiveFigure:
    """Slider for Shaw et al.'s clipping distance k (notebook 05)."""
    k = widgets.IntSlider(value=3, min=0, max=10, description="clip k")
    return InteractiveFigure(render_shaw_clipping, {"max_relative_position": k}, figsize=(8, 3.4), ncols=2)


def t5_buckets_widget() -> InteractiveFigure:
    """Sliders for T5's num_buckets and max_distance (notebook 05); both bucket forms side by side."""
    num_buckets = widgets.IntSlider(value=32, min=8, max=64, step=4, description="num_buckets")
    max_distance = widgets.IntSlider(value=128, min=32, max=256, step=16, description="max_distance")
    return InteractiveFigure(render_t5_buckets, {"num_buckets": num_buckets, "max_distance": max_distance},
                             figsize=(8, 3.2), ncols=2, extra={"span": 384})


def alibi_widget() -> InteractiveFigure:
    """Sliders for the number of heads (any, not only powers of 2) and the head shown (notebook 05)."""
    heads = widgets.IntSlider(value=8, min=1, max=16, description="heads")
    head = widgets.IntSlider(value=0, min=0, max=7, description="head")

    def follow(change):  # registered before InteractiveFigure's own observer, so head is valid when it redraws
        head.max = change["new"] - 1

    heads.observe(follow, names="value")
    return InteractiveFigure(render_alibi, {"num_heads": heads, "head": head}, figsize=(8, 3.4), ncols=2)


def rope_demo_vectors(dim: int = 32, *, seed: int = 0):
    """The seeded q, k (dim,) float64 pair used by the RoPE score figures."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(dim, generator=gen, dtype=torch.float64), torch.randn(dim, generator=gen, dtype=torch.float64)


def rope_score_widget() -> InteractiveFigure:
    """Sliders for the query position m and the key position n (notebook 06)."""
    q, k = rope_demo_vectors()
    m = widgets.IntSlider(value=5, min=0, max=60, description="m")
    n = widgets.IntSlider(value=2, min=0, max=60, description="n")
    return InteractiveFigure(render_rope_score, {"m": m, "n": n}, figsize=(8, 3.2), ncols=2, extra={"q": q, "k": k})


def rope_decay_widget() -> InteractiveFigure:
    """Sliders for RoPE's base and head dim: the RoFormer long-term-decay bound (notebook 06)."""
    base = widgets.FloatLogSlider(value=10000.0, base=10, min=2, max=6, step=0.25, description="base")
    dim = widgets.IntSlider(value=128, min=16, max=256, step=16, description="dim")
    return InteractiveFigure(render_rope_decay_bound, {"base": base, "dim": dim}, figsize=(6.4, 3.2))


BUILDERS: dict = {  # name -> zero-argument builder returning an InteractiveFigure
    "learned_snapshot": learned_snapshot_widget,
    "shaw_clipping": shaw_clipping_widget,
    "t5_buckets": t5_buckets_widget,
    "alibi": alibi_widget,
    "rope_score": rope_score_widget,
    "rope_decay": rope_decay_widget,
}
