"""Slider figures of notebook 05 over posenc_lib.plots.relative: Shaw's clipping distance, T5's buckets,
ALiBi's heads and slopes."""
from __future__ import annotations

import ipywidgets as widgets

from ..i18n import tr
from ..plots.relative import render_alibi, render_shaw_clipping, render_t5_buckets
from ._base import InteractiveFigure

__all__ = ["shaw_clipping_widget", "t5_buckets_widget", "alibi_widget"]


def shaw_clipping_widget() -> InteractiveFigure:
    """Slider for Shaw et al.'s clipping distance k (notebook 05)."""
    k = widgets.IntSlider(value=3, min=0, max=10, description=tr("clip k", "截断 k"))
    return InteractiveFigure(render_shaw_clipping, {"max_relative_position": k}, figsize=(8, 3.4), ncols=2)


def t5_buckets_widget() -> InteractiveFigure:
    """Sliders for T5's num_buckets and max_distance (notebook 05); both bucket forms side by side."""
    num_buckets = widgets.IntSlider(value=32, min=8, max=64, step=4, description="num_buckets")
    max_distance = widgets.IntSlider(value=128, min=32, max=256, step=16, description="max_distance")
    return InteractiveFigure(render_t5_buckets, {"num_buckets": num_buckets, "max_distance": max_distance},
                             figsize=(8, 3.2), ncols=2, extra={"span": 384})


def alibi_widget() -> InteractiveFigure:
    """Sliders for the number of heads (any, not only powers of 2) and the head shown (notebook 05)."""
    heads = widgets.IntSlider(value=8, min=1, max=16, description=tr("heads", "头数"))
    head = widgets.IntSlider(value=0, min=0, max=7, description=tr("head", "头"))

    def follow(change):  # registered before InteractiveFigure's own observer, so head is valid when it redraws
        head.max = change["new"] - 1

    heads.observe(follow, names="value")
    return InteractiveFigure(render_alibi, {"num_heads": heads, "head": head}, figsize=(8, 3.4), ncols=2)


BUILDERS: dict = {  # name -> zero-argument builder returning an InteractiveFigure
    "shaw_clipping": shaw_clipping_widget,
    "t5_buckets": t5_buckets_widget,
    "alibi": alibi_widget,
}
