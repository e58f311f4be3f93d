"""The library's two languages (posenc_lib.i18n): the switch itself, that every learner-facing text in
exercises/, plots/ and widgets/ is written as tr(english, chinese) with a real Chinese twin that shows
the same values, and that in Chinese the checkers' verdicts are Chinese (each reference solution's
success line, each typical mistake's message)."""
import ast
import importlib
import re
from pathlib import Path

import pytest

import posenc_lib
from posenc_lib import exercises as X
from posenc_lib.exercises import ExerciseError
from posenc_lib.i18n import Text, get_language, language, set_language, tr

PACKAGE = Path(posenc_lib.__file__).parent
# what a learner reads: the checkers, figures and sliders, and the reports notebooks print
LEARNER_FACING = sorted([*(p for folder in ("exercises", "plots", "widgets") for p in (PACKAGE / folder).glob("*.py")),
                         *(PACKAGE / "configs").glob("*.py"), PACKAGE / "attention.py", PACKAGE / "encoding_rules.py",
                         PACKAGE / "experiments" / "own_encoding.py",
                         PACKAGE / "experiments" / "summary.py"])
CJK = re.compile(r"[\u4e00-\u9fff]")
ENGLISH_WORD = re.compile(r"\b[A-Za-z]{3,}\b")
# calls whose text argument a learner reads (the message, the title, the label ...)
TEXT_CALLS = {"ExerciseError", "ok", "print", "set_title", "set_xlabel", "set_ylabel", "suptitle", "text",
              "annotate", "legend", "Label", "HTML", "warn"}
TEXT_KEYWORDS = {"label", "title", "description", "xlabel", "ylabel", "value_text", "what"}


@pytest.fixture
def chinese():
    set_language("zh")
    yield
    set_language("en")


def test_switch_and_default():
    assert get_language() == "en" and tr("position", "位置") == "position"
    set_language("zh")
    try:
        assert get_language() == "zh" and tr("position", "位置") == "位置"
    finally:
        set_language("en")


def test_text_picks_its_language_when_shown():
    label = Text("position {m}", "位置 {m}")
    assert str(label) == "position {m}" and label.format(m=3) == "position 3"
    assert label == "position {m}" and "position" in label and label == Text("position {m}", "位置 {m}")
    set_language("zh")
    try:
        assert f"{label}" == "位置 {m}" and label.format(m=3) == "位置 3"
        assert label == "位置 {m}" and label != "position {m}" and "位置" in label
    finally:
        set_language("en")


def test_with_language_is_scoped_to_its_block_its_thread_and_undone_on_errors():
    import threading

    assert get_language() == "en"
    with language("zh"):
        assert tr("position", "位置") == "位置"
        seen = []
        worker = threading.Thread(target=lambda: seen.append(get_language()))  # a thread starts afresh
        worker.start()
        worker.join()
        assert seen == ["en"]
        with language("en"):
            assert get_language() == "en"
        assert get_language() == "zh"
    assert get_language() == "en"
    with pytest.raises(RuntimeError), language("zh"):
        raise RuntimeError("inside the block")
    assert get_language() == "en"
    set_language("zh")  # the process default: what a block leaves behind is what was in force before it
    try:
        with language("en"):
            assert get_language() == "en"
        assert get_language() == "zh"
    finally:
        set_language("en")


def test_text_hashes_like_the_string_it_equals():
    label = Text("position", "位置")
    assert label == "position" and hash(label) == hash("position") and "position" in {label}
    with language("zh"):
        assert label == "位置" and hash(label) == hash("位置")


@pytest.mark.parametrize("bad, error", [("fr", ValueError), ("ZH", ValueError), (None, TypeError)])
def test_bad_language_is_named(bad, error):
    with pytest.raises(error, match="language"):
        set_language(bad)
    assert get_language() == "en"


