"""Unfinished or broken answers get one clear message, never a traceback from inside the checker. Every entry of
every exercises module's CHECKS is swept: None, a string (an unfinished cell), a function that raises (the
message names the learner's line) and a function that returns NaN, everywhere or in one value (the message says
NaN, not some other rule). Checkers that used to let a traceback out or call NaN something else are named in
the tests below (issue 25: extension's check_pi_inv_freq, check_ntk_base, check_last_positions_loss, check_rise;
sinusoidal's check_wavelength; permutation's check_permutation_matrix; production's check_nope_layers on a list
of NaNs; check_encoding_rules calling a NaN encoding a future leak)."""
import math

import pytest
import torch

from posenc_lib import exercises as X
from posenc_lib.attention import PositionalEncoding
from posenc_lib.exercises import ExerciseError, extension, permutation, production, sinusoidal

ALL = [(topic.__name__.rsplit(".", 1)[1], name) for topic in X.TOPICS for name in topic.CHECKS]
NOT_A_FUNCTION = {("review", "quiz"), ("extension", "encoding_rules")}  # a dict of letters; an encoding class
FUNCTIONS = [case for case in ALL if case not in NOT_A_FUNCTION]
LETTERS = {("generators", "relative_generators")}  # answered with letters: no number to be NaN


def _check(topic, name):
    return next(t for t in X.TOPICS if t.__name__.endswith(f".{topic}")).CHECKS[name]


def _solution(topic, name):
    return next(t for t in X.TOPICS if t.__name__.endswith(f".{topic}")).SOLUTIONS[name]


def _raises(*args, **kwargs):
    return {}["no such key"]  # a learner's bug: KeyError on this very line


def _nan_like(value, everywhere: bool):
    """`value` (a tensor, number, list, tuple or dict of them, as a solution returns) with NaN in every value,
    or in the first one only; integer tensors become float64 to hold it."""
    if isinstance(value, torch.Tensor):
        out = value.double() if not value.is_floating_point() else value.clone()
        if everywhere:
            return out.fill_(math.nan)
        out.view(-1)[0] = math.nan
        return out
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return math.nan
    if isinstance(value, (list, tuple)):
        return type(value)(_nan_like(v, everywhere) if everywhere or i == 0 else v for i, v in enumerate(value))
    if isinstance(value, dict):
        return {k: _nan_like(v, everywhere) if everywhere or i == 0 else v for i, (k, v) in enumerate(value.items())}
    raise TypeError(type(value))


@pytest.mark.parametrize("case", [pytest.param(c, id=".".join(c)) for c in FUNCTIONS])
@pytest.mark.parametrize("answer, message", [
    (None, r"pass your function itself \(def ...\), got NoneType"),
    ("my_function", r"pass your function itself \(def ...\), got str"),
    (_raises, r"raised KeyError: 'no such key' \(your line \d+: return \{\}\[\"no such key\"\]"),
], ids=["None", "a string", "raises"])
def test_none_a_string_or_a_crash_is_one_clear_message(case, answer, message):
    with pytest.raises(ExerciseError, match=message):
        _check(*case)(answer)


@pytest.mark.parametrize("case", [pytest.param(c, id=".".join(c)) for c in FUNCTIONS if c not in LETTERS])
@pytest.mark.parametrize("everywhere", [True, False], ids=["all NaN", "one NaN"])
def test_a_nan_answer_is_called_nan(case, everywhere):
    solution = _solution(*case)

    def nan_answer(*args, **kwargs):
        return _nan_like(solution(*args, **kwargs), everywhere)

    with pytest.raises(ExerciseError, match="NaN"):
        _check(*case)(nan_answer)


@pytest.mark.parametrize("answer, message", [(None, "NoneType"), ("my_function", "'my_function'"),
                                             (lambda config: {}["no such key"], "KeyError")],
                         ids=["None", "a string", "raises"])
def test_encoding_rules_name_an_encoding_that_cannot_be_built(answer, message):
    with pytest.raises(ExerciseError, match=r"breaks 1 rule:\n  \[cannot be built\] .*" + message):
        extension.check_encoding_rules(answer)


@pytest.mark.parametrize("answer", [None, "a", _raises, {"equivariance": "c"}.items()],
                         ids=["None", "str", "fn", "items"])
def test_the_quiz_names_an_answer_that_is_not_a_dict(answer):
    with pytest.raises(ExerciseError, match="answers should be a dict"):
        X.review.check_quiz(answer)


class _LogDistanceBias(PositionalEncoding):
    """A score bias -log(query - key): NaN for the keys after the query (log of a negative number)."""

    def score_bias(self, q, q_positions, k_positions):
        distance = (q_positions[:, None] - k_positions[None, :]).to(q.dtype)
        return -torch.log(distance + 1)


def test_an_encoding_that_returns_nan_is_called_nan_not_a_leak():
    with pytest.raises(ExerciseError) as info:
        extension.check_encoding_rules(_LogDistanceBias)
    message = str(info.value)
    assert "[returns NaN] score_bias" in message and "log/sqrt of a negative number" in message, message
    assert "leaks future positions" not in message


def test_production_nope_layers_given_nans_says_nan():
    """Reported: a list of NaNs got "return a list of layer indices, got list"."""
    with pytest.raises(ExerciseError, match="contains NaN"):
        production.check_nope_layers(lambda config: [math.nan, math.nan])
    with pytest.raises(ExerciseError, match=r"list of layer indices, got int \(3\)"):
        production.check_nope_layers(lambda config: 3)
    production.check_nope_layers(lambda config: set(production.SOLUTIONS["nope_layers"](config)))  # a set is fine


@pytest.mark.parametrize("check, nan_answer", [
    (extension.check_pi_inv_freq, lambda dim, factor, base=10000.0: torch.full((dim // 2,), math.nan)),
    (extension.check_ntk_base, lambda base, factor, dim: math.nan),
    (extension.check_last_positions_loss, lambda nll, L: torch.tensor(math.nan)),
    (sinusoidal.check_wavelength, lambda omega: math.nan),
    (permutation.check_permutation_matrix, lambda perm: torch.full((len(perm), len(perm)), math.nan)),
    (production.check_partial_rope, lambda x, p, f, b=1e4: torch.full_like(x, math.nan)),
    (X.multidim.check_axial_rope, lambda x, r, c, b: torch.full_like(x, math.nan)),
    (X.learned.check_cosine_similarity, lambda t: torch.full((t.shape[0],) * 2, math.nan)),
], ids=["pi", "ntk", "last L", "wavelength", "permutation matrix", "partial rope", "axial rope", "cosine"])
def test_the_reported_nan_answers_are_called_nan(check, nan_answer):
    with pytest.raises(ExerciseError, match="NaN"):
        check(nan_answer)


class _CrashingBias(PositionalEncoding):
    def score_bias(self, q, q_positions, k_positions):
        return {}["no such key"]  # a learner's bug in a hook


def test_a_crash_in_an_encodings_hook_names_the_learners_line():
    with pytest.raises(ExerciseError, match=r"\[raises an error\] score_bias: .*KeyError: 'no such key' "
                                            r"\(your line \d+: return \{\}\[\"no such key\"\]"):
        extension.check_encoding_rules(_CrashingBias)
