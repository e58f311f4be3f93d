"""Checkers of notebooks 07 and 08 (posenc_lib.exercises.extension): typical wrong answers get the
message that names the mistake, and right answers computed in float32 pass."""
import math

import pytest
import torch
from exercise_mistakes import assert_named, assert_passes_with_float32_note, each_mistake
from torch import nn

from posenc_lib.attention import PositionalEncoding
from posenc_lib.exercises import extension as ex

S = ex.SOLUTIONS


def _theta(dim, base=10000.0):
    return base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)


def _loss_in_place(nll, L):
    nll[:, 0] = 0.0
    return nll[:, -L:].mean()


def _rise_from(combine):
    """rise(results, m) = combine(far, near): the mean losses at mL and at L, for every encoding with both."""
    def rise(results, multiple):
        return {enc: None if row[str(multiple)] is None else combine(row[str(multiple)]["mean"], row["1"]["mean"])
                for enc, row in results["summary"].items()}
    return rise


def _rise_seed0(results, multiple):
    return {r["encoding"]: None if r["loss"][str(multiple)] is None else r["loss"][str(multiple)] - r["loss"]["1"]
            for r in results["runs"] if r["seed"] == 0}


def _rise_summed(results, multiple):  # the seeds' losses added up, not averaged
    totals = {}
    for r in results["runs"]:
        if r["loss"][str(multiple)] is not None:
            totals[r["encoding"]] = totals.get(r["encoding"], 0.0) + r["loss"][str(multiple)] - r["loss"]["1"]
    return {enc: totals.get(enc) for enc in results["summary"]}


def _rise_from_previous(results, multiple):  # 2L from L, but 4L from 2L
    before = str(max(multiple // 2, 1))
    return {enc: None if row[str(multiple)] is None else row[str(multiple)]["mean"] - row[before]["mean"]
            for enc, row in results["summary"].items()}


def _rise_learned(value):
    def rise(results, multiple):
        return {**S["rise"](results, multiple), "learned": value}
    return rise


class _SequenceMean(PositionalEncoding):  # position t sees the mean over the whole sequence
    def __init__(self, dim=64):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(dim))

    def add_to_input(self, x, positions):
        return x + x.mean(1, keepdim=True) * self.w


class _ArangeBias(PositionalEncoding):  # torch.arange without device=: a CPU tensor next to a GPU one
    def score_bias(self, q, q_positions, k_positions):
        r = torch.arange(q.shape[-2])
        return -(r[None, :] - r[:, None]).abs().to(q.dtype)


class _TwoMistakes(_SequenceMean):  # t / T: the length leaks, and the arange has no device
    def add_to_input(self, x, positions):
        return x + (torch.arange(x.shape[1]) / x.shape[1])[:, None] * self.w


class _LogDistanceBias(PositionalEncoding):  # -log |j - i|: +inf on the diagonal (log 0), so the softmax is 0/0
    def score_bias(self, q, q_positions, k_positions):
        return -torch.log((k_positions[None, :] - q_positions[:, None]).abs().to(q.dtype))


class _SqrtDistanceBias(PositionalEncoding):  # -sqrt(j - i) of the signed distance: NaN for every past key
    def score_bias(self, q, q_positions, k_positions):
        return -(k_positions[None, :] - q_positions[:, None]).to(q.dtype).sqrt()


class _InPlaceSine(PositionalEncoding):  # x += term writes into the caller's x
    def __init__(self, dim=64):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(dim))

    def add_to_input(self, x, positions):
        x += torch.sin(positions.to(x.dtype))[:, None] * self.w
        return x


class _Misnamed(PositionalEncoding):
    def score_biases(self, q, q_positions, k_positions):
        return None


class _Float32Bias(PositionalEncoding):
    def score_bias(self, q, q_positions, k_positions):
        return torch.zeros(q.shape[-2], q.shape[-2], device=q.device)


