"""Checkers of notebooks 07 and 08 (posenc_lib.exercises.extension): typical wrong answers get the
message that names the mistake, and right answers computed in float32 pass."""
import math

import pytest
import torch

from posenc_lib.exercises import extension as ex

from exercise_mistakes import assert_named, each_mistake

S = ex.SOLUTIONS


def _theta(dim, base=10000.0):
    return base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)


def _loss_in_place(nll, L):
    nll[:, 0] = 0.0
    return nll[:, -L:].mean()


def _rise_from(combine):
    """rise(results, m) = combine(mean loss at mL, mean loss at L) for every encoding with both."""
    def rise(results, multiple):
        return {enc: None if row[str(multiple)] is None else combine(row[str(multiple)]["mean"], row["1"]["mean"])
                for enc, row in results["summary"].items()}
    return rise


def _rise_seed0(results, multiple):
    return {r["encoding"]: None if r["loss"][str(multiple)] is None else r["loss"][str(multiple)] - r["loss"]["1"]
            for r in results["runs"] if r["seed"] == 0}


def _rise_learned(value):
    def rise(results, multiple):
        return {**S["rise"](results, multiple), "learned": value}
    return rise


MISTAKES = [  # (id, check, wrong answer, fragments its message must contain)
    ("first L", ex.check_last_positions_loss, lambda nll, L: nll[:, :L].mean(), ["FIRST L"]),
    ("all positions", ex.check_last_positions_loss, lambda nll, L: nll.mean(), ["all n positions"]),
    ("skips the last", ex.check_last_positions_loss, lambda nll, L: nll[:, -L - 1:-1].mean(), ["off by one"]),
    ("first window", ex.check_last_positions_loss, lambda nll, L: nll[0, -L:].mean(), ["first window"]),
    ("sum", ex.check_last_positions_loss, lambda nll, L: nll[:, -L:].sum(), ["sum"]),
    ("nll in place", ex.check_last_positions_loss, _loss_in_place, ["in place"]),
    ("rise flipped", ex.check_rise, _rise_from(lambda m, l: l - m), ["sign is flipped"]),
    ("rise ratio", ex.check_rise, _rise_from(lambda m, l: m / l), ["ratio"]),
    ("loss not rise", ex.check_rise, _rise_from(lambda m, l: m), ["subtract the loss at L"]),
    ("seed 0", ex.check_rise, _rise_seed0, ["seed 0 only"]),
    ("learned NaN", ex.check_rise, _rise_learned(math.nan), ["None, not NaN"]),
    ("learned 0", ex.check_rise, _rise_learned(0.0), ["no row past L"]),
    ("missing encodings", ex.check_rise, lambda results, multiple: {"alibi": 0.0}, ["no entry"]),
    ("PI multiplies", ex.check_pi_inv_freq, lambda dim, factor, base=10000.0: _theta(dim, base) * factor,
     ["multiplied theta"]),
    ("PI plain", ex.check_pi_inv_freq, lambda dim, factor, base=10000.0: _theta(dim, base), ["plain RoPE"]),
    ("PI is NTK", ex.check_pi_inv_freq,
     lambda dim, factor, base=10000.0: _theta(dim, base * factor ** (dim / (dim - 2))), ["NTK"]),
    ("PI exponent", ex.check_pi_inv_freq,
     lambda dim, factor, base=10000.0: base ** (-torch.arange(dim // 2).double() / dim) / factor, ["exponent"]),
    ("PI per dim", ex.check_pi_inv_freq, lambda dim, factor, base=10000.0: torch.ones(dim), ["PAIR"]),
    ("NTK base * factor", ex.check_ntk_base, lambda base, factor, dim: base * factor, ["d/(d-2)"]),
    ("NTK base / factor", ex.check_ntk_base, lambda base, factor, dim: base / factor, ["FASTER"]),
    ("NTK exponent", ex.check_ntk_base, lambda base, factor, dim: base * factor ** ((dim - 2) / dim), ["upside down"]),
    ("NTK other", ex.check_ntk_base, lambda base, factor, dim: base * 2.0, ["lowest frequency"]),
]


@each_mistake(MISTAKES)
def test_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


@pytest.mark.parametrize("check, answer", [
    (ex.check_last_positions_loss, lambda nll, L: nll[:, -L:].float().mean()),
    (ex.check_pi_inv_freq, lambda dim, factor, base=10000.0: (_theta(dim, base) / factor).float()),
    (ex.check_ntk_base, lambda b, f, d: torch.tensor(b * f ** (d / (d - 2)), dtype=torch.float32)),
], ids=["loss", "PI", "NTK"])
def test_right_answers_in_float32_pass(check, answer, capsys):
    check(answer)
    assert capsys.readouterr().out.startswith("✓ ")
