"""Exercises are numbered N.k everywhere: in notebook NN (either edition) the exercises are **NN.1**,
**NN.2**, ... in order, and a mention of "exercise N.k" (练习 N.k) anywhere in the course names one that
exists. So no two notebooks share a number (12's exercises were once 6.1-6.3, clashing with 06's)."""
import re
from pathlib import Path

import pytest
from notebook_sync import ROOT, read_cells, source

LABEL = re.compile(r"^\*\*(\d+)\.(\d+)\b", re.M)                    # **6.2 Half-split RoPE ...**
MENTION = re.compile(r"(?:[Ee]xercises?|练习)\s*(\d+)\.(\d+)")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted(
    (ROOT / "notebooks" / "zh").glob("[0-9][0-9]_*.ipynb"))


def labels(path: Path) -> list[tuple[int, int]]:
    return [(int(m.group(1)), int(m.group(2))) for c in read_cells(path) if c["cell_type"] == "markdown"
            for m in LABEL.finditer(source(c))]


def numbering_problems(path: Path) -> list[str]:
    number = int(path.name[:2])
    found = labels(path)
    expected = [(number, k) for k in range(1, len(found) + 1)]
    if found != expected:
        shown = ", ".join(f"{n}.{k}" for n, k in found)
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
        return [f"{where}: exercises numbered {shown}; notebook {number:02d} numbers them "
                + ", ".join(f"{n}.{k}" for n, k in expected)]
    return []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[str(p.relative_to(ROOT)) for p in NOTEBOOKS])
def test_exercises_are_numbered_by_their_notebook(path):
    problems = numbering_problems(path)
    assert not problems, "\n".join(problems)


def test_every_mentioned_exercise_exists():
    existing = {label for path in NOTEBOOKS for label in labels(path)}
    texts = [(p, source(c)) for p in NOTEBOOKS for c in read_cells(p) if c["cell_type"] == "markdown"]
    texts += [(p, p.read_text(encoding="utf-8")) for p in (ROOT / "README.md", ROOT / "README.zh.md")]
    missing = sorted({f"{p.relative_to(ROOT)}: exercise {m.group(1)}.{m.group(2)}" for p, text in texts
                      for m in MENTION.finditer(text) if (int(m.group(1)), int(m.group(2))) not in existing})
    assert not missing, "\n".join(missing)


def test_a_clash_is_found(tmp_path):
    import json
    path = tmp_path / "12_x.ipynb"
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "**6.1 One.**\n\n**6.2 Two.**\n"}]
    path.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    problems = numbering_problems(path)
    assert problems and "numbered 6.1, 6.2" in problems[0] and "12.1, 12.2" in problems[0], problems
