"""Slider figures of notebook 10 over posenc_lib.plots.production: the RoPE base against a context length,
the rotary fraction of a partial-rotary head, one layer of a real model (read from data/model_configs.json),
and the attention factors of context extension against the softmax's budget."""
from __future__ import annotations

import ipywidgets as widgets

from ..configs import from_hf_config
from ..experiments.results import load_model_configs
from ..i18n import tr
from ..plots.production import (
    render_attention_budget,
    render_base_context,
    render_layer_positions,
    render_partial_rotary,
)
from ._base import InteractiveFigure

__all__ = ["base_context_widget", "partial_rotary_widget", "layer_widget", "attention_budget_widget"]


def base_context_widget() -> InteractiveFigure:
    """Sliders for the RoPE base and the context length (head dim 128): how many pairs make less than one
    turn in the context, and where Men et al.'s sum B(m) first drops below 0."""
    base = widgets.FloatLogSlider(value=10000.0, base=10, min=3, max=8, step=0.25, description=tr("base", "底数"))
    context = widgets.SelectionSlider(options=[(f"{2 ** e:,}", 2 ** e) for e in range(10, 19)], value=4096,
                                      description=tr("context", "上下文"))
    return InteractiveFigure(render_base_context, {"base": base, "context": context}, figsize=(8.4, 3.2), ncols=2,
                             title=tr("the RoPE base against the context length (head dim 128)",
                                              "RoPE 底数与上下文长度（头维度 128）"))


def partial_rotary_widget() -> InteractiveFigure:
    """A slider for the rotary fraction of a 96-dim head (GPT-NeoX-20B's: 0.25): which dims turn, and the
    score against the distance with the unrotated dims' constant part."""
    fractions = [k / 8 for k in range(1, 9)]  # 12, 24, ..., 96 dims: always whole pairs
    fraction = widgets.SelectionSlider(options=[(tr(f"{f:g} ({int(96 * f)} dims)", f"{f:g}（{int(96 * f)} 维）"), f)
                                                for f in fractions], value=0.25,
                                       description=tr("fraction", "比例"))
    return InteractiveFigure(render_partial_rotary, {"fraction": fraction}, figsize=(8.4, 3.2), ncols=2,
                             title=tr("partial rotary on a 96-dim head", "96 维头上的部分旋转"))


def layer_widget(reports: dict | None = None) -> InteractiveFigure:
    """A model (data/model_configs.json, read with from_hf_config) and a layer index: what that layer does with
    positions. The layer slider ends at the chosen model's last layer."""
    if reports is None:
        reports = {m["name"]: from_hf_config(m["config"]) for m in load_model_configs()}
    names = [name for name, positions in reports.items() if positions.rope_layers]
    start = next((n for n in names if n.startswith("Gemma 3")), names[0])
    model = widgets.Dropdown(options=names, value=start, description=tr("model", "模型"))
    layer = widgets.IntSlider(value=5, min=0, max=reports[start].num_layers - 1,
                               description=tr("layer", "层"))
    # registered before the figure's own observers, so the layer exists when the figure redraws
    model.observe(lambda change: setattr(layer, "max", reports[change["new"]].num_layers - 1), names="value")
    return InteractiveFigure(render_layer_positions, {"model": model, "layer": layer}, figsize=(8.4, 3.2), ncols=2,
                             extra={"reports": reports}, title=tr("one layer of a real model", "真实模型中的一层"))


def attention_budget_widget() -> InteractiveFigure:
    """A slider for the context-extension factor s (trained length L0 = 4096): the q.k multipliers of log-n
    scaling, LongRoPE, YaRN and Llama 4, and what they do to the weight of one right key among n."""
    factor = widgets.FloatLogSlider(value=32.0, base=2, min=0, max=7, step=0.5, description=tr("factor s", "因子 s"))
    return InteractiveFigure(render_attention_budget, {"factor": factor}, figsize=(8.4, 3.2), ncols=2,
                             title=tr("one budget of attention: scaling q.k with the length",
                                      "注意力只有一份预算：q.k 随长度放大"))


BUILDERS: dict = {  # name -> zero-argument builder returning an InteractiveFigure
    "base_context": base_context_widget,
    "partial_rotary": partial_rotary_widget,
    "layer_positions": layer_widget,
    "attention_budget": attention_budget_widget,
}
