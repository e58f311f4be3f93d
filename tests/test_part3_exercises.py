"""Checkers of notebooks 07-09: each reference solution passes, and typical mistakes get the message
that names them."""
from __future__ import annotations

import math

import pytest
import torch

from posenc_lib import experiments as E
from posenc_lib.exercises import ExerciseError
from posenc_lib.exercises import part3 as X


def _fails_with(check, answer, *fragments):
    with pytest.raises(ExerciseError) as err:
        check(answer)
    for fragment in fragments:
        assert fragment in str(err.value), str(err.value)


def test_last_positions_loss_mistakes():
    check = X.check_last_positions_loss
    _fails_with(check, lambda nll, L: nll[:, :L].mean(), "FIRST L")
    _fails_with(check, lambda nll, L: nll.mean(), "all n positions")
    _fails_with(check, lambda nll, L: nll[:, -L - 1:-1].mean(), "off by one")
    _fails_with(check, lambda nll, L: nll[0, -L:].mean(), "first window")
    _fails_with(check, lambda nll, L: nll[:, -L:].sum(), "sum")

    def in_place(nll, L):
        nll -= 0
        nll[:, 0] = 0.0
        return nll[:, -L:].mean()
    _fails_with(check, in_place, "in place")


def _rise_from(fn):
    def rise(results, multiple):
        out = {}
        for enc, row in results["summary"].items():
            out[enc] = None if row[str(multiple)] is None else fn(row[str(multiple)]["mean"], row["1"]["mean"])
        return out
    return rise


def test_rise_mistakes():
    check = X.check_rise
    _fails_with(check, _rise_from(lambda m, l: l - m), "sign is flipped")
    _fails_with(check, _rise_from(lambda m, l: m / l), "ratio")
    _fails_with(check, _rise_from(lambda m, l: m), "subtract the loss at L")

    def seed0(results, multiple):
        out = {}
        for r in results["runs"]:
            if r["seed"] == 0:
                v = r["loss"][str(multiple)]
                out[r["encoding"]] = None if v is None else v - r["loss"]["1"]
        return out
    _fails_with(check, seed0, "seed 0 only")

    def learned_nan(results, multiple):
        out = X.SOLUTIONS["rise"](results, multiple)
        out["learned"] = math.nan
        return out
    _fails_with(check, learned_nan, "None, not NaN")

    def learned_zero(results, multiple):
        out = X.SOLUTIONS["rise"](results, multiple)
        out["learned"] = 0.0
        return out
    _fails_with(check, learned_zero, "no row past L")
    _fails_with(check, lambda results, multiple: {"alibi": 0.0}, "no entry")


def _theta(dim, base=10000.0):
    return base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)


