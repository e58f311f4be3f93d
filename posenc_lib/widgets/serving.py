"""Slider figures of notebook 13 over posenc_lib.plots.serving: a context shift (tokens dropped, tokens kept),
a rolling sliding-window buffer (window, tokens written) and a speculative-decoding token tree (tree shape:
branching and levels). Each starts at the settings of the notebook's static copy of the figure."""
from __future__ import annotations

import ipywidgets as widgets

from ..i18n import tr
from ..inference import token_tree
from ..plots.serving import render_context_shift, render_ring_buffer, render_token_tree
from ._base import InteractiveFigure

__all__ = ["context_shift_widget", "ring_buffer_widget", "token_tree_widget"]


def context_shift_widget() -> InteractiveFigure:
    """Sliders for the tokens dropped (n_discard) and kept at the start (n_keep) of a full cache of 16:
    the positions before and after llama.cpp's shift. The sum never passes 16 (each slider's maximum
    follows the other)."""
    n_discard = widgets.IntSlider(value=6, min=1, max=14, description=tr("dropped", "丢弃"))
    n_keep = widgets.IntSlider(value=2, min=0, max=10, description=tr("kept first", "保留开头"))
    n_discard.observe(lambda change: setattr(n_keep, "max", 16 - change["new"]), names="value")
    n_keep.observe(lambda change: setattr(n_discard, "max", 16 - change["new"]), names="value")
    return InteractiveFigure(render_context_shift, {"n_discard": n_discard, "n_keep": n_keep}, figsize=(8, 1.9))


def ring_buffer_widget() -> InteractiveFigure:
    """Sliders for the window W (slots) and the tokens written: which text position each slot holds."""
    window = widgets.IntSlider(value=4, min=2, max=8, description=tr("window W", "窗口 W"))
    tokens = widgets.IntSlider(value=10, min=4, max=16, description=tr("tokens", "token 数"))
    return InteractiveFigure(render_ring_buffer, {"window": window, "tokens": tokens}, figsize=(5.6, 3.4))


def _tree(axes, branching: int = 2, levels: int = 3) -> dict:
    return render_token_tree(axes, token_tree(branching, levels))


def token_tree_widget() -> InteractiveFigure:
    """Sliders for the tree shape (children per node, levels): the tree at its positions and its mask."""
    branching = widgets.IntSlider(value=2, min=1, max=3, description=tr("children", "子节点数"))
    levels = widgets.IntSlider(value=3, min=1, max=3, description=tr("levels", "层数"))
    return InteractiveFigure(_tree, {"branching": branching, "levels": levels}, figsize=(8, 3.2), ncols=2)


BUILDERS: dict = {  # name -> zero-argument builder returning an InteractiveFigure
    "context_shift": context_shift_widget,
    "ring_buffer": ring_buffer_widget,
    "token_tree": token_tree_widget,
}
