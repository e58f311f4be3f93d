"""The shared slider-figure mechanism (posenc_lib.widgets._base): a redraw reuses its axes
(reset_axes keeps the tick objects, for speed) and must look exactly like the same settings drawn
on a brand-new figure, for every registered builder and after every kind of control change."""
import io

import ipywidgets
import numpy as np
import pytest
from PIL import Image

from posenc_lib import widgets as W


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))


def other_values(control) -> list:
    """Up to two valid values different from the control's current one."""
    if hasattr(control, "options"):
        values = [o[1] if isinstance(o, tuple) else o for o in control.options]
        return [v for v in values if v != control.value][:2]
    if isinstance(control, (ipywidgets.Checkbox, ipywidgets.ToggleButton)):
        return [not control.value]
    if isinstance(control, ipywidgets.FloatLogSlider):  # min/max are exponents
        return [v for v in (control.base ** control.max, control.base ** control.min) if v != control.value]
    if hasattr(control, "min") and hasattr(control, "max"):
        lo, hi, step = control.min, control.max, getattr(control, "step", None) or 1
        top = lo + int((hi - lo) // step) * step  # on the slider's grid (e.g. even dimensions only)
        third = lo + int((hi - lo) / 3 // step) * step
        return [v for v in (top, third) if v != control.value]
    return []


def test_builders_are_registered():
    assert len(W.BUILDERS) >= 10


@pytest.mark.parametrize("name", sorted(W.BUILDERS))
def test_redraw_matches_a_fresh_figure(name):
    fig = W.BUILDERS[name]()
    assert isinstance(fig, W.InteractiveFigure)
    assert np.array_equal(pixels(fig.image.value), pixels(fig.fresh_png()))
    for control_name, control in fig.controls.items():
        for value in other_values(control):
            before = fig.redraw_count
            control.value = value
            assert fig.redraw_count == before + 1, f"{name}: {control_name} did not redraw"
            assert np.array_equal(pixels(fig.image.value), pixels(fig.fresh_png())), (
                f"{name}: the redraw after {control_name}={value!r} differs from a fresh figure")


def test_redraw_ms_is_the_median_of_its_redraws(monkeypatch):
    fig = W.BUILDERS["rope_decay"]()
    before = fig.redraw_count
    seconds = iter([0.30, 0.02, 0.01])  # one slow outlier; median 0.02 (not the mean, not the last)

    def timed_redraw():
        fig.redraw_count += 1
        fig.last_redraw_seconds = next(seconds)

    monkeypatch.setattr(fig, "redraw", timed_redraw)
    assert fig.redraw_ms(3) == pytest.approx(20.0)
    assert fig.redraw_count == before + 3
