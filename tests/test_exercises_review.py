"""The quiz of notebook 09 (posenc_lib.exercises.review): the right answers pass and come from the cached
results where the question is about a measurement; every wrong or missing answer is explained."""
import pytest

from posenc_lib import experiments as E
from posenc_lib.exercises import ExerciseError
from posenc_lib.exercises import review as ex


@pytest.fixture(scope="module")
def results():
    return E.load_results("extrapolation")


def test_measured_answer_is_the_flattest_encoding_in_the_data(results):
    answers = ex.quiz_answers(results)
    assert set(answers) == set(ex.QUIZ)
    rises = {}  # recomputed here from the runs, not from the summary the quiz reads
    for enc in ex.QUIZ["measured_flattest"]["options"].values():
        runs = [r["loss"] for r in results["runs"] if r["encoding"] == enc]
        rises[enc] = sum(r["8"] for r in runs) / len(runs) - sum(r["1"] for r in runs) / len(runs)
    assert ex.QUIZ["measured_flattest"]["options"][answers["measured_flattest"]] == min(rises, key=rises.get)


def test_every_wrong_answer_is_explained(results):
    answers = ex.quiz_answers(results)
    other = next(k for k in ex.QUIZ["measured_flattest"]["options"] if k != answers["measured_flattest"])
    with pytest.raises(ExerciseError) as err:
        ex.check_quiz(dict(answers, equivariance="a", pi_vs_ntk="c", measured_flattest=other), results)
    text = str(err.value)
    assert f"{len(ex.QUIZ) - 3}/{len(ex.QUIZ)} right" in text
    assert "invariance" in text and "NTK-aware" in text and "rose by" in text


@pytest.mark.parametrize("answers, match", [
    ({}, "not answered"), ({"colour": "a"}, "unknown question"), ("b", "should be a dict"),
], ids=["empty", "unknown id", "not a dict"])
def test_malformed_answers_are_explained(answers, match, results):
    with pytest.raises(ExerciseError, match=match):
        ex.check_quiz(answers, results)


def test_an_answer_outside_the_options_is_named(results):
    with pytest.raises(ExerciseError, match="not one of the options"):
        ex.check_quiz(dict(ex.quiz_answers(results), alibi_sign="z"), results)


def test_every_wrong_option_has_a_reason():
    for qid, item in ex.QUIZ.items():
        if item["answer"] is not None:  # the measured question explains with the numbers instead
            assert set(item["why"]) == set(item["options"]) - {item["answer"]}, qid
