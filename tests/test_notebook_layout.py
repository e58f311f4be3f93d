"""What a learner sees of a notebook's layout (issue 37): code lines that fit beside JupyterLab's file browser
at 1366 px (at most 100 characters), in both editions."""
import json
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
