"""The Chinese edition (notebooks/zh/) is the English one translated, and nothing else: every numbered
English notebook has its twin under the same name, the twins' code does the same thing
(tests/notebook_sync.py says how that is compared), each edition sets its own language, and the
comparison does fail, naming the cell, when a code cell changes in one edition only."""
import copy
import json
import re

import pytest
from notebook_sync import CHINESE_DIR, differences, pairs, read_cells, source

PAIRS = pairs()
SET_LANGUAGE = re.compile(r"""^posenc_lib\.set_language\((["'])(\w+)\1\)""", re.M)


def test_every_english_notebook_has_a_chinese_twin():
    assert PAIRS, "no English notebooks found"
    missing = [zh.name for _, zh in PAIRS if not zh.exists()]
    assert not missing, f"notebooks/zh/ lacks {missing}"
    strays = sorted({p.name for p in CHINESE_DIR.glob("*.ipynb")} - {zh.name for _, zh in PAIRS})
    assert not strays, f"notebooks/zh/ has notebooks with no English source: {strays}"


@pytest.mark.parametrize("english, chinese", PAIRS, ids=[en.name for en, _ in PAIRS])
def test_chinese_twin_is_in_sync(english, chinese):
    if not chinese.exists():
        pytest.fail(f"{chinese.name} is missing")
    found = differences(english, chinese)
    assert not found, "\n".join(found) + ("\n(how to carry a change over: README.md, "
                                          "'Changing a notebook: both editions')")


@pytest.mark.parametrize("english, chinese", PAIRS, ids=[en.name for en, _ in PAIRS])
def test_each_edition_sets_its_language_first(english, chinese):
    """The language is a string literal, which the sync comparison sets aside: checked here."""
    for path, language in ((english, "en"), (chinese, "zh")):
        if not path.exists():
            pytest.fail(f"{path.name} is missing")
        first_code = next(source(c) for c in read_cells(path) if c["cell_type"] == "code")
        found = [m.group(2) for m in SET_LANGUAGE.finditer(first_code)]
        assert found == [language], f"{path}: the first code cell should call posenc_lib.set_language({language!r})"


# ------------------------------------------------------------------ the comparison can fail

def _pair(tmp_path, english_cells, chinese_cells):
    def write(name, cells):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5},
                                   ensure_ascii=False), encoding="utf-8")
        return path
    return write("en/01_x.ipynb", english_cells), write("zh/01_x.ipynb", chinese_cells)


def _md(text, tags=()):
    return {"cell_type": "markdown", "metadata": {"tags": list(tags)} if tags else {}, "source": text}


def _code(text):
    return {"cell_type": "code", "metadata": {}, "source": text, "outputs": [], "execution_count": None}


ENGLISH = [
    _md("# 01 · Attention cannot see order\n\nA few words of English prose here, to be translated.\n"),
    _code('import posenc_lib\nposenc_lib.set_language("en")  # the language\n'),
    _code('# NBVAL_CHECK_OUTPUT\nscores = q @ k.T / 8  # the scores\n'
          'print(f"max score {scores.max():.3f}", "and some words")\n'),
    _md("## 2. A section\n\nMore English prose that a reader reads.\n### 2.1 Sub\n"),
    _code('plot(layout="half", title="Where the pairs are")\n'),
]
CHINESE = [
    _md("# 01 · 注意力看不见顺序\n\n这里是几句中文。\n"),
    _code('import posenc_lib\nposenc_lib.set_language("zh")  # 语言\n'),
    _code('# NBVAL_CHECK_OUTPUT\nscores = q @ k.T / 8  # 打分\n'
          'print(f"最大分数 {scores.max():.3f}",\n      "以及一些字")\n'),
    _md("## 2. 一节\n\n读者要读的更多中文。\n### 2.1 小节\n"),
    _code('plot(layout="half",\n     title="各对维度的位置")\n'),
]


def test_a_faithful_translation_passes(tmp_path):
    assert differences(*_pair(tmp_path, ENGLISH, CHINESE)) == []


def test_joining_or_splitting_string_literals_is_allowed(tmp_path):
    chinese = copy.deepcopy(CHINESE)
    chinese[4]["source"] = 'plot(layout="half", title="各对维度" "的位置")\n'
    assert differences(*_pair(tmp_path, ENGLISH, chinese)) == []


