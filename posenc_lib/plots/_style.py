"""The figures' shared look: few tick labels, room between two panels, one colour per encoding, and text
a learner can read.

Readable: every figure is drawn at FIGURE_DPI (100, matplotlib's default; widgets too) and no text is
smaller than 8 points, so the smallest label is MIN_TEXT_PX = 11 px high (font size in pixels, at 100%
zoom; a PNG is shown at its own size when it is at most ~950 px wide, FIGURE_MAX_WIDTH_IN inches).
`smallest_text(fig)` measures it; the plot and widget tests hold every figure to it, and the browser
test (tools/ui_check.py) checks that no figure is shown shrunk.

Text is most of a slider redraw's cost (see posenc_lib.widgets._base), so every figure keeps its tick
labels few and small, and places its panels itself (constrained layout would cost ~50 ms a redraw).

Chinese text (the Chinese edition's titles, labels and legends, see posenc_lib.i18n) needs a font with
CJK glyphs; matplotlib's own DejaVu Sans has none and draws empty boxes. On import this module adds one
as a fallback after the default family, so Latin text keeps its font and only the CJK characters come
from the fallback: first Noto Sans CJK SC from the `mplfonts` package (PyPI; `make` installs it), else
a CJK font the system has (fonts-wqy-microhei, fonts-noto-cjk, ...). With neither, switching to Chinese
warns once, and the Chinese characters in figures are boxes.
"""
from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import matplotlib
import matplotlib.text
import numpy as np
import torch
from matplotlib import font_manager

from ..i18n import get_language, on_language_change, tr

ENCODING_COLORS = {"nope": "#7f7f7f", "sinusoidal": "#1f77b4", "learned": "#9467bd", "t5": "#2ca02c",
                   "rope": "#ff7f0e", "alibi": "#d62728",
                   "cope": "#8c564b", "fox": "#e377c2", "path": "#17becf"}   # notebook 14's data-dependent three

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


FIGURE_DPI = 100
MIN_TEXT_PT = 8
MIN_TEXT_PX = 11          # 8 pt at 100 dpi = 11.1 px
FIGURE_MAX_WIDTH_IN = 9.5  # 950 px at FIGURE_DPI: fits JupyterLab's notebook column unshrunk


def smallest_text(fig) -> tuple[float, str]:
    """(font size in pixels, the text) of the smallest visible, non-empty text in `fig` at its own dpi,
    tick labels included (laid out first, without rendering); (inf, "") for a figure without text."""
    fig.draw_without_rendering()
    sizes = [(text.get_fontsize() * fig.dpi / 72, text.get_text()) for text in fig.findobj(matplotlib.text.Text)
             if text.get_visible() and text.get_text().strip() and _shown(text)]
    return min(sizes, default=(float("inf"), ""))


def clipped_texts(fig, tolerance_px: float = 1.0, *, laid_out: bool = False
                  ) -> list[tuple[str, tuple[float, float, float, float]]]:
    """(text, its box in pixels) for every visible, non-empty text that reaches past the figure's edge
    (the saved PNG and the notebook show the canvas only, so such a text is cut): titles, labels, legends,
    annotations, and the tick labels of the ticks matplotlib draws (ticks outside the view keep stale ones).
    laid_out=True (the figure was just laid out, by smallest_text): the layout is not done a second time,
    unless the figure has a layout engine, whose next pass can move things. Without one a second layout
    changes nothing: every figure the plot and widget tests draw gave the same list both ways."""
    if not (laid_out and fig.get_layout_engine() is None):
        fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    width, height = fig.bbox.width, fig.bbox.height
    ticks, drawn = set(), []
    for ax in fig.axes:
        for axis in ax._axis_map.values():
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks.update((tick.label1, tick.label2))
            if ax.get_visible():
                drawn += [label for tick in axis._update_ticks() for label in (tick.label1, tick.label2)]
    texts = drawn + [t for t in fig.findobj(matplotlib.text.Text) if t not in ticks and _shown(t)]
    out = []
    for text in texts:
        if not (text.get_visible() and text.get_text().strip()):
            continue
        box = text.get_window_extent(renderer)
        if (box.x0 < -tolerance_px or box.y0 < -tolerance_px or box.x1 > width + tolerance_px
                or box.y1 > height + tolerance_px):
            out.append((text.get_text(), tuple(round(v) for v in (box.x0, box.y0, box.x1, box.y1))))
    return out


def _shown(text) -> bool:
    """A text inside the figure (matplotlib keeps tick labels of ticks outside the view, invisible or not)."""
    axes = text.axes
    return axes is None or axes.get_visible()


def tidy(ax, nbins: int = 4, *, axis: str = "both", labelsize: int = 8, minor_ticks: bool = True) -> None:
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
    bar.ax.tick_params(labelsize=8)
    return bar
