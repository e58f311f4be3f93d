"""The one mechanism behind every slider figure.

A builder makes an `InteractiveFigure`: a VBox of controls above an `ipywidgets.Image` that shows
the figure as a PNG. Moving a control calls `redraw()`, which clears the axes, calls the pure
`render_*(ax, **values)` from posenc_lib.plots with the controls' current values, and swaps the
PNG. Tests (and `make bench`) drive it without a browser: set `controls[name].value`, then look at
`fig`, `redraw_count` or `last_redraw_seconds`.
"""
from __future__ import annotations

import io
import time

import ipywidgets as widgets

from matplotlib.figure import Figure


class InteractiveFigure(widgets.VBox):
    """controls: name -> widget whose .value is passed to render(axes, **values)."""

    def __init__(self, render, controls: dict, *, figsize=(6.4, 3.6), ncols: int = 1, dpi: int = 80,
                 title: str | None = None, extra: dict | None = None, layout: str | None = None):
        self.render = render
        self.controls = dict(controls)
        self.extra = dict(extra or {})
        self.fig = Figure(figsize=figsize, dpi=dpi, layout=layout)  # constrained layout costs ~50 ms a redraw
        self.axes = self.fig.subplots(1, ncols) if ncols > 1 else self.fig.subplots()
        width_px = int(round(figsize[0] * dpi))  # shown at its own size: a stretched PNG looks blurry
        self.image = widgets.Image(format="png", layout=widgets.Layout(width=f"{width_px}px", max_width="100%"))
        self.redraw_count = 0
        self.last_redraw_seconds = float("nan")
        self.last_result = None
        for control in self.controls.values():
            if hasattr(control, "continuous_update"):
                control.continuous_update = False
            control.observe(self._on_change, names="value")
        header = [widgets.HTML(f"<b>{title}</b>")] if title else []
        super().__init__(header + [widgets.HBox(list(self.controls.values()),
                                                layout=widgets.Layout(flex_flow="row wrap")), self.image])
        self.redraw()

    @property
    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def _on_change(self, change):
        self.redraw()

    def redraw(self):
        start = time.perf_counter()
        axes = self.axes if isinstance(self.axes, (list, tuple)) or hasattr(self.axes, "shape") else [self.axes]
        for ax in list(getattr(axes, "flat", axes)):
            ax.clear()
        for ax in list(self.fig.axes):  # colorbars and twins made by the last render
            if ax not in list(getattr(axes, "flat", axes)):
                ax.remove()
        self.last_result = self.render(self.axes, **self.values, **self.extra)
        buffer = io.BytesIO()
        self.fig.savefig(buffer, format="png")
        self.image.value = buffer.getvalue()
        self.redraw_count += 1
        self.last_redraw_seconds = time.perf_counter() - start
        return self.last_result