def _text(node) -> str | None:
    """The literal text of a str constant or f-string (its fields as {}), else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def _fields(node) -> list[str]:
    """The values an f-string shows; spaced(x) (a label followed by Chinese) shows x."""
    def shown(value):
        if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "spaced" and len(value.args) == 1:
            return value.args[0]
        return value
    return sorted(ast.unparse(shown(v.value)) for v in ast.walk(node) if isinstance(v, ast.FormattedValue))


def _tr_calls(tree):
    """tr(english, chinese) and Text(english, chinese) calls."""
    return [n for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("tr", "Text")]


def _call_name(call: ast.Call) -> str:
    return call.func.id if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")


@pytest.mark.parametrize("path", LEARNER_FACING, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_tr_pair_is_english_and_chinese_with_the_same_values(path):
    problems = []
    for call in _tr_calls(ast.parse(path.read_text(encoding="utf-8"))):
        if len(call.args) != 2 or call.keywords:
            problems.append(f"line {call.lineno}: tr and Text take (english, chinese)")
            continue
        en, zh = call.args
        en_text, zh_text = _text(en), _text(zh)
        if en_text is None or zh_text is None:
            problems.append(f"line {call.lineno}: both texts must be string literals (or f-strings)")
            continue
        if not CJK.search(zh_text) and re.search(r"[A-Za-z]", en_text):  # (punctuation may pair with punctuation)
            problems.append(f"line {call.lineno}: the Chinese text has no Chinese: {zh_text[:60]!r}")
        if _fields(en) != _fields(zh):
            problems.append(f"line {call.lineno}: the two texts show different values: {_fields(en)} vs {_fields(zh)}")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", LEARNER_FACING, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_english_sentence_reaches_a_learner_untranslated(path):
    """A string literal of two or more English words, given to a call that shows text (a checker's
    message, a title, a label, a legend, a slider description), must be the English half of a tr pair."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside_tr = {id(node) for call in _tr_calls(tree) for arg in call.args for node in ast.walk(arg)}
    problems = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        shown = []
        if _call_name(call) in TEXT_CALLS:
            shown += call.args
        shown += [k.value for k in call.keywords if k.arg in TEXT_KEYWORDS]
        for arg in shown:
            for node in ast.walk(arg):
                text = _text(node)
                if text is None or id(node) in inside_tr:
                    continue
                if len(ENGLISH_WORD.findall(text)) >= 2 and not CJK.search(text):
                    problems.append(f"line {node.lineno}: {text[:70]!r}")
    assert not problems, f"{path.name}: English text shown without tr(english, chinese):\n" + "\n".join(problems)


@pytest.mark.parametrize("topic, name", [(t.__name__.rsplit(".", 1)[1], n) for t in X.TOPICS for n in t.SOLUTIONS])
def test_reference_solutions_pass_in_chinese(topic, name, chinese, capsys):
    module = importlib.import_module(f"posenc_lib.exercises.{topic}")
    solution = module.SOLUTIONS[name]
    module.CHECKS[name](solution() if (topic, name) == ("review", "quiz") else solution)
    out = capsys.readouterr().out
    assert out.startswith("✓ ") and CJK.search(out), out


MISTAKE_TOPICS = ["permutation", "sinusoidal", "learned", "relative", "rope", "extension", "production", "multidim"]
MISTAKES = [(f"{topic}-{row[0]}", *row[1:3]) for topic in MISTAKE_TOPICS  # MISTAKES and each NOTEBOOK_NN_MISTAKES
            for table, rows in vars(importlib.import_module(f"test_exercises_{topic}")).items()
            if table == "MISTAKES" or (table.startswith("NOTEBOOK_") and table.endswith("_MISTAKES"))
            for row in rows]


@pytest.mark.parametrize("check, answer", [row[1:] for row in MISTAKES], ids=[row[0] for row in MISTAKES])
def test_typical_mistakes_are_named_in_chinese(check, answer, chinese):
    with pytest.raises(ExerciseError) as info:
        check(answer)
    assert CJK.search(str(info.value)), str(info.value)


