"""The shared slider-figure mechanism (posenc_lib.widgets._base), for every registered builder: a control
change redraws once and changes the picture, the redraw reuses its axes (reset_axes keeps the tick
objects, for speed) and must look exactly like the same settings drawn on a brand-new figure, and it
stays well under a second. What each figure shows is tested in test_plots_<topic>.py."""
import io
import time

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


def test_every_topics_builders_are_registered_once():
    names = [name for topic in W.TOPICS for name in topic.BUILDERS]
    assert len(names) == len(set(names)), "two topics register the same builder name"
    for topic in W.TOPICS:
        for name, builder in topic.BUILDERS.items():
            assert W.BUILDERS[name] is builder and getattr(W, builder.__name__) is builder
            assert builder.__name__ in topic.__all__


@pytest.mark.parametrize("name", sorted(W.BUILDERS))
def test_redraw_matches_a_fresh_figure(name):
    fig = W.BUILDERS[name]()
    assert isinstance(fig, W.InteractiveFigure) and fig.redraw_count == 1
    assert np.array_equal(pixels(fig.image.value), pixels(fig.fresh_png()))
    for control_name, control in fig.controls.items():
        for value in other_values(control):
            before, before_png = fig.redraw_count, fig.image.value
            control.value = value
            assert fig.redraw_count == before + 1, f"{name}: {control_name} did not redraw"
            assert fig.image.value != before_png, f"{name}: {control_name}={value!r} left the picture as it was"
            assert np.array_equal(pixels(fig.image.value), pixels(fig.fresh_png())), (
                f"{name}: the redraw after {control_name}={value!r} differs from a fresh figure")


@pytest.mark.parametrize("name", sorted(W.BUILDERS))
def test_a_redraw_takes_well_under_a_second(name):
    """Not the 100 ms target (shared CI cores are noisy): a guard against an accidental recompute per redraw."""
    fig = W.BUILDERS[name]()
    start = time.process_time()  # CPU time: less at the mercy of other processes than wall time
    fig.redraw()
    assert time.process_time() - start < 1.0
