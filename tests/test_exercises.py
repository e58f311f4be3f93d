"""What every topic's exercise checkers promise: each check has a reference solution that passes with
the course's one success mark, an unsolved exercise (NotImplementedError) reaches `attempt`, and
`attempt`'s hint names a solution that exists. The mistakes each check must name are in
test_exercises_<topic>.py."""
import importlib
import re

import pytest

from posenc_lib import exercises as X

CASES = [(topic.__name__.rsplit(".", 1)[1], name) for topic in X.TOPICS for name in topic.SOLUTIONS]
FUNCTION_CASES = [case for case in CASES if case != ("review", "quiz")]  # the quiz is answered with a dict


def _topic(name):
    return importlib.import_module(f"posenc_lib.exercises.{name}")


@pytest.mark.parametrize("topic", X.TOPICS, ids=lambda t: t.__name__.rsplit(".", 1)[1])
def test_every_checker_has_a_solution(topic):
    public_checks = {n.removeprefix("check_") for n in topic.__all__ if n.startswith("check_")}
    assert topic.SOLUTIONS and set(topic.SOLUTIONS) == set(topic.CHECKS) == public_checks


@pytest.mark.parametrize("topic, name", CASES)
def test_reference_solution_passes_its_check(topic, name, capsys):
    module = _topic(topic)
    solution = module.SOLUTIONS[name]
    module.CHECKS[name](solution() if (topic, name) == ("review", "quiz") else solution)
    assert capsys.readouterr().out.startswith("✓ ")


def _unsolved(*args, **kwargs):
    raise NotImplementedError


@pytest.mark.parametrize("topic, name", FUNCTION_CASES)
def test_unsolved_exercise_passes_through_the_check(topic, name):
    with pytest.raises(NotImplementedError):
        _topic(topic).CHECKS[name](_unsolved)


@pytest.mark.parametrize("topic, name", FUNCTION_CASES)
def test_attempt_names_a_reference_solution_that_exists(topic, name, capsys):
    module = _topic(topic)
    assert X.attempt(module.CHECKS[name], _unsolved) is False
    out = capsys.readouterr().out
    assert out.startswith("Not attempted yet")
    where = re.search(r"A\s+reference\s+solution:\s+([\w.]+)\.SOLUTIONS\['(\w+)'\]", out)
    assert where, out
    assert importlib.import_module(where.group(1)).SOLUTIONS[where.group(2)] is module.SOLUTIONS[name]
    assert X.attempt(module.CHECKS[name], module.SOLUTIONS[name]) is True
    assert capsys.readouterr().out.startswith("✓ ")


def test_attempt_prints_what_is_wrong_and_names_a_crash_with_the_learners_line(capsys):
    sinusoidal = _topic("sinusoidal")
    assert X.attempt(sinusoidal.check_wavelength, lambda omega: 1 / omega) is False
    assert capsys.readouterr().out.startswith("Not yet right: ")
    assert X.attempt(sinusoidal.check_wavelength, lambda omega: 1 / 0) is False  # a crash is named, not a traceback
    out = capsys.readouterr().out
    assert "wavelength(0.1) raised ZeroDivisionError: division by zero (your line" in out and "1 / 0" in out


def test_a_crash_inside_a_guarded_check_is_named():
    with pytest.raises(X.ExerciseError, match="AttributeError"):
        _topic("rope").check_rotate_half(lambda x: x.nonexistent())


# The "Common mistakes" bullets each notebook lists and its checkers name (the tables NOTEBOOK_NN_MISTAKES in
# test_exercises_<topic>.py; 06's own test is in test_exercises_rope.py): the list and the checkers stay together.
NAMED_MISTAKES = {
    "00_welcome": ["Positions in a float dtype"],
    "01_permutation": ["Self-attention is permutation-invariant", "Comparing outputs position by position"],
    "02_sinusoidal": ["Layouts", "tensor2tensor", "Wrong exponent", "multiplying where the formula divides",
                      "The seed's", "An odd `d_model`"],
    "04_learned": ["index out of range in self", "Reading raw dot products as similarity",
                   "Forgetting to mask the first `lag` targets", "Reading the similarity matrix as attention"],
    "05_relative_bias": ["Flipping the sign of the relative position", "Using `bidirectional=True` in a decoder",
                         "ALiBi slopes $2^{-8h/n}$ for weights trained with the authors' code"],
    "07_extrapolation": ["Averaging the loss over the whole long window", "Comparing lengths on different characters",
                         "Reading one seed"],
    "08_context_extension": ["PI and NTK treat the fast pairs differently"],
    "10_rope_in_production": ["Rotating all the dims of a partial-rotary model", "One base for every layer of Gemma 3",
                              "Reading `no_rope_layers` as", "YaRN's factor once, or twice"],
    "11_rope_2d_3d": ["Flattening patches and using 1-D positions", "Rows and columns swapped",
                      "Counting M-RoPE ids by tokens", "Reading `mrope_section` as dims"],
    "13_serving": ["The wrong sign of the shift", "W keys vs W − 1", "The ring slot as the position",
                   "Numbering tree nodes in flattened order", "A tree mask that lets siblings see each other",
                   "Packed RoBERTa documents without restarting positions"],
}


@pytest.mark.parametrize("notebook", NAMED_MISTAKES)
def test_the_common_mistakes_the_checkers_name_are_listed_in_their_notebook(notebook):
    import json
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "notebooks" / f"{notebook}.ipynb"
    cells = ["".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
             if c["cell_type"] == "markdown"]
    text = "\n".join(cells)
    start = re.search(r"^## \d+\. Common mistakes$", text, re.M).end()
    end = re.compile(r"^## ", re.M).search(text, start)
    section = text[start:end.start() if end else None]
    missing = [bullet for bullet in NAMED_MISTAKES[notebook] if bullet not in section]
    assert not missing, f"{notebook}'s common mistakes no longer list {missing}"
