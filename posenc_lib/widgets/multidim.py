"""Slider figures of notebook 11 over posenc_lib.plots.multidim: 1-D against 2-D RoPE on a patch grid (grid
size and query patch), and which RoPE pairs M-RoPE gives to time, height and width (section split,
chunks or interleaved)."""
from __future__ import annotations

import ipywidgets as widgets

from ..i18n import tr
from ..plots.multidim import render_mrope_sections, render_patch_scores
from ._base import InteractiveFigure

__all__ = ["patch_scores_widget", "mrope_sections_widget"]


def patch_scores_widget() -> InteractiveFigure:
    """Sliders for the patch grid (height, width) and the query patch (row, col): the score of every key patch
    under 1-D RoPE on the row-major index and under 2-D axial RoPE (notebook 11). The query sliders end at
    the grid's last row and column (a smaller grid moves a query past its edge onto the edge)."""
    height = widgets.IntSlider(value=8, min=2, max=12, description=tr("height", "高"))
    width = widgets.IntSlider(value=8, min=2, max=12, description=tr("width", "宽"))
    row = widgets.IntSlider(value=3, min=0, max=7, description=tr("query row", "查询行"))
    col = widgets.IntSlider(value=4, min=0, max=7, description=tr("query col", "查询列"))
    # registered before the figure's own observers, so the query is inside the grid when it redraws
    height.observe(lambda change: setattr(row, "max", change["new"] - 1), names="value")
    width.observe(lambda change: setattr(col, "max", change["new"] - 1), names="value")
    return InteractiveFigure(render_patch_scores, {"height": height, "width": width, "row": row, "col": col},
                             figsize=(8, 3.6), ncols=2)


def mrope_sections_widget() -> InteractiveFigure:
    """Sliders for M-RoPE's section split (pairs for t and for h; w gets the rest of 64) and a toggle between
    Qwen2-VL's chunks and Qwen3-VL's interleaving: the wavelength of every pair, coloured by its axis."""
    temporal = widgets.IntSlider(value=16, min=0, max=32, description=tr("t pairs", "t 频率对"))
    height = widgets.IntSlider(value=24, min=0, max=32, description=tr("h pairs", "h 频率对"))
    interleaved = widgets.ToggleButtons(options=[(tr("chunks (Qwen2-VL)", "分块（Qwen2-VL）"), False),
                                                 (tr("interleaved (Qwen3-VL)", "交错（Qwen3-VL）"), True)],
                                        value=False)
    return InteractiveFigure(render_mrope_sections, {"temporal": temporal, "height": height,
                                                     "interleaved": interleaved}, figsize=(6.4, 3.4))


BUILDERS: dict = {  # name -> zero-argument builder returning an InteractiveFigure
    "patch_scores": patch_scores_widget,
    "mrope_sections": mrope_sections_widget,
}
