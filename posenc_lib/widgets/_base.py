"""The one mechanism behind every slider figure.

A builder makes an `InteractiveFigure`: a VBox of controls above an `ipywidgets.Image` that shows
the figure as a PNG. Moving a control calls `redraw()`, which clears the axes, calls the pure
`render_*(ax, **values)` from posenc_lib.plots with the controls' current values, and swaps the
PNG. The axes are reset (`reset_axes`), not rebuilt, which keeps redraws fast. Tests (and `make bench`)
drive it without a browser: set `controls[name].value`, then look at `fig`, `redraw_count` or
`last_redraw_seconds`.
"""
from __future__ import annotations

import io
import statistics
import time

import ipywidgets as widgets
import matplotlib
import matplotlib.ticker as mticker
from matplotlib import rcParams
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ..i18n import tr


def reset_axes(ax) -> None:
    """Bring axes back to a fresh state like `ax.clear()`, but keep its tick objects.

    `ax.clear()` throws the ticks away and matplotlib rebuilds them at the next draw, which is
    about a third of a redraw's time; here the drawn artists and every setting a render may change
    (titles, labels, scales, locators, limits, aspect, grid) are reset instead.
    tests/test_widgets_base.py checks, for every registered builder, that a redraw after this
    reset is pixel-identical to the same settings drawn on a brand-new figure.
    """
    for artist in (*ax.lines, *ax.images, *ax.collections, *ax.patches, *ax.texts, *ax.tables, *ax.artists):
        artist.remove()
    if ax.legend_ is not None:
        ax.legend_.remove()
    for loc in ("center", "left", "right"):
        ax.set_title("", loc=loc)
    ax.set_xlabel("")
    ax.set_ylabel("")
    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() != "linear":
            axis._set_axes_scale("linear")
        axis.set_major_locator(mticker.AutoLocator())
        axis.set_major_formatter(mticker.ScalarFormatter())
        axis.set_minor_locator(mticker.NullLocator())
        axis.set_minor_formatter(mticker.NullFormatter())
        axis.set_inverted(False)
    for spine in ax.spines.values():
        spine.set_visible(True)
    ax.grid(False)
    ax.set_aspect("auto")
    ax.set_axis_on()
    ax.set_prop_cycle(None)  # line colours start again at C0
    ax.set_xmargin(rcParams["axes.xmargin"])
    ax.set_ymargin(rcParams["axes.ymargin"])
    ax.use_sticky_edges = True
    ax.relim()
    ax.set_autoscale_on(True)
    ax.autoscale_view()


class InteractiveFigure(widgets.VBox):
    """controls: name -> widget whose .value is passed to render(axes, **values)."""

    def __init__(self, render, controls: dict, *, figsize=(6.4, 3.6), ncols: int = 1, dpi: int = 100,
                 title: str | None = None, extra: dict | None = None, layout: str | None = None,
                 differs: str = ""):
        self.render = render
        # "" when the figure starts at its static copy's settings (tests/test_widget_start.py), else what differs
        # ("base: 10,000 here, 500,000 in the static figure"), which the placeholder line then says
        self.differs = differs
        self.controls = dict(controls)
        self.extra = dict(extra or {})
        self._figure_args = dict(figsize=figsize, dpi=dpi, layout=layout, ncols=ncols)
        self.fig, self.axes = self._new_figure()
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

    def _repr_mimebundle_(self, **kwargs):
        """The live view, plus a line of text for where no widget can show: a stored notebook (its widget
        views are not kept), GitHub, nbconvert's HTML. That line replaces ipywidgets' `VBox(children=...)`
        repr, which lists every control's current value and is no help to a reader."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if self.differs:
            bundle["text/plain"] = tr(f"[live figure with sliders: run this cell in JupyterLab; it starts where the "
                                      f"static figure above differs: {self.differs}]",
                                      f"[带滑块的交互图：在 JupyterLab 中运行这个单元格即可使用；它的起始设置与上方的"
                                      f"静态图不同：{self.differs}]")
            return bundle
        bundle["text/plain"] = tr("[live figure with sliders: run this cell in JupyterLab; the static figure above "
                                  "shows the same]",
                                  "[带滑块的交互图：在 JupyterLab 中运行这个单元格即可使用；上方的静态图内容相同]")
        return bundle

    @property
    def values(self) -> dict:
        return {name: control.value for name, control in self.controls.items()}

    def _on_change(self, change):
        self.redraw()

    def _new_figure(self):
        a = self._figure_args  # constrained layout would cost ~50 ms a redraw: renders place things themselves
        fig = Figure(figsize=a["figsize"], dpi=a["dpi"], layout=a["layout"])
        FigureCanvasAgg(fig)  # one canvas for the figure's life: its renderer (and text-size cache) is reused
        return fig, (fig.subplots(1, a["ncols"]) if a["ncols"] > 1 else fig.subplots())

    def _axes_list(self) -> list:
        axes = self.axes  # one Axes, or an array of them (ncols > 1)
        return list(getattr(axes, "flat", [axes]))

    @staticmethod
    def _png(fig) -> bytes:
        buffer = io.BytesIO()
        # Unhinted glyphs: text is most of a redraw, and FreeType's autohinter (matplotlib's default)
        # costs ~30% of it; zlib level 1: bigger bytes, less CPU.
        with matplotlib.rc_context({"text.hinting": "no_hinting"}):
            fig.savefig(buffer, format="png", pil_kwargs={"compress_level": 1})
        return buffer.getvalue()

    def redraw(self):
        start = time.perf_counter()
        own = self._axes_list()
        for ax in own:
            reset_axes(ax)
        for ax in list(self.fig.axes):  # colorbars and twins made by the last render
            if ax not in own:
                ax.remove()
        self.last_result = self.render(self.axes, **self.values, **self.extra)
        self.image.value = self._png(self.fig)
        self.redraw_count += 1
        self.last_redraw_seconds = time.perf_counter() - start
        return self.last_result

    def redraw_ms(self, repeats: int = 3) -> float:
        """Redraw `repeats` times at the current settings; the median time in ms (one redraw is a noisy number)."""
        times = []
        for _ in range(max(1, int(repeats))):
            self.redraw()
            times.append(self.last_redraw_seconds)
        return 1e3 * statistics.median(times)

    def fresh_png(self) -> bytes:
        """The current settings drawn on a brand-new figure (what redraw() must reproduce exactly)."""
        fig, axes = self._new_figure()
        self.render(axes, **self.values, **self.extra)
        return self._png(fig)
