"""Exercises of notebooks 07 and 08: measuring extrapolation, your own encoding, and two ways to
stretch RoPE.

Each check_<name>(answer) calls the learner's function on a few inputs, prints one line starting
with "✓" when it is right, and otherwise raises ExerciseError saying WHAT is wrong (the first
L positions instead of the last, a ratio instead of a difference, theta multiplied instead of
divided, the base scaled by the factor itself, a hook that sees later positions ...).
`attempt(check, answer)` runs a check from a notebook cell without stopping the notebook.
SOLUTIONS[name] is a reference solution for check_<name>; CHECKS[name] is the checker.
"""
from __future__ import annotations

import math

import torch
from torch import nn

from ..attention import PositionalEncoding
from ..experiments import summarize
from ..experiments.own_encoding import rule_report
from ..scaling import rope_inv_freq
from ._common import ExerciseError, attempt, number, ok, same, tensor

__all__ = ["attempt", "check_last_positions_loss", "check_rise", "check_encoding_rules", "check_pi_inv_freq",
           "check_ntk_base"]


def _diagnose(value: float, candidates, prefix: str, fallback: str, **tolerance):
    """Raise ExerciseError: prefix + the message of the first (wrong value, message) candidate that
    `value` matches (math.isclose with `tolerance`), or prefix + fallback when none does."""
    hint = next((hint for wrong, hint in candidates if math.isclose(value, wrong, **tolerance)), None)
    raise ExerciseError(f"{prefix}: {hint or fallback}")


def _theta(dim: int, base: float = 10000.0) -> torch.Tensor:
    """Plain RoPE's frequencies theta_i = base ** (-2i/dim), float64."""
    return rope_inv_freq(dim, base=base)[0]


# ------------------------------------------------------------------------------- 07: extrapolation

def check_last_positions_loss(last_positions_loss) -> None:
    """last_positions_loss(nll, L) -> mean of nll (windows, n) over the LAST L positions of every window."""
    gen = torch.Generator().manual_seed(7)
    nll = torch.rand(5, 40, generator=gen, dtype=torch.float64) + torch.linspace(0, 3, 40, dtype=torch.float64)
    L = 8
    before = nll.clone()
    got = number(last_positions_loss(nll, L), "last_positions_loss(nll, 8)")
    if not torch.equal(nll, before):
        raise ExerciseError("your function changed the caller's nll tensor in place; compute on a copy (or without in-place ops)")
    right = float(nll[:, -L:].mean())
    if math.isclose(got, right, rel_tol=1e-6, abs_tol=1e-6):  # float32 answers are right too
        ok("the mean over the last L positions: the same characters are scored at every window length")
        return
    hints = [
        (float(nll[:, :L].mean()), "you scored the FIRST L positions: in a longer window those are the positions the "
                                   "model saw in training, so every length would give the same number"),
        (float(nll.mean()), "you averaged over all n positions: a longer window then mixes short-context positions "
                            "with long ones, and the lengths are no longer compared on the same characters"),
        (float(nll[:, -L:].sum()), "that is the sum over the last L positions of all windows, not the mean"),
        (float(nll[:, -L:].mean(0).sum()), "you summed over positions after averaging over windows: take the mean of both"),
        (float(nll[:, -L - 1:-1].mean()), "off by one: nll[:, -L:] is the last L positions, you skipped the very last"),
        (float(nll[0, -L:].mean()), "you used only the first window; average over every window"),
    ]
    _diagnose(got, hints, f"got {got:.4f}, expected {right:.4f}",
              "nll[:, -L:].mean() is the mean over the last L positions", rel_tol=1e-6, abs_tol=1e-6)


def _fake_results() -> dict:
    """A tiny results dict in the experiment's format, with values chosen so each mistake gives a different number."""
    runs = []
    table = {"alibi": ((2.0, 2.0, 1.9), (2.2, 2.1, 2.2)), "sinusoidal": ((2.1, 3.0, 3.6), (2.3, 3.4, 3.8)),
             "learned": ((1.9, None, None), (2.1, None, None))}
    for enc, seeds in table.items():
        for seed, (l1, l2, l4) in enumerate(seeds):
            runs.append({"encoding": enc, "seed": seed, "loss": {"1": l1, "2": l2, "4": l4}})
    return {"runs": runs, "summary": summarize(runs, (1, 2, 4)), "provenance": {"config": {"train_len": 64}}}


