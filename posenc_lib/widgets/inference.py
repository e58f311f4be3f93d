"""Slider figures of notebook 12 over posenc_lib.plots.inference: the position ids of a padded batch
(pads per row) and the sink + window cache of StreamingLLM (sinks, window, tokens generated). Each starts at
the settings of the notebook's static copy of the figure."""
from __future__ import annotations

import ipywidgets as widgets

from ..i18n import tr
from ..plots.inference import render_padding, render_sink_window
from ._base import InteractiveFigure

__all__ = ["padding_widget", "sink_window_widget"]


def padding_widget() -> InteractiveFigure:
    """Sliders for the pads of each of three prompts in 7 slots: the position ids with left and with right
    padding."""
    controls = {f"pads_{row}": widgets.IntSlider(value=pads, min=0, max=6,
                                                 description=tr(f"pads, row {row}", f"第 {row} 行填充"))
                for row, pads in ((1, 0), (2, 3), (3, 5))}
    return InteractiveFigure(render_padding, controls, figsize=(8.4, 2.2), ncols=2)


def sink_window_widget() -> InteractiveFigure:
    """Sliders for the sinks, the window and the tokens generated: which tokens a sink + window cache keeps."""
    num_sinks = widgets.IntSlider(value=4, min=0, max=8, description=tr("sinks", "汇聚点"))
    window = widgets.IntSlider(value=8, min=1, max=16, description=tr("window", "窗口"))
    tokens = widgets.IntSlider(value=32, min=1, max=64, description=tr("tokens", "token 数"))
    return InteractiveFigure(render_sink_window, {"num_sinks": num_sinks, "window": window, "tokens": tokens},
                             figsize=(6.0, 3.4))


BUILDERS: dict = {  # name -> zero-argument builder returning an InteractiveFigure
    "padding": padding_widget,
    "sink_window": sink_window_widget,
}
