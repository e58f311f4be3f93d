"""Slider figures of notebooks 00, 02 and 03 over posenc_lib.plots.sinusoidal: the sinusoidal table made
on a chosen device and dtype, the table and its dot products, one pair on the unit circle."""
from __future__ import annotations

import ipywidgets as widgets
import torch

from ..i18n import tr
from ..plots.sinusoidal import DTYPES, render_device_check, render_pe_dot, render_sinusoidal_heatmap, render_unit_circle
from ._base import InteractiveFigure

__all__ = ["available_devices", "device_picker", "sinusoidal_explorer", "pe_dot_explorer", "unit_circle_explorer"]


def available_devices() -> list[str]:
    """The devices torch can use here: always "cpu", plus "cuda" and "mps" when present."""
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


def device_picker() -> InteractiveFigure:
    """00: pick a device and dtype; see the sinusoidal table made there and its error against float64."""
    devices = available_devices()
    controls = {
        "device": widgets.Dropdown(options=devices, value=devices[-1] if "cuda" in devices else "cpu",
                                   description=tr("device", "设备")),
        "dtype": widgets.Dropdown(options=list(DTYPES), value="float32", description="dtype"),
    }
    return InteractiveFigure(render_device_check, controls, figsize=(8.5, 2.8), ncols=2,
                             title=tr("device / dtype picker", "设备 / dtype 选择"))


def sinusoidal_explorer() -> InteractiveFigure:
    """02: the sinusoidal table with sliders for d_model, base, length, the position shown, and the layout."""
    controls = {
        "d_model": widgets.IntSlider(value=128, min=4, max=512, step=2, description="d_model"),
        "base": widgets.FloatLogSlider(value=10000.0, base=10, min=1, max=6, step=0.25,
                                       description=tr("base", "底数")),
        "length": widgets.IntSlider(value=100, min=10, max=500, step=10, description=tr("length", "长度")),
        "position": widgets.IntSlider(value=20, min=0, max=99, description=tr("position", "位置")),
        "layout": widgets.Dropdown(options=["interleaved", "half"], value="interleaved",
                                   description=tr("layout", "布局")),
    }
    fig = InteractiveFigure(render_sinusoidal_heatmap, controls, figsize=(9.0, 3.2), ncols=2,
                            title=tr("sinusoidal position encoding", "正弦位置编码"))
    position = controls["position"]

    def _fit_position(change):  # keep the position slider inside the table
        position.max = change["new"] - 1

    controls["length"].observe(_fit_position, names="value")
    return fig


def pe_dot_explorer() -> InteractiveFigure:
    """02: PE(position) . PE(q) for all q, with sliders for d_model, base and the position."""
    controls = {
        "d_model": widgets.IntSlider(value=128, min=4, max=512, step=2, description="d_model"),
        "base": widgets.FloatLogSlider(value=10000.0, base=10, min=1, max=6, step=0.25,
                                       description=tr("base", "底数")),
        "position": widgets.IntSlider(value=50, min=0, max=199, description=tr("position", "位置")),
    }
    return InteractiveFigure(render_pe_dot, controls, figsize=(7.0, 3.0), extra={"length": 200},
                             title=tr("dot products of position encodings", "位置编码之间的点积"))


def unit_circle_explorer() -> InteractiveFigure:
    """03: one (sin, cos) pair on the unit circle, positions numbered, with M_k's arrow and RoPE's R_k's (the
    notebook shows it after defining R); sliders for the offset k, the frequency index i, the position."""
    controls = {
        "k": widgets.IntSlider(value=5, min=-30, max=30, description=tr("offset k", "偏移 k")),
        "i": widgets.IntSlider(value=1, min=0, max=7, description=tr("pair i", "频率对 i")),
        "position": widgets.IntSlider(value=3, min=0, max=40, description=tr("position", "位置")),
    }
    return InteractiveFigure(render_unit_circle, controls, figsize=(4.6, 4.6),
                             extra={"dim": 16, "base": 10000.0}, title=tr("PE(pos + k) = M_k · PE(pos), one pair",
                                      "PE(pos + k) = M_k · PE(pos)，单个频率对"))


BUILDERS: dict = {  # name -> zero-argument builder returning an InteractiveFigure
    "device_picker": device_picker,
    "sinusoidal_explorer": sinusoidal_explorer,
    "pe_dot_explorer": pe_dot_explorer,
    "unit_circle_explorer": unit_circle_explorer,
}