def check_rise(rise) -> None:
    """rise(results, multiple) -> {encoding: mean loss at multiple*L minus mean loss at L, None where missing}."""
    results = _fake_results()
    for multiple in (2, 4):
        got = rise(results, multiple)
        if not isinstance(got, dict):
            raise ExerciseError(f"rise should return a dict encoding -> number or None, got {type(got).__name__}")
        missing = sorted(set(results["summary"]) - set(got))
        if missing:
            raise ExerciseError(f"rise(results, {multiple}) has no entry for {missing}: give every encoding a key "
                                f"(None when it has no value at that length)")
        for enc, row in results["summary"].items():
            value = got[enc]
            if row[str(multiple)] is None:
                if value is not None and not (isinstance(value, float) and math.isnan(value)):
                    raise ExerciseError(f"{enc} has no loss at {multiple}L (a learned table has no row past L), "
                                        f"so its rise is None, not {value!r}")
                if value is not None:
                    raise ExerciseError(f"{enc}: use None, not NaN, for 'no value' (NaN compares false with everything "
                                        "and sorts unpredictably)")
                continue
            if value is None:
                raise ExerciseError(f"{enc} has losses at L and {multiple}L, so its rise is a number, not None")
            value = number(value, f"rise(results, {multiple})[{enc!r}]")
            runs = [r["loss"] for r in results["runs"] if r["encoding"] == enc]
            mean_l = sum(r["1"] for r in runs) / len(runs)
            mean_m = sum(r[str(multiple)] for r in runs) / len(runs)
            right = mean_m - mean_l
            if math.isclose(value, right, abs_tol=1e-6):
                continue
            hints = [(mean_l - mean_m, "the sign is flipped: rise = loss at the longer length minus loss at L"),
                     (mean_m / mean_l, "that is a ratio; the rise is the difference of the two losses (in nats/char)"),
                     (runs[0][str(multiple)] - runs[0]["1"], "that is seed 0 only; average over every seed first"),
                     (mean_m, f"that is the loss at {multiple}L itself; subtract the loss at L")]
            _diagnose(value, hints, f"{enc} at {multiple}L: got {value:.4f}, expected {right:.4f}",
                      f"the mean over seeds at {multiple}L minus the mean over seeds at L", abs_tol=1e-6)
    ok("rise = mean loss at mL minus mean loss at L, None where an encoding has no value")


def check_encoding_rules(encoding) -> None:
    """encoding: your PositionalEncoding subclass (or a function config -> encoding, or an instance).
    Does it keep the protocol's rules before it is trained? At least one hook; shapes, dtype and device
    kept (the meta device stands in for a GPU); its inputs left alone; and position t never sees a later
    position (hook by hook, then through a causal TinyLM). Each problem names the rule and the hook
    (posenc_lib.experiments.own_encoding has the details)."""
    report = rule_report(encoding)
    problems = report["problems"]
    if problems:
        rules = "rule" if len(problems) == 1 else "rules"
        raise ExerciseError(f"{report['name']} breaks {len(problems)} {rules}:\n  " + "\n  ".join(problems))
    ok(f"{report['name']} ({', '.join(report['hooks'])}) keeps every rule: shapes, dtype, device (meta), inputs "
       f"untouched, and position t sees only positions <= t, hook by hook and through a causal TinyLM")


# --------------------------------------------------------------------------- 08: context extension