@pytest.mark.parametrize("edition", ["en", "zh"])
@pytest.mark.parametrize("changed, wanted", [
    ("scores = q @ k.T / 8", "scores = q @ k.T / 4"),               # a number
    ("scores.max():.3f", "scores.min():.3f"),                         # an f-string's expression
    ("scores.max():.3f", "scores.max():.2f"),                         # a format spec
    ("scores = q @ k.T / 8", "scores = q @ k.T / 8\nscores = -scores"),  # a line added
])
def test_a_code_change_in_one_edition_only_fails_naming_the_cell(tmp_path, edition, changed, wanted):
    english, chinese = copy.deepcopy(ENGLISH), copy.deepcopy(CHINESE)
    cells = english if edition == "en" else chinese
    assert changed in cells[2]["source"]
    cells[2]["source"] = cells[2]["source"].replace(changed, wanted)
    found = differences(*_pair(tmp_path, english, chinese))
    assert len(found) == 1 and "01_x.ipynb cell 2 (code" in found[0] and "the code differs" in found[0], found


def test_a_changed_string_that_the_code_uses_is_not_its_business_but_nbval_s(tmp_path):
    """layout="half" -> "interleaved" is string text, which the comparison sets aside (translations
    change string text); running the notebook under nbval is what catches a broken value."""
    chinese = copy.deepcopy(CHINESE)
    chinese[4]["source"] = chinese[4]["source"].replace('"half"', '"interleaved"')
    assert differences(*_pair(tmp_path, ENGLISH, chinese)) == []


def test_a_lost_nbval_marker_fails(tmp_path):
    chinese = copy.deepcopy(CHINESE)
    chinese[2]["source"] = chinese[2]["source"].replace("# NBVAL_CHECK_OUTPUT\n", "")
    found = differences(*_pair(tmp_path, ENGLISH, chinese))
    assert len(found) == 1 and "cell 2" in found[0] and "NBVAL markers ['NBVAL_CHECK_OUTPUT']" in found[0], found


def test_a_missing_or_moved_cell_fails(tmp_path):
    assert "the cells differ" in differences(*_pair(tmp_path, ENGLISH, CHINESE[:-1]))[0]
    swapped = [CHINESE[0], CHINESE[1], CHINESE[3], CHINESE[2], CHINESE[4]]
    assert "the cells differ" in differences(*_pair(tmp_path, ENGLISH, swapped))[0]


def test_a_heading_of_another_level_or_an_extra_heading_fails(tmp_path):
    for text in ("## 2. 一节\n\n更多中文。\n#### 2.1 小节\n", "## 2. 一节\n\n## 另一节\n更多中文。\n### 2.1 小节\n"):
        chinese = copy.deepcopy(CHINESE)
        chinese[3]["source"] = text
        found = differences(*_pair(tmp_path, ENGLISH, chinese))
        assert len(found) == 1 and "cell 3 (markdown" in found[0] and "headings" in found[0], found


def test_an_untranslated_cell_or_other_tags_fail(tmp_path):
    chinese = copy.deepcopy(CHINESE)
    chinese[3] = copy.deepcopy(ENGLISH[3])
    assert "not translated" in differences(*_pair(tmp_path, ENGLISH, chinese))[0]
    chinese = copy.deepcopy(CHINESE)
    chinese[0] = _md(CHINESE[0]["source"], tags=["hide-input"])
    assert "cell tags" in differences(*_pair(tmp_path, ENGLISH, chinese))[0]


def test_the_real_notebooks_fail_when_one_edition_changes(tmp_path):
    """On a real pair: change one number in one English code cell; the comparison names that cell."""
    english, chinese = next(((en, zh) for en, zh in PAIRS if zh.exists()), (None, None))
    if english is None:
        pytest.fail("no Chinese notebook to compare")
    cells = read_cells(english)
    index = next(i for i, c in enumerate(cells) if c["cell_type"] == "code" and re.search(r"\b\d+\b", source(c)))
    cells[index]["source"] = re.sub(r"\b(\d+)\b", lambda m: str(int(m.group(1)) + 1), source(cells[index]), count=1)
    changed = tmp_path / english.name
    changed.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    found = differences(changed, chinese)
    assert any(f"cell {index} (code" in problem for problem in found), found
