"""Checkers of notebook 14, section 1 (posenc_lib.exercises.generators): each typical wrong answer gets the message
that names its mistake (the entry transposed, the sign, the slope ignored, a symmetric N that is not nilpotent, a
multiplicative decay where ALiBi adds, N not lifted; a decay, xPos or ALiBi's N taken for relative under the same
action, NoPE or a dense skew matrix left out), and right answers in another valid form pass."""
import pytest
import torch
from exercise_mistakes import assert_named, each_mistake

from posenc_lib.exercises import generators as ex

S = ex.SOLUTIONS


def _entry(row, col, value=None):
    """N with one entry: (row, col) given as offsets from dim (0 -> dim, 1 -> dim + 1)."""
    def fn(dim, slope):
        N = torch.zeros(dim + 2, dim + 2, dtype=torch.float64)
        N[dim + row, dim + col] = slope if value is None else value
        return N
    return fn


def _coupled(dim, slope):
    """The right entry plus one that couples q's first dim to k~'s 1: a bias that depends on q."""
    N = S["alibi_generator"](dim, slope)
    N[0, dim + 1] = 0.3
    return N


def _symmetric(dim, slope):
    return S["alibi_generator"](dim, slope) + S["alibi_generator"](dim, slope).T


def _scalar(sign):
    return lambda dim, slope: sign * slope * torch.eye(dim + 2, dtype=torch.float64)


def _letters(*letters):
    return lambda choices: set(letters)


MISTAKES = [  # (id, check, wrong answer, fragments its message must contain)
    ("alibi: transposed", ex.check_alibi_generator, _entry(1, 0), ["adds nothing", "transpose"]),
    ("alibi: zero", ex.check_alibi_generator, lambda dim, slope: torch.zeros(dim + 2, dim + 2), ["NoPE"]),
    ("alibi: sign", ex.check_alibi_generator, lambda dim, slope: -S["alibi_generator"](dim, slope),
     ["wrong sign", "rewards"]),
    ("alibi: slope ignored", ex.check_alibi_generator, _entry(0, 1, 1.0), ["`slope`", "0.5"]),
    ("alibi: symmetric", ex.check_alibi_generator, _symmetric, ["symmetric", "sinh", "nilpotent"]),
    ("alibi: a decay", ex.check_alibi_generator, _scalar(1), ["scalar generator", "multiplies"]),
    ("alibi: a growth", ex.check_alibi_generator, _scalar(-1), ["scalar generator", "multiplies"]),
    ("alibi: not lifted", ex.check_alibi_generator, lambda dim, slope: torch.zeros(dim, dim), ["(6, 6)", "lifted"]),
    ("alibi: other", ex.check_alibi_generator, _coupled, ["differs from slope * (n - m)"]),
    ("relative: a decay", ex.check_relative_generators, _letters("A", "B", "D", "E"), ["B (a decay)", "m + n"]),
    ("relative: xPos", ex.check_relative_generators, _letters("A", "C", "D", "E"), ["C (xPos)", "inverse on the keys"]),
    ("relative: ALiBi", ex.check_relative_generators, _letters("A", "D", "E", "F"), ["F (ALiBi's N)", "n alone"]),
    ("relative: NoPE left out", ex.check_relative_generators, _letters("A", "E"), ["D (M = 0, NoPE)"]),
    ("relative: dense skew left out", ex.check_relative_generators, _letters("A", "D"), ["E is relative", "any"]),
    ("relative: RoPE left out", ex.check_relative_generators, _letters("D", "E"), ["A (RoPE)"]),
    ("relative: unknown letter", ex.check_relative_generators, _letters("A", "Z"), ["unknown letters ['Z']"]),
    ("relative: a number", ex.check_relative_generators, lambda choices: 3, ["letters", "int"]),
]


@each_mistake(MISTAKES)
def test_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


@pytest.mark.parametrize("answer", [
    lambda dim, slope: S["alibi_generator"](dim, slope).float(),                  # float32
    lambda dim, slope: S["alibi_generator"](dim, slope).tolist(),                 # a list of lists
], ids=["float32", "list"])
def test_alibi_generator_in_other_forms_passes(answer, capsys):
    ex.check_alibi_generator(answer)
    assert capsys.readouterr().out.startswith("✓ ")


@pytest.mark.parametrize("answer", [lambda c: ["a", "d", "e"], lambda c: "A, D, E", lambda c: ("E", "D", "A")],
                         ids=["lower-case list", "string", "tuple"])
def test_relative_generators_in_other_forms_pass(answer, capsys):
    ex.check_relative_generators(answer)
    assert capsys.readouterr().out.startswith("✓ A, D, E")


def test_the_right_letters_are_measured_not_written_in():
    """The answer the checker accepts is what generators.generator_scores measures: the skew-symmetric choices."""
    skew = {name for name, (_, M) in ex.GENERATOR_CHOICES.items() if torch.allclose(M, -M.T)}
    measured = {name for name, (_, M) in ex.GENERATOR_CHOICES.items() if ex._relative_under_same_action(M)}
    assert skew == measured == {"A", "D", "E"}


def test_the_learners_choices_are_a_copy():
    def spoil(choices):
        choices["A"][1].mul_(0)
        return S["relative_generators"](ex.GENERATOR_CHOICES)
    ex.check_relative_generators(spoil)
    assert bool(ex.GENERATOR_CHOICES["A"][1].any())
