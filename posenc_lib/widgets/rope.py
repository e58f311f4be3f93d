"""Slider figures of notebook 06 over posenc_lib.plots.rope: the score of a rotated q and k against their
positions, and RoFormer's long-term decay bound."""
from __future__ import annotations

import ipywidgets as widgets
import torch

from ..i18n import tr
from ..plots.rope import render_rope_decay_bound, render_rope_score
from ._base import InteractiveFigure

__all__ = ["rope_demo_vectors", "rope_score_widget", "rope_decay_widget"]


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
    base = widgets.FloatLogSlider(value=500000.0, base=10, min=2, max=6, step=0.25, description=tr("base", "底数"))
    dim = widgets.IntSlider(value=128, min=16, max=256, step=16, description=tr("dim", "维度"))
    return InteractiveFigure(render_rope_decay_bound, {"base": base, "dim": dim}, figsize=(8, 3.2))


BUILDERS: dict = {  # name -> zero-argument builder returning an InteractiveFigure
    "rope_score": rope_score_widget,
    "rope_decay": rope_decay_widget,
}
