"""Slider figures of notebooks 07 and 08 over posenc_lib.plots.extension. The experiment builders read
the cached results in data/ once (posenc_lib.experiments.load_results) and hand them to every redraw."""
from __future__ import annotations

import ipywidgets as widgets

from ..experiments import load_results
from ..i18n import tr
from ..plots.extension import METHOD_LABELS, render_extension, render_extrapolation, render_rope_scaling
from ..scaling import EXTENSION_METHODS
from ._base import InteractiveFigure

__all__ = ["extrapolation_explorer", "rope_scaling_explorer", "extension_explorer"]


def extrapolation_explorer(results: dict | None = None) -> InteractiveFigure:
    """07: loss vs evaluation length per encoding; focus one encoding, pick the length compared with L."""
    results = load_results("extrapolation") if results is None else results
    L = results["provenance"]["config"]["train_len"]
    multiples = sorted(int(m) for m in results["runs"][0]["loss"])
    controls = {
        "encoding": widgets.Dropdown(options=[(tr("all", "全部"), "all")] + [(e, e) for e in results["summary"]],
                                     value="all", description=tr("focus", "突出显示")),
        "multiple": widgets.SelectionSlider(options=[(f"{m}L = {m * L}", m) for m in multiples],
                                            value=multiples[-1],  # 8L: as 07's static copy
                                            description=tr("length", "长度")),
    }
    return InteractiveFigure(render_extrapolation, controls, figsize=(9.5, 3.4), ncols=2,
                             extra={"results": results},
                             title=tr("train short, test long (cached results in data/)",
                                      "短训练、长测试（data/ 中缓存的结果）"))


def rope_scaling_explorer() -> InteractiveFigure:
    """08: what each context-extension method does to every RoPE frequency, for a chosen factor, head
    dimension and trained length L0 (64: this course's model; 4096: Llama 2's, with head dim 128)."""
    controls = {
        "method": widgets.Dropdown(options=[(str(METHOD_LABELS[m]), m) for m in EXTENSION_METHODS],
                                   value="yarn", description=tr("method", "方法")),
        "factor": widgets.FloatLogSlider(value=4.0, base=2, min=0, max=5, step=0.5,
                                         description=tr("factor", "因子")),
        "dim": widgets.Dropdown(options=[16, 64, 128], value=16, description=tr("head dim", "头维度")),
        "original_max": widgets.Dropdown(options=[64, 512, 4096, 8192], value=64, description="L0"),
    }
    return InteractiveFigure(render_rope_scaling, controls, figsize=(9.5, 3.2), ncols=2,
                             title=tr("RoPE frequencies under each context-extension method",
                                      "各上下文扩展方法下的 RoPE 频率"))


def extension_explorer(extension: dict | None = None) -> InteractiveFigure:
    """08: the RoPE model of 07 at 2-8x its length with each method; highlight one, toggle the fine-tuned runs."""
    extension = load_results("context_extension") if extension is None else extension
    methods = list(extension["no_finetune"][0]["loss"])
    controls = {
        "highlight": widgets.Dropdown(options=[(tr("all", "全部"), "all")]
                                      + [(str(METHOD_LABELS[m]), m) for m in methods],
                                      value="all", description=tr("method", "方法")),
        "show_finetuned": widgets.Checkbox(value=True, description=tr("fine-tuned runs", "微调结果")),
    }
    return InteractiveFigure(render_extension, controls, figsize=(7.0, 3.8),
                             extra={"extension": extension},
                             title=tr("context extension of the RoPE model (cached)",
                                      "RoPE 模型的上下文扩展（缓存结果）"))


BUILDERS: dict = {  # name -> zero-argument builder returning an InteractiveFigure
    "extrapolation_explorer": extrapolation_explorer,
    "rope_scaling_explorer": rope_scaling_explorer,
    "extension_explorer": extension_explorer,
}