def test_pi_inv_freq_mistakes():
    check = X.check_pi_inv_freq
    _fails_with(check, lambda dim, factor, base=10000.0: _theta(dim, base) * factor, "multiplied theta")
    _fails_with(check, lambda dim, factor, base=10000.0: _theta(dim, base), "plain RoPE")
    _fails_with(check, lambda dim, factor, base=10000.0: _theta(dim, base * factor ** (dim / (dim - 2))), "NTK")
    _fails_with(check, lambda dim, factor, base=10000.0: base ** (-torch.arange(dim // 2).double() / dim) / factor,
                "exponent")
    _fails_with(check, lambda dim, factor, base=10000.0: torch.ones(dim), "PAIR")
    # float32 answers are fine
    X.check_pi_inv_freq(lambda dim, factor, base=10000.0: (_theta(dim, base) / factor).float())


def test_ntk_base_mistakes():
    check = X.check_ntk_base
    _fails_with(check, lambda base, factor, dim: base * factor, "d/(d-2)")
    _fails_with(check, lambda base, factor, dim: base / factor, "FASTER")
    _fails_with(check, lambda base, factor, dim: base * factor ** ((dim - 2) / dim), "upside down")
    _fails_with(check, lambda base, factor, dim: base * 2.0, "lowest frequency")


def test_rope_complex_mistakes():
    check = X.check_rope_complex

    def half(x, m, base=10000.0):
        d = x.shape[-1]
        z = torch.complex(x[..., : d // 2], x[..., d // 2:]) * torch.polar(torch.ones(d // 2, dtype=x.dtype),
                                                                            m * _theta(d, base))
        return torch.cat((z.real, z.imag), -1)

    def clockwise(x, m, base=10000.0):
        return X.SOLUTIONS["rope_complex"](x, -m, base)

    _fails_with(check, half, "half-split")
    _fails_with(check, clockwise, "e^{-i m theta}")
    _fails_with(check, lambda x, m, base=10000.0: x.clone(), "differs")

    def in_place(x, m, base=10000.0):
        out = X.SOLUTIONS["rope_complex"](x, m, base)
        x.zero_()
        return out
    _fails_with(check, in_place, "in place")


def test_quiz_right_answers_pass_and_come_from_the_data(capsys):
    results = E.load_results("extrapolation")
    answers = X.quiz_answers(results)
    assert set(answers) == set(X.QUIZ)
    X.check_quiz(answers, results)
    assert "all" in capsys.readouterr().out
    # the measured question's answer is whatever the data say, recomputed here from the runs
    rises = {}
    for enc in X.QUIZ["measured_flattest"]["options"].values():
        runs = [r["loss"] for r in results["runs"] if r["encoding"] == enc]
        rises[enc] = sum(r["8"] for r in runs) / len(runs) - sum(r["1"] for r in runs) / len(runs)
    assert X.QUIZ["measured_flattest"]["options"][answers["measured_flattest"]] == min(rises, key=rises.get)


def test_quiz_explains_each_wrong_answer():
    results = E.load_results("extrapolation")
    answers = X.quiz_answers(results)
    wrong = dict(answers, equivariance="a", pi_vs_ntk="c")
    other = next(k for k in X.QUIZ["measured_flattest"]["options"] if k != answers["measured_flattest"])
    wrong["measured_flattest"] = other
    with pytest.raises(ExerciseError) as err:
        X.check_quiz(wrong, results)
    text = str(err.value)
    assert f"{len(X.QUIZ) - 3}/{len(X.QUIZ)} right" in text
    assert "invariance" in text and "NTK-aware" in text and "rose by" in text
    with pytest.raises(ExerciseError, match="not answered"):
        X.check_quiz({}, results)
    with pytest.raises(ExerciseError, match="unknown question"):
        X.check_quiz({"colour": "a"}, results)
    with pytest.raises(ExerciseError, match="not one of the options"):
        X.check_quiz(dict(answers, alibi_sign="z"), results)


def test_attempt_prints_instead_of_raising(capsys):
    def unsolved(nll, L):
        raise NotImplementedError
    assert X.attempt(X.check_last_positions_loss, unsolved) is False
    assert "part3.SOLUTIONS['last_positions_loss']" in capsys.readouterr().out
    assert X.attempt(X.check_last_positions_loss, lambda nll, L: nll.mean()) is False
    assert "Not yet right" in capsys.readouterr().out
    assert X.attempt(X.check_last_positions_loss, X.SOLUTIONS["last_positions_loss"]) is True


def test_right_answers_in_float32_pass(capsys):
    """The exercises do not ask for float64: a right formula computed in float32 must pass."""
    def rope_float32(x, m, base=10000.0):  # Meta's Llama style: float32 frequencies and complex64
        d = x.shape[-1]
        theta = base ** (-torch.arange(0, d, 2) / d)
        z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], d // 2, 2).contiguous())
        return torch.view_as_real(z * torch.polar(torch.ones_like(theta), m * theta)).flatten(-2)

    X.check_rope_complex(rope_float32)
    X.check_last_positions_loss(lambda nll, L: nll[:, -L:].float().mean())
    X.check_ntk_base(lambda b, f, d: torch.tensor(b * f ** (d / (d - 2)), dtype=torch.float32))
    assert capsys.readouterr().out.count("✓") == 3
