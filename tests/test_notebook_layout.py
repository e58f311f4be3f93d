"""What a learner sees of a notebook's layout (issue 37): code lines that fit beside JupyterLab's file browser
at 1366 px (at most 100 characters), in both editions."""
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(ROOT.glob("notebooks/[0-9][0-9]_*.ipynb")) + sorted(ROOT.glob("notebooks/zh/[0-9][0-9]_*.ipynb"))
MAX_CODE_LINE = 100


def long_code_lines(nb, limit=MAX_CODE_LINE):
    """(cell index, line) for each code line over `limit` characters."""
    return [(i, line) for i, cell in enumerate(nb["cells"]) if cell["cell_type"] == "code"
            for line in "".join(cell["source"]).splitlines() if len(line) > limit]


def test_a_long_line_is_found():
    nb = {"cells": [{"cell_type": "code", "source": ["x = 1\n", "y = " + "1 + " * 30 + "1"]},
                    {"cell_type": "markdown", "source": ["z" * 200]}]}
    assert [i for i, _ in long_code_lines(nb)] == [0]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_code_lines_are_at_most_100_characters(path):
    long = long_code_lines(json.loads(path.read_text(encoding="utf-8")))
    assert not long, f"{len(long)} code lines over {MAX_CODE_LINE} characters, e.g. " + "; ".join(
        f"cell {i}: {len(line)} chars {line[:60]!r}..." for i, line in long[:3])


# ---- the README's promise: every notebook with a figure has sliders, or the README names it (both languages)
WIDGET_IMPORT = re.compile(r"^from posenc_lib\.widgets(\.\w+)? import ", re.M)
WITHOUT_SLIDERS = {"en": re.compile(r"Notebooks without sliders: ([0-9, and]+)"),
                   "zh": re.compile(r"没有滑块的 notebook：([0-9、和]+)")}


def figures_without_sliders(folder: Path) -> set:
    """Numbers of the notebooks whose stored outputs hold a figure (a PNG) but whose code builds no widget."""
    out = set()
    for path in sorted(folder.glob("[0-9][0-9]_*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        figure = any("image/png" in o.get("data", {}) for c in nb["cells"] if c["cell_type"] == "code"
                     for o in c.get("outputs", []))
        if figure and not WIDGET_IMPORT.search(code):
            out.add(path.name[:2])
    return out


@pytest.mark.parametrize("lang, readme, folder", [("en", "README.md", "notebooks"),
                                                   ("zh", "README.zh.md", "notebooks/zh")])
def test_the_readme_names_every_notebook_with_figures_but_no_sliders(lang, readme, folder):
    found = WITHOUT_SLIDERS[lang].search((ROOT / readme).read_text(encoding="utf-8"))
    named = set(re.findall(r"\d\d", found.group(1))) if found else set()
    assert named == figures_without_sliders(ROOT / folder), (
        f"{readme} says these notebooks have no sliders: {sorted(named)}; the notebooks: "
        f"{sorted(figures_without_sliders(ROOT / folder))}")