def test_attempt_speaks_chinese(chinese, capsys):
    sinusoidal = importlib.import_module("posenc_lib.exercises.sinusoidal")
    assert X.attempt(sinusoidal.check_wavelength, lambda omega: 1 / omega) is False
    assert CJK.search(capsys.readouterr().out)


def test_own_encoding_problems_speak_chinese_and_keep_their_english_rule(chinese):
    """07's checker of your own encoding: the problem text in Chinese, .rule and .where as in English
    (what the notebook asserts on, the same in both editions)."""
    import torch
    from torch import nn

    from posenc_lib.attention import PositionalEncoding
    from posenc_lib.encoding_rules import RULE_DEVICE, RULE_FUTURE, rule_report

    class NormalisedIndex(PositionalEncoding):
        def __init__(self, dim):
            super().__init__()
            self.w = nn.Parameter(torch.zeros(dim))

        @classmethod
        def from_config(cls, config):
            return cls(config.d_model)

        def add_to_input(self, x, positions):
            return x + (torch.arange(x.shape[1]) / x.shape[1])[:, None] * self.w  # the length, and no device=

    problems = rule_report(NormalisedIndex)["problems"]
    assert [(p.rule, p.where) for p in problems] == [(RULE_FUTURE, "add_to_input"), (RULE_DEVICE, "add_to_input")]
    assert all(CJK.search(p) and p.startswith("[") for p in problems), problems


def test_permutation_figures_show_the_characters_in_chinese_and_pinyin_in_english():
    """Notebook 01 says so: the English figures label 我 爱 北京 by pinyin, the Chinese ones by the characters."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from posenc_lib.plots.permutation import PINYIN, TOKENS, render_permutation

    for lang, labels in (("en", [PINYIN[t] for t in TOKENS]), ("zh", list(TOKENS))):
        set_language(lang)
        try:
            fig, axes = plt.subplots(1, 3)
            render_permutation(axes)
            shown = [t.get_text() for t in axes[0].get_xticklabels()]
            plt.close(fig)
        finally:
            set_language("en")
        assert shown == labels, (lang, shown)


def test_the_plots_one_matplotlib_setting_is_a_fallback_font_that_can_be_removed():
    import matplotlib

    from posenc_lib import plots
    from posenc_lib.plots import _style
    if _style.CJK_FONT is None:
        pytest.skip("no CJK font on this machine")
    families = list(matplotlib.rcParams["font.family"])
    assert families[-1] == _style.CJK_FONT and families[0] != _style.CJK_FONT  # after the user's own
    try:
        plots.remove_cjk_font()
        assert matplotlib.rcParams["font.family"] == families[:-1]
    finally:
        matplotlib.rcParams["font.family"] = families


def test_wrap_breaks_between_words_and_chinese_characters_only():
    from posenc_lib.i18n import display_width, wrap
    text = "your rotation turns by +90 degree / s. " * 6 + "posenc_lib.exercises.rope.SOLUTIONS['rope']"
    lines = wrap(text, 40).split("\n")
    assert len(lines) > 1 and all(display_width(line) <= 40 or " " not in line for line in lines)
    assert " ".join(lines).split() == text.split()  # every break at a space: no word cut in two
    zh = "还没有作答：把 `raise NotImplementedError` 换成你的代码，再运行一次这个单元格。" * 2
    zh_lines = wrap(zh, 30).split("\n")
    assert all(display_width(line) <= 30 for line in zh_lines)
    assert "".join(zh_lines).replace(" ", "") == zh.replace(" ", "")
    assert not any(line.startswith(("，", "。", "）")) for line in zh_lines)  # closing marks stay with their text
    assert "NotImplementedError`" in "\n".join(zh_lines).split()  # the code span's word is never cut
    assert wrap("a\n\nb") == "a\n\nb" and wrap("short") == "short"
