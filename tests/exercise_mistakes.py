"""The one test every test_exercises_<topic>.py runs on its table of typical mistakes:

    MISTAKES = [(id, check, wrong answer, [fragments its message must contain]), ...]

    @each_mistake(MISTAKES)
    def test_mistake_is_named(check, answer, fragments):
        assert_named(check, answer, fragments)
"""

import pytest

from posenc_lib.exercises import ExerciseError
from posenc_lib.exercises._common import not_yet_right
from posenc_lib.i18n import display_width

MESSAGE_WIDTH = 100  # what attempt() prints is broken between words into lines of at most this many columns


def each_mistake(table):
    """Parametrise a test over a MISTAKES table, one test id per mistake."""
    return pytest.mark.parametrize("check, answer, fragments", [row[1:] for row in table],
                                   ids=[row[0] for row in table])


def assert_named(check, answer, fragments) -> None:
    """check(answer) must raise ExerciseError whose message contains every fragment."""
    with pytest.raises(ExerciseError) as info:
        check(answer)
    missing = [f for f in fragments if f not in str(info.value)]
    assert not missing, f"{missing} not in {str(info.value)!r}"
    assert_wrapped_between_words(info.value)


def assert_passes_with_float32_note(check, float32_answer, float64_answer, capsys) -> None:
    """A right answer with float32 angles passes with the note on what float32 costs at position 100,000 (the
    task asks for float64); the float64 answer passes without a note."""
    check(float32_answer)
    out = capsys.readouterr().out
    assert out.startswith("✓ ") and "float32" in out and "100,000" in out and "float64" in out
    check(float64_answer)
    out = capsys.readouterr().out
    assert out.startswith("✓ ") and "Note" not in out


def assert_wrapped_between_words(error) -> None:
    """What attempt() prints for it: lines of at most MESSAGE_WIDTH columns (JupyterLab would break a longer
    one inside a word), each break between two words or two Chinese characters, nothing lost or added."""
    printed = not_yet_right(error)
    too_long = [line for line in printed.split("\n") if display_width(line) > MESSAGE_WIDTH and " " in line]
    assert not too_long, too_long
    assert "".join(str(error).split()) in "".join(printed.split())
