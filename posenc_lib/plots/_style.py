"""The figures' shared look: few, small tick labels, room between two panels, one colour per encoding.

Text is most of a slider redraw's cost (see posenc_lib.widgets._base), so every figure keeps its tick
labels few and small, and places its panels itself (constrained layout would cost ~50 ms a redraw).
"""
from __future__ import annotations

import numpy as np
import torch

ENCODING_COLORS = {"nope": "#7f7f7f", "sinusoidal": "#1f77b4", "learned": "#9467bd", "t5": "#2ca02c",
                   "rope": "#ff7f0e", "alibi": "#d62728"}


def tidy(ax, nbins: int = 4, *, axis: str = "both", labelsize: int = 7, minor_ticks: bool = True) -> None:
    """Tick labels of `labelsize` points, at most about `nbins` major ticks on the linear axes named by
    `axis` ("x", "y" or "both"; a log axis keeps its own ticks), and no minor ticks unless `minor_ticks`."""
    ax.tick_params(labelsize=labelsize)
    for name in ("x", "y") if axis == "both" else (axis,):
        if getattr(ax, f"get_{name}scale")() == "linear":
            ax.locator_params(axis=name, nbins=nbins)
    if not minor_ticks:
        ax.minorticks_off()


def two_panels(axes) -> None:
    """Room for the x labels and between two side-by-side panels."""
    axes[0].figure.subplots_adjust(bottom=0.17, wspace=0.3)


def to_numpy(values) -> np.ndarray:
    """A tensor (any device, dtype, with or without grad) or array-like as a float64 numpy array."""
    if isinstance(values, torch.Tensor):
        return values.detach().double().cpu().numpy()
    return np.asarray(values, dtype=float)


def side_colorbar(ax, image):
    """A colorbar in its own figure-level axes just right of the image drawn on `ax`. (figure.colorbar(ax=ax)
    would shrink `ax` to make room, again on every slider redraw; this leaves `ax` as it is, and a widget's
    redraw removes the extra axes.) Call it after the axes are placed (two_panels)."""
    ax.apply_aspect()  # an image with equal aspect is drawn in a box narrower than the axes
    box = ax.get_position()
    cax = ax.figure.add_axes([box.x1 + 0.008, box.y0, 0.012, box.height])
    bar = ax.figure.colorbar(image, cax=cax)
    bar.ax.tick_params(labelsize=7)
    return bar
