"""Each slider figure starts where its static copy is drawn (issue 37): in every notebook, the widget a cell
builds (a builder of posenc_lib.widgets.BUILDERS, called with no arguments) starts with its controls at the
values the static copy above it passes to the same render function (a literal argument, or the render's
default where the static call leaves it out), or the builder says what differs (its `differs` note, which the
placeholder text shows)."""
import ast
import inspect
import json
from pathlib import Path

import pytest

from posenc_lib.widgets import BUILDERS

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(ROOT.glob("notebooks/[0-9][0-9]_*.ipynb"))
BY_NAME = {builder.__name__: builder for builder in BUILDERS.values()}


def _calls(source: str, name: str) -> list:
    try:
        tree = ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
    except SyntaxError:
        return []
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == name]


def static_arguments(call: ast.Call, render) -> dict:
    """parameter -> value for every literal argument of a static render call (the first, the axes, left out)."""
    params = list(inspect.signature(render).parameters)[1:]
    out = {}
    for param, arg in zip(params, call.args[1:]):
        try:
            out[param] = ast.literal_eval(arg)
        except ValueError:
            out[param] = None  # not a literal: not compared
    for kw in call.keywords:
        try:
            out[kw.arg] = ast.literal_eval(kw.value)
        except ValueError:
            out[kw.arg] = None
    return out


def widget_starts(path: Path):
    """(cell index, builder name, {control: (widget value, static value)}) for each zero-argument builder a
    notebook calls after a static copy (the nearest cell above calling the same render)."""
    cells = [("".join(c["source"]) if c["cell_type"] == "code" else "")
             for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]
    for i, source in enumerate(cells):
        for name, builder in BY_NAME.items():
            if not any(not call.args and not call.keywords for call in _calls(source, name)):
                continue
            fig = builder()
            render = getattr(fig.render, "__wrapped__", fig.render)
            static = next((calls[0] for j in range(i, -1, -1) if (calls := _calls(cells[j], render.__name__))),
                          None)
            if static is None:
                continue
            given = static_arguments(static, render)
            defaults = {p.name: p.default for p in inspect.signature(render).parameters.values()}
            pairs = {}
            for control, value in fig.values.items():
                want = given.get(control, defaults.get(control, inspect.Parameter.empty))
                if want is None or want is inspect.Parameter.empty:
                    continue
                pairs[control] = (value, want)
            yield i, name, pairs, getattr(fig, "differs", "")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_widget_starts_at_its_static_copys_settings(path):
    bad = []
    for cell, name, pairs, differs in widget_starts(path):
        wrong = {c: v for c, v in pairs.items() if not _equal(*v)}
        if wrong and not all(c in differs for c in wrong):
            bad.append(f"cell {cell} {name}(): (widget, static) {wrong}")
    assert not bad, "widgets that start elsewhere than their static copy: " + "; ".join(bad)


def _equal(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(a - b) <= 1e-9 * max(1.0, abs(b))
    return a == b or (isinstance(a, tuple) and list(a) == b) or (isinstance(b, tuple) and list(b) == a)


def test_a_widget_starting_elsewhere_is_found(tmp_path):
    nb = {"cells": [{"cell_type": "code",
                     "source": "fig, ax = plt.subplots()\nrender_rope_decay_bound(ax, 10000.0, 128)"},
                    {"cell_type": "code", "source": "rope_decay_widget()"}]}
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    [(cell, name, pairs, _)] = list(widget_starts(path))
    assert (cell, name) == (1, "rope_decay_widget") and not _equal(*pairs["base"]) and _equal(*pairs["dim"])


def test_a_widget_that_starts_elsewhere_says_so_in_its_placeholder():
    import ipywidgets

    from posenc_lib.plots.rope import render_rope_decay_bound
    from posenc_lib.widgets._base import InteractiveFigure

    base = ipywidgets.FloatLogSlider(value=10000.0, base=10, min=2, max=6)
    fig = InteractiveFigure(render_rope_decay_bound, {"base": base}, differs="base: 10,000 here, 500,000 above")
    assert "base: 10,000 here, 500,000 above" in fig._repr_mimebundle_()["text/plain"]