MISTAKES = [  # (id, check, wrong answer, fragments its message must contain)
    ("first L", ex.check_last_positions_loss, lambda nll, L: nll[:, :L].mean(), ["FIRST L"]),
    ("all positions", ex.check_last_positions_loss, lambda nll, L: nll.mean(), ["all n positions"]),
    ("skips the last", ex.check_last_positions_loss, lambda nll, L: nll[:, -L - 1:-1].mean(), ["off by one"]),
    ("last L + 1", ex.check_last_positions_loss, lambda nll, L: nll[:, -(L + 1):].mean(), ["off by one", "last 9"]),
    ("last L - 1", ex.check_last_positions_loss, lambda nll, L: nll[:, -(L - 1):].mean(), ["off by one", "last 7"]),
    ("first window", ex.check_last_positions_loss, lambda nll, L: nll[0, -L:].mean(), ["first window"]),
    ("sum", ex.check_last_positions_loss, lambda nll, L: nll[:, -L:].sum(), ["sum"]),
    ("nll in place", ex.check_last_positions_loss, _loss_in_place, ["in place"]),
    ("rise flipped", ex.check_rise, _rise_from(lambda far, near: near - far), ["sign is flipped"]),
    ("rise ratio", ex.check_rise, _rise_from(lambda far, near: far / near), ["ratio"]),
    ("loss not rise", ex.check_rise, _rise_from(lambda far, near: far), ["subtract the loss at L"]),
    ("seed 0", ex.check_rise, _rise_seed0, ["seed 0 only"]),
    ("rise relative", ex.check_rise, _rise_from(lambda far, near: (far - near) / near), ["relative to the loss at L"]),
    ("rise summed over seeds", ex.check_rise, _rise_summed, ["summed over the 2 seeds"]),
    ("rise from the length before", ex.check_rise, _rise_from_previous, ["from 2L", "measured from L"]),
    ("learned NaN", ex.check_rise, _rise_learned(math.nan), ["None, not NaN"]),
    ("learned 0", ex.check_rise, _rise_learned(0.0), ["no row past L"]),
    ("missing encodings", ex.check_rise, lambda results, multiple: {"alibi": 0.0}, ["no entry"]),
    ("encoding leaks", ex.check_encoding_rules, _SequenceMean,
     ["_SequenceMean breaks 1 rule:", "[leaks future positions] add_to_input"]),
    ("encoding off device", ex.check_encoding_rules, _ArangeBias, ["[ignores the device] score_bias", "device="]),
    ("encoding: two rules", ex.check_encoding_rules, _TwoMistakes,
     ["breaks 2 rules", "[leaks future positions] add_to_input", "[ignores the device] add_to_input"]),
    ("encoding without hook", ex.check_encoding_rules, _Misnamed, ["[implements no hook]", "misspelt score_bias"]),
    ("encoding float32", ex.check_encoding_rules, _Float32Bias, ["[returns the wrong dtype] score_bias"]),
    ("encoding: log of distance 0", ex.check_encoding_rules, _LogDistanceBias,
     ["[returns NaN] TinyLM (score_bias)", "-inf"]),
    ("encoding: sqrt of a signed distance", ex.check_encoding_rules, _SqrtDistanceBias,
     ["[returns NaN] score_bias", "sqrt of a negative"]),
    ("encoding: x += term", ex.check_encoding_rules, _InPlaceSine, ["[modifies its input in place] add_to_input",
                                                                    "x = x + term"]),
    ("PI multiplies", ex.check_pi_inv_freq, lambda dim, factor, base=10000.0: _theta(dim, base) * factor,
     ["multiplied theta"]),
    ("PI plain", ex.check_pi_inv_freq, lambda dim, factor, base=10000.0: _theta(dim, base), ["plain RoPE"]),
    ("PI is NTK", ex.check_pi_inv_freq,
     lambda dim, factor, base=10000.0: _theta(dim, base * factor ** (dim / (dim - 2))), ["NTK"]),
    ("PI exponent", ex.check_pi_inv_freq,
     lambda dim, factor, base=10000.0: base ** (-torch.arange(dim // 2).double() / dim) / factor, ["exponent"]),
    ("PI per dim", ex.check_pi_inv_freq, lambda dim, factor, base=10000.0: torch.ones(dim), ["PAIR"]),
    ("PI in bf16", ex.check_pi_inv_freq, lambda dim, factor, base=10000.0: (_theta(dim, base) / factor).bfloat16(),
     ["torch.bfloat16", "position 32,768", "float32"]),
    ("PI exponent sign", ex.check_pi_inv_freq, lambda dim, factor, base=10000.0: 1 / _theta(dim, base) / factor,
     ["sign", "base ** (+2i/dim)"]),
    ("NTK (base * factor) ** ...", ex.check_ntk_base, lambda base, factor, dim: (base * factor) ** (dim / (dim - 2)),
     ["factor only", "raised base * factor"]),
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


def test_an_encoding_that_keeps_the_rules_passes_and_names_its_hooks(capsys):
    ex.check_encoding_rules(ex.SOLUTIONS["encoding_rules"])
    ex.check_encoding_rules("rope")  # a registered name works too
    out = capsys.readouterr().out.split("✓ ")
    assert out[1].startswith("_SolutionClippedDistanceBias (score_bias) keeps every rule")
    assert out[2].startswith("rope (rotate_qk) keeps every rule")


# ---- notebooks 07 and 08's "Common mistakes", where an exercise can make them (issue 25)

NOTEBOOK_07_08_MISTAKES = [
    # 07: averaging the loss over the whole long window; comparing lengths on different characters
    ("whole window", ex.check_last_positions_loss, lambda nll, L: nll.mean(), ["all n positions", "same characters"]),
    ("first characters", ex.check_last_positions_loss, lambda nll, L: nll[:, :L].mean(), ["FIRST L"]),
    # 07: reading one seed
    ("one seed", ex.check_rise, _rise_seed0, ["seed 0 only"]),
    # 07: a single input would let an L fixed in the code pass
    ("L fixed at 8", ex.check_last_positions_loss, lambda nll, L: nll[:, -8:].mean(),
     ["last_positions_loss(nll, 5)", "`L`"]),
    # 08: "NTK" that divides the high frequencies too is PI; PI written as NTK; the base ignored
    ("PI by changing the base", ex.check_pi_inv_freq,
     lambda dim, factor, base=10000.0: _theta(dim, base * factor ** (dim / (dim - 2))), ["NTK-aware", "EVERY"]),
    ("PI ignores base", ex.check_pi_inv_freq, lambda dim, factor, base=10000.0: _theta(dim) / factor,
     ["base=500000", "`base`"]),
    ("NTK ignores base", ex.check_ntk_base, lambda base, factor, dim: 10000.0 * factor ** (dim / (dim - 2)),
     ["ntk_base(500000, 2, 64)", "`base`"]),
]


@each_mistake(NOTEBOOK_07_08_MISTAKES)
def test_notebook_07_08_common_mistake_is_named(check, answer, fragments):
    assert_named(check, answer, fragments)


def test_float32_pi_frequencies_pass_with_a_note(capsys):
    """8.1 asks for float64 frequencies: float32 ones pass, with what they cost at position 100,000."""
    solution = ex.SOLUTIONS["pi_inv_freq"]
    assert_passes_with_float32_note(ex.check_pi_inv_freq,
                                    lambda dim, factor, base=10000.0: solution(dim, factor, base).float(), solution,
                                    capsys)
