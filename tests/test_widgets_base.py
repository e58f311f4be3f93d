"""The shared slider-figure mechanism (posenc_lib.widgets._base), for every registered builder: a control
change redraws once and changes the picture, the redraw reuses its axes (reset_axes keeps the tick
objects, for speed) and must look exactly like the same settings drawn on a brand-new figure, and it
does bounded work (counted, not timed). What each figure shows is tested in test_plots_<topic>.py."""
import collections
import io
import sys

import ipywidgets
import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

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


class WorkCounter(TorchDispatchMode):
    """Counts the work a block of code does, in numbers that do not depend on the machine's load: every
    tensor element torch computes (the output sizes of every aten op) and every call into posenc_lib's
    computing modules (not plots, widgets or i18n, which only draw). Timing is left to `make bench`
    and the browser test's report: a timed assertion here failed at random on a loaded 2-core CI."""

    def __init__(self):
        super().__init__()
        self.elements = 0
        self.library_calls = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.elements += sum(t.numel() for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor))
        return out

    def _profile(self, frame, event, arg):
        if event == "call":
            module = frame.f_globals.get("__name__", "")
            if module.startswith("posenc_lib.") and not module.startswith(DRAWING_MODULES):
                self.library_calls[f"{module}.{frame.f_code.co_name}"] += 1

    def __enter__(self):
        sys.setprofile(self._profile)
        return super().__enter__()

    def __exit__(self, *exc):
        sys.setprofile(None)
        return super().__exit__(*exc)


DRAWING_MODULES = ("posenc_lib.widgets", "posenc_lib.plots", "posenc_lib.i18n")
# A redraw re-renders from tables built once, when the figure is made. The largest redraw today computes
# about 0.34 M tensor elements and makes about 270 library calls; rebuilding a 4096 x 512 table on every
# redraw (2.1 M elements) is the kind of slip these budgets catch.
MAX_REDRAW_ELEMENTS = 1_000_000
MAX_REDRAW_LIBRARY_CALLS = 2_000


def redraw_work(fig) -> WorkCounter:
    with WorkCounter() as work:
        fig.redraw()
    return work


def assert_bounded_and_repeatable(where: str, first: WorkCounter, second: WorkCounter) -> None:
    """first: a redraw's work; second: the work of redrawing the same settings again."""
    assert first.elements <= MAX_REDRAW_ELEMENTS, f"{where}: a redraw computes {first.elements} elements"
    calls = sum(first.library_calls.values())
    assert calls <= MAX_REDRAW_LIBRARY_CALLS, (
        f"{where}: a redraw makes {calls} library calls, most {first.library_calls.most_common(3)}")
    assert (first.elements, first.library_calls) == (second.elements, second.library_calls), (
        f"{where}: the same settings redrawn twice did different work")


@pytest.mark.parametrize("name", sorted(W.BUILDERS))
def test_a_redraw_matches_a_fresh_figure_and_does_bounded_work_the_same_each_time(name):
    """At the builder's own settings and at other values of every control (one control at a time, kept as a
    learner leaves it): a control change redraws once and changes the picture, which is exactly the same
    settings drawn on a brand-new figure; and the redraw does bounded work, the same when the same settings are
    redrawn (nothing accumulates between redraws): a guard against an accidental recompute per redraw, by
    counting the work. The redraw a control change makes is itself the one counted and compared (one redraw per
    setting serves both checks)."""
    fig = W.BUILDERS[name]()
    assert isinstance(fig, W.InteractiveFigure) and fig.redraw_count == 1
    assert np.array_equal(pixels(fig.image.value), pixels(fig.fresh_png()))
    assert_bounded_and_repeatable(f"{name} initially", redraw_work(fig), redraw_work(fig))
    for control_name, control in fig.controls.items():
        for value in other_values(control):
            before, before_png = fig.redraw_count, fig.image.value
            with WorkCounter() as first:
                control.value = value  # the one redraw a learner's change makes, counted
            assert fig.redraw_count == before + 1, f"{name}: {control_name} did not redraw"
            assert fig.image.value != before_png, f"{name}: {control_name}={value!r} left the picture as it was"
            assert np.array_equal(pixels(fig.image.value), pixels(fig.fresh_png())), (
                f"{name}: the redraw after {control_name}={value!r} differs from a fresh figure")
            assert_bounded_and_repeatable(f"{name} at {control_name}={value!r}", first, redraw_work(fig))


def test_the_work_counter_catches_a_table_rebuilt_on_every_redraw():
    """The guard above can fail: a render that rebuilds a large sinusoidal table each time is over budget."""
    from posenc_lib.absolute import sinusoidal_table

    fig = W.BUILDERS["sinusoidal_explorer"]()
    render = fig.render

    def wasteful_render(axes, **values):
        sinusoidal_table(4096, 512)
        return render(axes, **values)

    honest = redraw_work(fig)
    fig.render = wasteful_render
    wasteful = redraw_work(fig)
    assert honest.elements <= MAX_REDRAW_ELEMENTS < wasteful.elements
    table_builds = "posenc_lib.absolute.sinusoidal_table"
    assert wasteful.library_calls[table_builds] == honest.library_calls[table_builds] + 1
