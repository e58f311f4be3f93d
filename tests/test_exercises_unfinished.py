"""Unfinished or broken answers get one clear message, never a traceback from inside the checker: the checkers
that used to call the learner's function directly (issue: extension's check_pi_inv_freq, check_ntk_base,
check_last_positions_loss, check_rise; sinusoidal's check_wavelength; permutation's check_permutation_matrix)
now go through exercises._common.call, and a NaN answer is called NaN."""
import math

import pytest
import torch

from posenc_lib.exercises import ExerciseError, extension, permutation, sinusoidal

CHECKS = {"check_pi_inv_freq": extension.check_pi_inv_freq, "check_ntk_base": extension.check_ntk_base,
          "check_last_positions_loss": extension.check_last_positions_loss, "check_rise": extension.check_rise,
          "check_wavelength": sinusoidal.check_wavelength,
          "check_permutation_matrix": permutation.check_permutation_matrix}


def _raises(*args, **kwargs):
    return {}["no such key"]  # a learner's bug: KeyError on this very line


@pytest.mark.parametrize("name", CHECKS)
@pytest.mark.parametrize("answer, message", [(None, "pass your function itself"), ("my_function", "pass your function"),
                                             (_raises, r"raised KeyError: 'no such key' \(your line \d+: return \{\}")])
def test_none_a_string_or_a_crash_is_one_clear_message(name, answer, message):
    with pytest.raises(ExerciseError, match=message):
        CHECKS[name](answer)


@pytest.mark.parametrize("name, nan_answer", [
    ("check_pi_inv_freq", lambda dim, factor, base=10000.0: torch.full((dim // 2,), math.nan)),
    ("check_ntk_base", lambda base, factor, dim: math.nan),
    ("check_last_positions_loss", lambda nll, L: torch.tensor(math.nan)),
    ("check_wavelength", lambda omega: math.nan),
    ("check_permutation_matrix", lambda perm: torch.full((len(perm), len(perm)), math.nan))])
def test_a_nan_answer_is_called_nan(name, nan_answer):
    with pytest.raises(ExerciseError, match="NaN"):
        CHECKS[name](nan_answer)
