"""The notebooks are regression tests: `make test` runs nbval in strict mode (every stored output of every
code cell compared, after tools/nbval_sanitize.cfg), in both editions. These tests show that the strict
check fails when a stored number differs from what the cell prints, that the sanitizer forgives only
what it says (a figure's pixel size, an address), and that the cells exempt from the comparison are few
and say why."""
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SANITIZER = ROOT / "tools" / "nbval_sanitize.cfg"
NOTEBOOKS = sorted(ROOT.glob("notebooks/[0-9][0-9]_*.ipynb")) + sorted(ROOT.glob("notebooks/zh/[0-9][0-9]_*.ipynb"))


def _notebook(path: Path, cells) -> Path:
    """A notebook of (source, stored stdout) code cells."""
    nb = {"cells": [{"cell_type": "code", "execution_count": i + 1, "id": f"c{i}", "metadata": {}, "source": source,
                     "outputs": [{"output_type": "stream", "name": "stdout", "text": stored}] if stored else []}
                    for i, (source, stored) in enumerate(cells)],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb, indent=1), encoding="utf-8")
    return path


def _nbval(*paths: Path) -> dict:
    """The notebooks under `make test`'s nbval options, in one pytest of their own (one start of pytest
    and nbval for all of them; nbval still runs each notebook in a kernel of its own): for each notebook's
    name, whether all its cells passed and the text of its failures."""
    folder = paths[0].parent
    report = folder / "report.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", *map(str, paths), "--nbval", "--nbval-current-env",
                           "--nbval-sanitize-with", str(SANITIZER), "-p", "no:cacheprovider", "-q",
                           "-p", "no:xdist", "--rootdir", str(folder), "--junitxml", str(report)],
                          cwd=folder, capture_output=True, text=True, timeout=300)
    assert report.exists(), done.stdout + done.stderr
    results = {path.name: {"cells": 0, "passed": True, "failures": ""} for path in paths}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.get("classname")  # the notebook's file name, as nbval names its cells' items
        results[name]["cells"] += 1
        for problem in case:
            if problem.tag in ("failure", "error"):
                results[name]["passed"] = False
                results[name]["failures"] += (problem.get("message") or "") + (problem.text or "")
    for name, result in results.items():  # every notebook ran (a notebook nbval never reached passes nothing)
        assert result["cells"] > 0, f"{name} was not run: " + done.stdout + done.stderr
    return results


@pytest.fixture(scope="module")
def strict_runs(tmp_path_factory) -> dict:
    """The four small notebooks of the two tests below, run by one nbval session."""
    folder = tmp_path_factory.mktemp("strict")
    code = "print(f'{1 / 3:.3f}')\n"
    return _nbval(_notebook(folder / "right.ipynb", [(code, "0.333\n")]),
                  _notebook(folder / "wrong.ipynb", [(code, "0.334\n")]),
                  _notebook(folder / "sizes.ipynb", [(
                      "print('<Figure size 640x480 with 2 Axes>'); print(f'<object at {hex(id(object()))}>')\n",
                      "<Figure size 800x288 with 2 Axes>\n<object at 0x7f00deadbeef>\n")]),
                  _notebook(folder / "axes.ipynb", [("print('<Figure size 640x480 with 2 Axes>')\n",
                                                     "<Figure size 640x480 with 3 Axes>\n")]))


def test_strict_nbval_fails_when_a_printed_number_differs_from_the_stored_one(strict_runs):
    right, wrong = strict_runs["right.ipynb"], strict_runs["wrong.ipynb"]
    assert right["passed"], right["failures"]
    assert not wrong["passed"] and "0.334" in wrong["failures"], wrong  # an unmarked cell is compared


def test_the_sanitizer_forgives_a_figure_size_and_an_address_but_not_a_number(strict_runs):
    forgiven, axes = strict_runs["sizes.ipynb"], strict_runs["axes.ipynb"]
    assert forgiven["passed"], forgiven["failures"]
    assert not axes["passed"], "a different number of axes is a different figure"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[str(p.relative_to(ROOT / "notebooks")) for p in NOTEBOOKS])
def test_few_cells_are_exempt_and_each_says_why(path):
    """At most 10% of a notebook's code cells are exempt from the comparison. An exempt cell carries nbval's
    cell tag `nbval-ignore-output` (what nbval reads) and the comment `# NBVAL_IGNORE_OUTPUT: <reason>`
    (what a reader sees; nbval takes a comment marker only when it is alone on its line, so the comment
    with its reason does not act by itself), and neither without the other."""
    code = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]
    ignored = []
    for index, cell in enumerate(code):
        lines = [line.strip() for line in "".join(cell["source"]).splitlines()]
        tagged = "nbval-ignore-output" in cell.get("metadata", {}).get("tags", [])
        marked = [line for line in lines if "NBVAL_IGNORE_OUTPUT" in line]
        assert tagged == bool(marked), f"code cell {index}: the tag nbval-ignore-output and its comment go together"
        for line in marked:
            reason = re.sub(r"^#\s*NBVAL_IGNORE_OUTPUT\s*[:：]?", "", line).strip()
            assert len(reason) >= 10, f"code cell {index}: `# NBVAL_IGNORE_OUTPUT: <why>`, the reason on its line"
        ignored += [index] if tagged else []
        assert not any("NBVAL_SKIP" in line for line in lines), f"code cell {index}: a skipped cell is not run at all"
        assert not {"nbval-skip", "nbval-raises-exception"} & set(cell.get("metadata", {}).get("tags", []))
    assert len(ignored) <= 0.10 * len(code), f"{len(ignored)} of {len(code)} code cells ignored: {ignored}"


def test_make_test_runs_the_notebooks_strictly_on_every_core():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "--nbval-lax" not in makefile
    assert re.search(r"^NBVAL\s*:=\s*--nbval --nbval-current-env --nbval-sanitize-with tools/nbval_sanitize.cfg",
                     makefile, re.M)
    assert re.search(r"^XDIST\s*:=\s*-n \$\(WORKERS\) --dist loadscope", makefile, re.M)
    assert re.search(r"^test: .*\n\t.*pytest tests notebooks \$\(NBVAL\) \$\(XDIST\)", makefile, re.M)
