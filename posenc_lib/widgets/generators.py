"""Slider figure of notebook 14, section 1, over posenc_lib.plots.generators: the generator's decay and angle,
and the scores they give under the same and the inverse-transpose action."""
from __future__ import annotations

import ipywidgets as widgets

from ..i18n import tr
from ..plots.generators import render_generator_scores
from ._base import InteractiveFigure

__all__ = ["generator_scores_widget"]


def generator_scores_widget() -> InteractiveFigure:
    """Sliders for M = decay * I + angle * J on one pair; starts at render_generator_scores' defaults (0.05, 0.3),
    the static figure's settings."""
    decay = widgets.FloatSlider(value=0.05, min=-0.1, max=0.2, step=0.01, description=tr("decay", "衰减"))
    angle = widgets.FloatSlider(value=0.3, min=0.0, max=1.6, step=0.05, description=tr("angle", "角度"))
    return InteractiveFigure(render_generator_scores, {"decay": decay, "angle": angle}, figsize=(9, 3.6), ncols=2)


BUILDERS: dict = {  # name -> zero-argument builder returning an InteractiveFigure
    "generator_scores": generator_scores_widget,
}
