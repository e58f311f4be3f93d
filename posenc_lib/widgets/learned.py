"""Notebook 04's slider figure: the learned table's similarity forming over training
(posenc_lib.plots.learned, on the snapshots stored by posenc_lib.experiments.learned)."""
from __future__ import annotations

import ipywidgets as widgets

from ..experiments.learned import load_learned_snapshots
from ..i18n import tr
from ..plots.learned import render_learned_snapshot, sinusoidal_similarity
from ._base import InteractiveFigure

__all__ = ["learned_snapshot_widget"]


def learned_snapshot_widget(snapshots: dict | None = None) -> InteractiveFigure:
    """Slider over the recorded training steps of data/learned_snapshots (notebook 04): the learned table's
    similarity matrix forming, and its similarity-by-distance curve against the sinusoidal one."""
    snapshots = snapshots if snapshots is not None else load_learned_snapshots()
    steps = list(snapshots["steps"])
    _, num_positions, dim = snapshots["tables"].shape
    step = widgets.SelectionSlider(options=steps, value=steps[-1], description=tr("step", "训练步"))
    return InteractiveFigure(render_learned_snapshot, {"step": step}, figsize=(8, 3.4), ncols=2,
                             extra={"snapshots": snapshots, "reference": sinusoidal_similarity(num_positions, dim)})


BUILDERS: dict = {"learned_snapshot": learned_snapshot_widget}  # name -> zero-argument builder
