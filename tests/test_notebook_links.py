"""Every link in the notebooks (both editions) and the READMEs resolves: a relative link names a file that
exists, and a link with an anchor (`09_review.ipynb#The-interview-sheet`, `#速答卡`) names a heading of that
notebook. Links point at headings, not cell numbers, so they survive cells moving; this test is what tells
when a heading they point at was renamed.

A heading's anchor is the one JupyterLab gives it (site/anchors.py, which the web edition gives its
headings too).
Anchors into a .md file are GitHub's (lower case, punctuation dropped, spaces to "-").
"""
import importlib.util
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from notebook_sync import ROOT, read_cells, shown_path, source

_spec = importlib.util.spec_from_file_location("site_anchors", ROOT / "site" / "anchors.py")
_anchors = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_anchors)
HEADING, jupyterlab_anchor = _anchors.HEADING, _anchors.jupyterlab_anchor

LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)\)")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
FENCED = re.compile(r"```.*?```", re.S)


def github_anchor(heading: str) -> str:
    text = re.sub(r"`([^`]*)`", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- \u4e00-\u9fff]", "", text).replace(" ", "-")


def headings(path: Path) -> list[str]:
    if path.suffix == ".ipynb":
        texts = [FENCED.sub("", source(c)) for c in read_cells(path) if c["cell_type"] == "markdown"]
    else:
        texts = [FENCED.sub("", path.read_text(encoding="utf-8"))]
    return [m.group(2) for text in texts for m in HEADING.finditer(text)]


def anchors(path: Path) -> set[str]:
    slug = jupyterlab_anchor if path.suffix == ".ipynb" else github_anchor
    return {slug(h) for h in headings(path)}


def markdown_of(path: Path) -> list[tuple[str, str]]:
    """(where, markdown) for a notebook's markdown cells and its displayed markdown outputs, or a .md file."""
    if path.suffix != ".ipynb":
        return [("text", path.read_text(encoding="utf-8"))]
    pieces = []
    for index, cell in enumerate(read_cells(path)):
        if cell["cell_type"] == "markdown":
            pieces.append((f"cell {index}", source(cell)))
        for out in cell.get("outputs", []):
            shown = out.get("data", {}).get("text/markdown")
            if shown is not None:
                pieces.append((f"cell {index} (output)", "".join(shown) if isinstance(shown, list) else shown))
    return pieces


def broken_links(path: Path) -> list[str]:
    found = []
    for where, text in markdown_of(path):
        for match in LINK.finditer(CODE.sub("", text)):
            target = match.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target):                 # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / unquote(file_part)).resolve() if file_part else path
            if not linked.exists():
                found.append(f"{shown_path(path)} {where}: {target} (no such file)")
            elif anchor and linked.suffix in (".ipynb", ".md") and unquote(anchor) not in anchors(linked):
                found.append(f"{shown_path(path)} {where}: {target} (no heading "
                             f"#{unquote(anchor)} in {linked.name})")
    return found


TEXTS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")) + [
    ROOT / "README.md", ROOT / "README.zh.md"]


@pytest.mark.parametrize("path", TEXTS, ids=[str(p.relative_to(ROOT)) for p in TEXTS])
def test_every_link_resolves(path):
    found = broken_links(path)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("heading, anchor", [
    ("1. Absolute vs relative position encodings (Q1)", "1.-Absolute-vs-relative-position-encodings-(Q1)"),
    ("2. Padding and `position_ids`", "2.-Padding-and-position_ids"),
    ("6. The dot product cannot tell $+k$ from $-k$", "6.-The-dot-product-cannot-tell-$+k$-from-$-k$"),
    ("**Bold** and *emphasis* in a heading", "Bold-and-emphasis-in-a-heading"),
    ("速答卡", "速答卡"),
])
def test_anchors_are_jupyterlabs(heading, anchor):
    assert jupyterlab_anchor(heading) == anchor


def test_a_broken_link_is_found(tmp_path):
    import json
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "## 1. Here\n\n[ok](#1.-Here), [bad](#2.-Gone), "
              "[missing](nowhere.ipynb), [web](https://example.org/#x)"}]
    path = tmp_path / "99_x.ipynb"
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    found = broken_links(path)
    assert len(found) == 2 and "#2.-Gone" in found[0] and "nowhere.ipynb" in found[1], found
