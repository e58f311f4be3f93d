"""Notebook 01's slider figure: one attention layer (one head), or two stacked, on a permuted sentence
(posenc_lib.plots.permutation)."""
from __future__ import annotations

import ipywidgets as widgets

from ..plots.permutation import render_permutation, sentence_permutations, toy_sentence
from ._base import InteractiveFigure

__all__ = ["permutation_explorer"]


def permutation_explorer() -> InteractiveFigure:
    """01: choose an ordering of "我 爱 北京", toggle the sinusoidal encoding and the causal mask, and stack
    a second one-head attention layer (under the mask, two layers see the order inside a prefix; one does not)."""
    setup = toy_sentence()
    orders = sentence_permutations()
    controls = {
        "perm": widgets.Dropdown(options=list(orders.items()), value=orders["爱 北京 我"], description="order"),
        "encoding": widgets.Dropdown(options=[("none (NoPE)", "none"), ("sinusoidal, added", "sinusoidal")],
                                     value="none", description="encoding"),
        "causal": widgets.Checkbox(value=False, description="causal mask"),
        "layers": widgets.Dropdown(options=[("1 layer (1 head)", 1), ("2 stacked layers", 2)], value=1,
                                   description="layers"),
    }
    return InteractiveFigure(render_permutation, controls, figsize=(9.5, 3.0), ncols=3, dpi=72,
                             extra={"setup": setup}, title="attention on a permuted sentence")


BUILDERS: dict = {"permutation_explorer": permutation_explorer}  # name -> zero-argument builder
