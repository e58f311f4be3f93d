"""Notebook 01's slider figure: one attention layer (one head), or two stacked, on a permuted sentence
(posenc_lib.plots.permutation)."""
from __future__ import annotations

import ipywidgets as widgets

from ..i18n import tr
from ..plots.permutation import render_permutation, sentence_permutations, toy_sentence
from ._base import InteractiveFigure

__all__ = ["permutation_explorer"]


def permutation_explorer() -> InteractiveFigure:
    """01: choose an ordering of "我 爱 北京", toggle the sinusoidal encoding and the causal mask, and stack
    a second one-head attention layer (under the mask, two layers see the order inside a prefix; one does not).
    It starts where 01's static copy above it is drawn: order 爱 北京 我, the sinusoidal encoding, no mask."""
    setup = toy_sentence()
    orders = sentence_permutations()
    controls = {
        "perm": widgets.Dropdown(options=list(orders.items()), value=orders["爱 北京 我"],
                                 description=tr("order", "语序")),
        "encoding": widgets.Dropdown(options=[(tr("none (NoPE)", "无（NoPE）"), "none"),
                                              (tr("sinusoidal, added", "正弦，加到输入上"), "sinusoidal")],
                                     value="sinusoidal", description=tr("encoding", "位置编码")),
        "causal": widgets.Checkbox(value=False, description=tr("causal mask", "因果掩码")),
        "layers": widgets.Dropdown(options=[(tr("1 layer (1 head)", "1 层（1 个头）"), 1),
                                            (tr("2 stacked layers", "堆叠 2 层"), 2)], value=1,
                                   description=tr("layers", "层数")),
    }
    return InteractiveFigure(render_permutation, controls, figsize=(9.5, 3.0), ncols=3,
                             extra={"setup": setup}, title=tr("attention on a permuted sentence", "打乱语序后的注意力"))


BUILDERS: dict = {"permutation_explorer": permutation_explorer}  # name -> zero-argument builder