def check_pi_inv_freq(pi_inv_freq) -> None:
    """pi_inv_freq(dim, factor, base=10000.0) -> (dim/2,) frequencies of linear position interpolation."""
    for dim, factor in ((16, 4.0), (64, 2.0), (8, 8.0)):
        got = tensor(pi_inv_freq(dim, factor, base=10000.0), f"pi_inv_freq({dim}, {factor})").double()
        right = _theta(dim) / factor
        if same(got, right, 1e-6):
            continue
        if tuple(got.shape) == (dim,):
            raise ExerciseError(f"shape {tuple(got.shape)}: RoPE has one frequency per PAIR, dim/2 = {dim // 2} of them")
        if tuple(got.shape) != (dim // 2,):
            raise ExerciseError(f"pi_inv_freq({dim}, {factor}) should have shape ({dim // 2},), got {tuple(got.shape)}")
        hints = [
            (_theta(dim) * factor, "you multiplied theta by the factor: positions would turn FASTER, pushing "
                                            "angles even further out of the trained range; PI divides"),
            (_theta(dim), "these are the plain RoPE frequencies: divide every one by the factor"),
            (_theta(dim, 10000.0 * factor ** (dim / (dim - 2))), "you changed the base: that is NTK-aware scaling "
                                                                 "(high frequencies kept); PI divides EVERY theta_i by the factor"),
            (10000.0 ** (-torch.arange(dim // 2, dtype=torch.float64) / dim) / factor,
             "wrong exponent: theta_i = base ** (-2i/dim) for pair i, not base ** (-i/dim)"),
        ]
        for wrong, hint in hints:
            if same(got, wrong, 1e-6):
                raise ExerciseError(f"pi_inv_freq({dim}, {factor}): {hint}")
        raise ExerciseError(f"pi_inv_freq({dim}, {factor}) differs from base ** (-2i/dim) / factor "
                            f"by up to {float((got - right).abs().max()):.3g}")
    ok("PI divides every frequency by the factor: position m at the new length turns like m / factor did in training")


def check_ntk_base(ntk_base) -> None:
    """ntk_base(base, factor, dim) -> the NTK-aware base whose LOWEST frequency is theta_low / factor."""
    for base, factor, dim in ((10000.0, 4.0, 16), (10000.0, 8.0, 128), (500000.0, 2.0, 64)):
        got = number(ntk_base(base, factor, dim), f"ntk_base({base:g}, {factor:g}, {dim})")
        right = base * factor ** (dim / (dim - 2))
        if math.isclose(got, right, rel_tol=1e-6):
            continue
        lowest = lambda b: b ** (-(dim - 2) / dim)  # noqa: E731  the lowest frequency theta_{dim/2-1}
        hints = [
            (base * factor, f"base * factor divides the lowest frequency by only factor^((d-2)/d) = "
                            f"{factor ** ((dim - 2) / dim):.3f}, not by the factor; the exponent must be d/(d-2)"),
            (base / factor, "dividing the base makes every frequency FASTER; NTK-aware scaling makes the base larger"),
            (base * factor ** ((dim - 2) / dim), "exponent upside down: (d-2)/d should be d/(d-2)"),
            (base * factor ** 2, "factor squared is not it: solve base'^(-(d-2)/d) = base^(-(d-2)/d) / factor for base'"),
        ]
        _diagnose(got, hints, f"ntk_base({base:g}, {factor:g}, {dim}) = {got:.6g}",
                  f"expected {right:.6g}; the lowest frequency becomes {lowest(got):.3g} instead of "
                  f"{lowest(base) / factor:.3g}", rel_tol=1e-6)
    ok("base' = base * factor^(d/(d-2)): the lowest frequency is interpolated by the factor, the highest barely moves")


# ------------------------------------------------------------------------------------ reference solutions

def _solution_last_positions_loss(nll, L):
    return nll[:, -L:].mean()


def _solution_rise(results, multiple):
    out = {}
    for enc, row in results["summary"].items():
        out[enc] = None if row[str(multiple)] is None else row[str(multiple)]["mean"] - row["1"]["mean"]
    return out


class _SolutionClippedDistanceBias(PositionalEncoding):
    """A learned bias per head for each distance d = query - key (= -r), clipped at max_relative_position:
    a scalar version of Shaw's clipped relative keys. Causal: only d >= 0 is ever unmasked."""

    def __init__(self, num_heads: int, max_distance: int = 16):
        super().__init__()
        self.max_distance = max_distance
        self.bias = nn.Parameter(torch.zeros(num_heads, max_distance + 1))  # (H, max_distance + 1)

    @classmethod
    def from_config(cls, config):
        return cls(config.num_heads, config.max_relative_position)

    def score_bias(self, q, q_positions, k_positions):
        distance = (q_positions[..., :, None] - k_positions[..., None, :]).clamp(0, self.max_distance)  # (.., Tq, Tk)
        return self.bias[:, distance].movedim(0, -3).to(q.dtype)  # (H, Tq, Tk) or (B, H, Tq, Tk)


def _solution_pi_inv_freq(dim, factor, base=10000.0):
    return base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim) / factor


def _solution_ntk_base(base, factor, dim):
    return base * factor ** (dim / (dim - 2))


SOLUTIONS: dict = {  # exercise name -> a reference solution (kept out of the notebooks' visible cells)
    "last_positions_loss": _solution_last_positions_loss,
    "rise": _solution_rise,
    "encoding_rules": _SolutionClippedDistanceBias,
    "pi_inv_freq": _solution_pi_inv_freq,
    "ntk_base": _solution_ntk_base,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}  # exercise name -> its checker
