"""Slider figure of notebook 14, section 2, over posenc_lib.plots.content: CoPE's positions as its gate's
threshold moves (every token counted, only full stops, none). It starts at the settings of the notebook's
static copy (threshold 0.5, sharpness 12)."""
from __future__ import annotations

import ipywidgets as widgets

from ..i18n import tr
from ..plots.content import render_cope_positions
from ._base import InteractiveFigure

__all__ = ["cope_threshold_widget"]


def cope_threshold_widget() -> InteractiveFigure:
    """Sliders for the gate's threshold and sharpness: p_ij counts tokens (threshold < 0), full stops
    (0 < threshold < 1) or nothing (threshold > 1)."""
    threshold = widgets.FloatSlider(value=0.5, min=-0.5, max=1.5, step=0.05, description=tr("threshold", "阈值"))
    sharpness = widgets.FloatSlider(value=12.0, min=1.0, max=24.0, step=1.0, description=tr("sharpness", "陡峭度"))
    return InteractiveFigure(render_cope_positions, {"threshold": threshold, "sharpness": sharpness},
                             figsize=(9.0, 3.8), ncols=2)


BUILDERS: dict = {  # name -> zero-argument builder returning an InteractiveFigure
    "cope_threshold": cope_threshold_widget,
}
