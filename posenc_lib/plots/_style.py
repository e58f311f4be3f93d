"""The figures' shared look: few, small tick labels, room between two panels, one colour per encoding.

Text is most of a slider redraw's cost (see posenc_lib.widgets._base), so every figure keeps its tick
labels few and small, and places its panels itself (constrained layout would cost ~50 ms a redraw).

Chinese text (the Chinese edition's titles, labels and legends, see posenc_lib.i18n) needs a font with
CJK glyphs; matplotlib's own DejaVu Sans has none and draws empty boxes. On import this module adds one
as a fallback after the default family, so Latin text looks as before and only the CJK characters come
from the fallback: first Noto Sans CJK SC from the `mplfonts` package (PyPI; `make` installs it), else
a CJK font the system has (fonts-wqy-microhei, fonts-noto-cjk, ...). With neither, switching to Chinese
warns once, and the Chinese characters in figures are boxes.
"""
from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import matplotlib
import numpy as np
import torch
from matplotlib import font_manager

from ..i18n import get_language, on_language_change, tr

ENCODING_COLORS = {"nope": "#7f7f7f", "sinusoidal": "#1f77b4", "learned": "#9467bd", "t5": "#2ca02c",
                   "rope": "#ff7f0e", "alibi": "#d62728"}

# System CJK fonts worth falling back on, best first (Linux packages, then macOS and Windows fonts).
SYSTEM_CJK_FAMILIES = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "WenQuanYi Micro Hei",
                       "WenQuanYi Zen Hei", "Droid Sans Fallback", "PingFang SC", "Hiragino Sans GB",
                       "Heiti SC", "Microsoft YaHei", "SimHei")


def packaged_cjk_font() -> Path | None:
    """Noto Sans CJK SC as shipped in the mplfonts wheel, or None when that package is not installed."""
    spec = importlib.util.find_spec("mplfonts")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "fonts" / "NotoSansCJKsc-Regular.otf"
    return path if path.is_file() else None


def setup_cjk_font() -> str | None:
    """Append a CJK font to matplotlib's font.family as a per-glyph fallback; return its family name,
    or None when there is none (see the module docstring for where it comes from)."""
    path = packaged_cjk_font()
    if path is not None:
        font_manager.fontManager.addfont(str(path))
        family = font_manager.FontProperties(fname=str(path)).get_name()
    else:
        installed = {font.name for font in font_manager.fontManager.ttflist}
        family = next((name for name in SYSTEM_CJK_FAMILIES if name in installed), None)
    if family is not None:
        families = list(matplotlib.rcParams["font.family"])
        if family not in families:
            matplotlib.rcParams["font.family"] = [*families, family]
    return family


CJK_FONT = setup_cjk_font()


def remove_cjk_font() -> None:
    """Undo the import's one change to matplotlib's settings: take the CJK fallback out of
    rcParams["font.family"] again (the figures' Chinese text then shows as boxes)."""
    if CJK_FONT is not None:
        matplotlib.rcParams["font.family"] = [f for f in matplotlib.rcParams["font.family"] if f != CJK_FONT]


def _warn_without_cjk_font(language: str) -> None:
    if language == "zh" and CJK_FONT is None:
        warnings.warn(tr("no font with Chinese characters was found, so the figures' Chinese text will show as "
                         "empty boxes: `make` installs one (pip install mplfonts), or install a system font "
                         "(apt-get install fonts-noto-cjk)",
                         "没有找到带中文字符的字体，图中的中文会显示成方框：`make` 会安装一个"
                         "（pip install mplfonts），也可以安装系统字体（apt-get install fonts-noto-cjk）"),
                      stacklevel=3)


on_language_change(_warn_without_cjk_font)
_warn_without_cjk_font(get_language())


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
