"""Checker of notebook 14, section 4 (posenc_lib.exercises.frequencies): each typical wrong answer for the
frequencies of a truncated RoPE gets the message that names its mistake (the wrong end stopped, partial-rotary
frequencies, theta 1 for a stopped pair, the stopped pairs removed, count read as dims, the exponent i/d, stop
ignored), and right answers in another valid form pass."""
import pytest
import torch
from exercise_mistakes import assert_named, each_mistake

from posenc_lib.exercises import frequencies as ex
from posenc_lib.exercises._common import ExerciseError
from posenc_lib.scaling import rope_inv_freq

S, C = ex.SOLUTIONS, ex.check_truncated_inv_freq


def _theta(d, b, exponent=2.0):
    return b ** (-exponent * torch.arange(d // 2, dtype=torch.float64) / d)


def _stop(theta, stop, count, value=0.0):
    i = torch.arange(theta.shape[0])
    mask = i >= theta.shape[0] - count if stop == "slowest" else i < count
    return torch.where(mask, torch.full_like(theta, value), theta)


def _partial(d, b, stop, count):  # GPT-NeoX: the kept pairs get the frequencies of a smaller rotary dim
    if stop == "fastest":
        return S["truncated_inv_freq"](d, b, stop, count)
    kept = b ** (-2 * torch.arange(d // 2, dtype=torch.float64) / (d - 2 * count))
    return _stop(kept, stop, count)


MISTAKES = [
    ("wrong_end", C, lambda d, b, s, n: _stop(_theta(d, b), "fastest" if s == "slowest" else "slowest", n),
     ["FASTEST", "other end"]),
    ("always_slowest", C, lambda d, b, s, n: _stop(_theta(d, b), "slowest", n), ["FASTEST", "stop='fastest'"]),
    ("partial_rotary", C, _partial, ["GPT-NeoX", "partial rotary"]),
    ("theta_one", C, lambda d, b, s, n: _stop(_theta(d, b), s, n, 1.0), ["theta = 0"]),
    ("removed", C, lambda d, b, s, n: S["truncated_inv_freq"](d, b, s, n)[S["truncated_inv_freq"](d, b, s, n) > 0],
     ["one frequency per pair", "0 for a stopped pair"]),
    ("count_as_dims", C, lambda d, b, s, n: _stop(_theta(d, b), s, n // 2), ["PAIRS"]),
    ("exponent", C, lambda d, b, s, n: _stop(_theta(d, b, 1.0), s, n), ["-i/head_dim"]),
    ("dims_not_pairs", C, lambda d, b, s, n: S["truncated_inv_freq"](d, b, s, n).repeat(2), ["one frequency per pair"]),
    ("other", C, lambda d, b, s, n: S["truncated_inv_freq"](d, b, s, n) * 1.01, ["expected"]),
]


@each_mistake(MISTAKES)
def test_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


def test_the_solution_and_another_right_form_pass(capsys):
    C(S["truncated_inv_freq"])
    out = capsys.readouterr().out
    assert out.startswith("✓ ") and "[1.0, 0.3162]" in out

    # float32 frequencies from the library's rope_inv_freq, zeroed by a mask: right within float32's rounding
    def masked(d, b, s, n):
        keep = torch.arange(d // 2) < d // 2 - n if s == "slowest" else torch.arange(d // 2) >= n
        return (rope_inv_freq(d, base=b)[0] * keep).float()
    C(masked)


def test_an_unfinished_answer_is_not_a_traceback():
    def stub(head_dim, base, stop, count):
        raise NotImplementedError
    assert ex.attempt(C, stub) is False
    with pytest.raises(ExerciseError, match="tensor"):
        C(lambda d, b, s, n: None)
