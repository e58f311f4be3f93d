"""The one test every test_exercises_<topic>.py runs on its table of typical mistakes:

    MISTAKES = [(id, check, wrong answer, [fragments its message must contain]), ...]

    @each_mistake(MISTAKES)
    def test_mistake_is_named(check, answer, fragments):
        assert_named(check, answer, fragments)
"""
import pytest

from posenc_lib.exercises import ExerciseError


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
