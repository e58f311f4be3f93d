"""Slider figures of notebooks 00, 02 and 03 over posenc_lib.plots.sinusoidal: the sinusoidal table made
on a chosen device and dtype, the table and its dot products, one pair on the unit circle."""
from __future__ import annotations

import ipywidgets as widgets
import torch

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
                                   description="device"),
        "dtype": widgets.Dropdown(options=list(DTYPES), value="float32", description="dtype"),
    }
    return InteractiveFigure(render_device_check, controls, figsize=(8.5, 2.8), ncols=2, dpi=72,
                             title="device / dtype picker")


def sinusoidal_explorer() -> InteractiveFigure:
    """02: the sinusoidal table with sliders for d_model, base, length, the position shown, and the layout."""
    controls = {
        "d_model": widgets.IntSlider(value=128, min=4, max=512, step=2, description="d_model"),
        "base": widgets.FloatLogSlider(value=10000.0, base=10, min=1, max=6, step=0.25, description="base"),
        "length": widgets.IntSlider(value=100, min=10, max=500, step=10, description="length"),
        "position": widgets.IntSlider(value=20, min=0, max=99, description="position"),
        "layout": widgets.Dropdown(options=["interleaved", "concat"], value="interleaved", description="layout"),
    }
    fig = InteractiveFigure(render_sinusoidal_heatmap, controls, figsize=(9.0, 3.2), ncols=2, dpi=72,
                            title="sinusoidal position encoding")
    position = controls["position"]

    def _fit_position(change):  # keep the position slider inside the table
        position.max = change["new"] - 1

    controls["length"].observe(_fit_position, names="value")
    return fig


def pe_dot_explorer() -> InteractiveFigure:
    """02: PE(position) . PE(q) for all q, with sliders for d_model, base and the position."""
    controls = {
        "d_model": widgets.IntSlider(value=128, min=4, max=512, step=2, description="d_model"),
        "base": widgets.FloatLogSlider(value=10000.0, base=10, min=1, max=6, step=0.25, description="base"),
        "position": widgets.IntSlider(value=50, min=0, max=199, description="position"),
    }
    return InteractiveFigure(render_pe_dot, controls, figsize=(7.0, 3.0), dpi=72, extra={"length": 200},
                             title="dot products of position encodings")


def unit_circle_explorer() -> InteractiveFigure:
    """03: one (sin, cos) pair on the unit circle, positions numbered, with M_k's arrow and RoPE's R_k's (the
    notebook shows it after defining R); sliders for the offset k, the frequency index i, the position."""
    controls = {
        "k": widgets.IntSlider(value=5, min=-30, max=30, description="offset k"),
        "i": widgets.IntSlider(value=1, min=0, max=7, description="pair i"),
        "position": widgets.IntSlider(value=3, min=0, max=40, description="position"),
    }
    return InteractiveFigure(render_unit_circle, controls, figsize=(4.6, 4.6), dpi=72,
                             extra={"dim": 16, "base": 10000.0}, title="PE(pos + k) = M_k · PE(pos), one pair")


BUILDERS: dict = {  # name -> zero-argument builder returning an InteractiveFigure
    "device_picker": device_picker,
    "sinusoidal_explorer": sinusoidal_explorer,
    "pe_dot_explorer": pe_dot_explorer,
    "unit_circle_explorer": unit_circle_explorer,
}
