"""Issue 37's measure of a notebook: study time from its words and exercises (tools/study_time.py), the core
path of every notebook at most an hour in both editions, and the READMEs' table the computed one."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("study_time", ROOT / "tools" / "study_time.py")
study_time = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(study_time)

NOTEBOOKS = study_time.notebooks("en") + study_time.notebooks("zh")


def _nb(*cells):
    return {"cells": [{"cell_type": "markdown", "source": c} for c in cells]}


def _minutes(tmp_path, nb):
    path = tmp_path / "nb.ipynb"
    path.write_text(__import__("json").dumps(nb), encoding="utf-8")
    return study_time.study_time(path)


def test_the_formula_on_a_made_up_notebook(tmp_path):
    """400 core words + one exercise = 2 + 5 minutes; an optional section ends at the next heading of its
    level, and an appendix runs to the end."""
    core = " ".join(["word"] * 397)  # + "# A", "## B", "## D" headings' words below: 400 in all
    nb = _nb("# A\n" + core, "## (Optional) C\n" + "x " * 1000, "### C.1\n" + "y " * 1000,
             "## B\n**1.1 An exercise.** a", "## D\n", "## Appendix: notes\n" + "z " * 2000, "## E\n" + "w " * 10)
    t = _minutes(tmp_path, nb)
    assert t["exercises"] == (1, 1)
    core_words = 2 + 397 + 2 + 5 + 2  # headings' tokens count as words too
    assert t["core"] == -(-(core_words / 200 + 5) // 1)
    assert t["total"] > 20 > t["core"]


def test_chinese_counts_two_characters_a_word_and_its_markers(tmp_path):
    nb = _nb("# 标题\n" + "字" * 400, "## 附录\n" + "字" * 4000)
    t = _minutes(tmp_path, nb)
    assert t["core"] == 2 and t["total"] == 12  # (2 + 400) / 2 / 200 -> 2 (ceil 1.005); 4402/2/200 -> 12
    assert _minutes(tmp_path, _nb("## （选学）深入\n" + "字" * 4000 + "\n## 接着\n"))["core"] == 1


def test_an_optional_exercise_is_off_the_core_path(tmp_path):
    t = _minutes(tmp_path, _nb("## Exercises\n**9.1 One.** a\n\n**9.2 (Optional) Two.** b\n\n**9.3（选做）三。**"))
    assert t["exercises"] == (1, 3)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_every_notebooks_core_path_is_at_most_an_hour(path):
    t = study_time.study_time(path)
    assert t["core"] <= study_time.CORE_LIMIT_MINUTES, (
        f"{path.name}: core path {t['core']} min (total {t['total']}): mark deeper sections '(Optional)' "
        f"(zh '（选学）') or move a review to an appendix")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_readme_states_the_computed_study_times(lang):
    stored = study_time.stored_table(lang)
    assert stored is not None, f"{study_time.readme(lang).name} lacks the study-time table's markers"
    assert stored == study_time.table(lang), "run `python tools/study_time.py --write` and commit the READMEs"


def test_both_editions_count_the_same_exercises():
    for en, zh in zip(study_time.notebooks("en"), study_time.notebooks("zh"), strict=True):
        assert study_time.study_time(en)["exercises"] == study_time.study_time(zh)["exercises"], en.name


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_00_states_the_tracks_computed_times(lang):
    """00's "three ways through the course" table gives the same minutes as the READMEs' computed table (the
    full course's core and total, each track's core), and its hours are those minutes to the nearest 5."""
    import json
    import re

    computed = {line.split("|")[1].strip(): [int(x) for x in line.split("|")[2:4]]
                for line in study_time.table(lang).splitlines()[2:]}
    labels = study_time.LABELS[lang]
    full = computed[f"**{labels['full']}**"]
    interview, engineer = computed[labels["interview"]][0], computed[labels["engineer"]][0]
    path = study_time.notebooks(lang)[0]
    cell = next("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                if "".join(c["source"]).startswith("## 7."))
    unit, hours = ("min", r"(\d+) h (\d+) min") if lang == "en" else ("分钟", r"(\d+) 小时 (\d+) 分钟")
    rows = [line for line in cell.splitlines() if line.startswith("|") and re.search(hours, line)]
    # each row: the minutes of "X h Y min" first, then the minutes in brackets
    minutes = [[int(m) for m in re.findall(rf"(?<![\d.])(\d+) {unit}(?!\w)", line.split("|")[3])] for line in rows]
    assert [m[1:] for m in minutes] == [[full[0], full[1]], [interview], [engineer]], (minutes, full, interview,
                                                                                      engineer)
    for line, stated in zip(rows, (full[0], interview, engineer)):
        h, m = map(int, re.search(hours, line).groups())
        assert h * 60 + m == 5 * round(stated / 5), line
