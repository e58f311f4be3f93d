"""Exercises for notebooks 07-09.

Each check_<name>(answer) calls the learner's function on a few inputs, prints one line starting with
"✓" when it is right, and otherwise raises ExerciseError saying WHAT is wrong (the first L positions
instead of the last, a ratio instead of a difference, theta multiplied instead of divided, the base
scaled by the factor itself, the half-split pairs in the complex derivation ...).
`attempt(check, answer)` runs a check from a notebook cell without stopping the notebook.
SOLUTIONS[name] is a reference solution for check_<name>; CHECKS[name] is the checker.

The quiz of notebook 09: QUIZ (question id -> question, options, answer, why each wrong option is
wrong), `show_quiz()` prints it, `check_quiz({qid: letter})` checks. Questions about notebook 07's
measurements compute their answer from the cached results in data/, not from a stored letter.
"""
from __future__ import annotations

import math

import torch

from .. import experiments as E
from ..rope import rope_complex
from ._errors import ExerciseError
from .part1 import _number, _ok, _same, _tensor, attempt  # attempt: shared by every part

__all__ = [
    "attempt", "check_last_positions_loss", "check_rise", "check_pi_inv_freq", "check_ntk_base",
    "check_rope_complex", "QUIZ", "quiz_answers", "show_quiz", "check_quiz",
]


def _diagnose(value: float, candidates, prefix: str, fallback: str, **tolerance):
    """Raise ExerciseError: prefix + the message of the first (wrong value, message) candidate that
    `value` matches (math.isclose with `tolerance`), or prefix + fallback when none does."""
    hint = next((hint for wrong, hint in candidates if math.isclose(value, wrong, **tolerance)), None)
    raise ExerciseError(f"{prefix}: {hint or fallback}")


# ------------------------------------------------------------------------------------ 07_extrapolation


def check_last_positions_loss(last_positions_loss) -> None:
    """last_positions_loss(nll, L) -> mean of nll (windows, n) over the LAST L positions of every window."""
    gen = torch.Generator().manual_seed(7)
    nll = torch.rand(5, 40, generator=gen, dtype=torch.float64) + torch.linspace(0, 3, 40, dtype=torch.float64)
    L = 8
    before = nll.clone()
    got = _number(last_positions_loss(nll, L), "last_positions_loss(nll, 8)")
    if not torch.equal(nll, before):
        raise ExerciseError("your function changed the caller's nll tensor in place; compute on a copy (or without in-place ops)")
    right = float(nll[:, -L:].mean())
    if math.isclose(got, right, rel_tol=1e-6, abs_tol=1e-6):  # float32 answers are right too
        _ok("the mean over the last L positions: the same characters are scored at every window length")
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
    return {"runs": runs, "summary": E.summarize(runs, (1, 2, 4)), "provenance": {"config": {"train_len": 64}}}


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
            value = _number(value, f"rise(results, {multiple})[{enc!r}]")
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
    _ok("rise = mean loss at mL minus mean loss at L, None where an encoding has no value")


# ---------------------------------------------------------------------------------- 08_context_extension


def _theta(dim, base):
    return base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)


def check_pi_inv_freq(pi_inv_freq) -> None:
    """pi_inv_freq(dim, factor, base=10000.0) -> (dim/2,) frequencies of linear position interpolation."""
    for dim, factor in ((16, 4.0), (64, 2.0), (8, 8.0)):
        got = _tensor(pi_inv_freq(dim, factor, base=10000.0), f"pi_inv_freq({dim}, {factor})").double()
        right = _theta(dim, 10000.0) / factor
        if _same(got, right, 1e-6):
            continue
        if tuple(got.shape) == (dim,):
            raise ExerciseError(f"shape {tuple(got.shape)}: RoPE has one frequency per PAIR, dim/2 = {dim // 2} of them")
        if tuple(got.shape) != (dim // 2,):
            raise ExerciseError(f"pi_inv_freq({dim}, {factor}) should have shape ({dim // 2},), got {tuple(got.shape)}")
        hints = [
            (_theta(dim, 10000.0) * factor, "you multiplied theta by the factor: positions would turn FASTER, pushing "
                                            "angles even further out of the trained range; PI divides"),
            (_theta(dim, 10000.0), "these are the plain RoPE frequencies: divide every one by the factor"),
            (_theta(dim, 10000.0 * factor ** (dim / (dim - 2))), "you changed the base: that is NTK-aware scaling "
                                                                 "(high frequencies kept); PI divides EVERY theta_i by the factor"),
            (10000.0 ** (-torch.arange(dim // 2, dtype=torch.float64) / dim) / factor,
             "wrong exponent: theta_i = base ** (-2i/dim) for pair i, not base ** (-i/dim)"),
        ]
        for wrong, hint in hints:
            if _same(got, wrong, 1e-6):
                raise ExerciseError(f"pi_inv_freq({dim}, {factor}): {hint}")
        raise ExerciseError(f"pi_inv_freq({dim}, {factor}) differs from base ** (-2i/dim) / factor "
                            f"by up to {float((got - right).abs().max()):.3g}")
    _ok("PI divides every frequency by the factor: position m at the new length turns like m / factor did in training")


def check_ntk_base(ntk_base) -> None:
    """ntk_base(base, factor, dim) -> the NTK-aware base whose LOWEST frequency is theta_low / factor."""
    for base, factor, dim in ((10000.0, 4.0, 16), (10000.0, 8.0, 128), (500000.0, 2.0, 64)):
        got = _number(ntk_base(base, factor, dim), f"ntk_base({base:g}, {factor:g}, {dim})")
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
    _ok("base' = base * factor^(d/(d-2)): the lowest frequency is interpolated by the factor, the highest barely moves")


# ------------------------------------------------------------------------------------------- 09_review


def check_rope_complex(rope_by_complex) -> None:
    """rope_by_complex(x, m, base=10000.0) -> x (..., d) rotated for position m via pairs (x[2i], x[2i+1]) as
    complex numbers times e^{i m theta_i} (the derivation's form; compare posenc_lib.rope_complex)."""
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(3, 8, generator=gen, dtype=torch.float64)
    for m in (0, 3, 17):
        before = x.clone()
        got = _tensor(rope_by_complex(x, m, base=10000.0), f"rope_by_complex(x, {m})").double()
        if not torch.equal(x, before):
            raise ExerciseError("your function modified x in place; return a new tensor")
        right = rope_complex(x[:, None, :], torch.tensor([m]), base=10000.0)[:, 0]  # each row at position m
        if _same(got, right, 1e-5):  # float32 angles (Meta's Llama code) are right too
            continue
        if tuple(got.shape) != tuple(x.shape):
            raise ExerciseError(f"the result should have x's shape {tuple(x.shape)}, got {tuple(got.shape)}")
        theta = _theta(x.shape[-1], 10000.0)
        z_half = torch.complex(x[..., :4], x[..., 4:]) * torch.polar(torch.ones(4, dtype=torch.float64), m * theta)
        half = torch.cat((z_half.real, z_half.imag), -1)
        z = torch.view_as_complex(x.reshape(3, 4, 2).contiguous())
        clockwise = torch.view_as_real(z * torch.polar(torch.ones(4, dtype=torch.float64), -m * theta)).flatten(-2)
        wrong_exp = torch.view_as_real(z * torch.polar(torch.ones(4, dtype=torch.float64),
                                                       m * 10000.0 ** (-torch.arange(4, dtype=torch.float64) / 8))).flatten(-2)
        if _same(got, half, 1e-5):
            raise ExerciseError("you paired dim i with dim i + d/2 (the half-split layout of rotate_half): the derivation "
                                "and view_as_complex pair neighbours (2i, 2i+1); both are valid RoPEs, but they differ by a "
                                "permutation of dims and must not be mixed")
        if _same(got, clockwise, 1e-5):
            raise ExerciseError("you multiplied by e^{-i m theta} (a clockwise turn): RoPE uses e^{+i m theta}; with the "
                                "sign flipped the relative angle is reversed: a key k positions back scores as if it were k ahead")
        if _same(got, wrong_exp, 1e-5):
            raise ExerciseError("wrong frequencies: theta_i = base ** (-2i/d) for pair i, not base ** (-i/d)")
        raise ExerciseError(f"at m={m} the result differs from the reference by up to "
                            f"{float((got - right).abs().max()):.3g}")
    _ok("pairs as complex numbers times e^{i m theta}: the same rotation as apply_rope(..., layout='interleaved')")


# ------------------------------------------------------------------------------------------- the quiz


def _measured_flattest(results: dict, multiple: str = "8") -> tuple:
    """(encoding with the smallest mean rise from L to multiple*L, {encoding: rise}) from the results."""
    rises = {}
    for enc, row in results["summary"].items():
        if row.get(multiple) is not None:
            rises[enc] = row[multiple]["mean"] - row["1"]["mean"]
    return min(rises, key=rises.get), rises


QUIZ: dict = {
    "equivariance": {
        "question": "Self-attention with no positional encoding and no mask; you permute the input tokens. The outputs ...",
        "options": {"a": "are unchanged", "b": "are permuted the same way", "c": "change unpredictably"},
        "answer": "b",
        "why": {"a": "that is invariance, which needs a pooled readout (a sum or mean over tokens) on top (notebook 01)",
                "c": "nothing in attention depends on the order, so each output follows its own token (notebook 01)"},
    },
    "rope_relative": {
        "question": "With RoPE, the score between a query at position m and a key at position n depends on the positions through ...",
        "options": {"a": "m and n separately", "b": "m - n only", "c": "m + n", "d": "|m - n| only"},
        "answer": "b",
        "why": {"a": "R_m^T R_n = R_{n-m}: only the difference survives the dot product (notebook 06)",
                "c": "the rotations compose to a turn by the DIFFERENCE of the angles (notebook 06)",
                "d": "RoPE keeps the sign: +k and -k give different scores (unlike PE.PE of notebook 03)"},
    },
    "rope_where": {
        "question": "RoPE rotates ...",
        "options": {"a": "the input embeddings", "b": "the queries and keys", "c": "queries, keys and values",
                    "d": "the attention scores"},
        "answer": "b",
        "why": {"a": "adding/rotating at the input is what absolute encodings do; RoPE acts inside every attention layer",
                "c": "values are not rotated: only q.k needs to see the relative angle",
                "d": "a bias on the scores is T5/ALiBi; RoPE changes q and k before their dot product"},
    },
    "alibi_sign": {
        "question": "ALiBi adds to the score of query i and key j (slope m_h > 0 for head h) ...",
        "options": {"a": "+m_h |i - j|", "b": "-m_h |i - j|", "c": "-m_h (i - j)^2"},
        "answer": "b",
        "why": {"a": "a positive bias would favour FAR keys; ALiBi penalises distance",
                "c": "the penalty is linear in the distance (hence 'linear biases')"},
    },
    "learned_past_max_len": {
        "question": "A learned absolute table trained with max_len = 64 is asked for position 100. It ...",
        "options": {"a": "reuses row 63", "b": "has no row: an error naming max_len", "c": "extrapolates linearly"},
        "answer": "b",
        "why": {"a": "nothing clamps the index; in plain PyTorch it is 'index out of range in self' (notebook 04)",
                "c": "the rows are independent trained vectors; there is nothing to extrapolate from"},
    },
    "pi_vs_ntk": {
        "question": "Linear position interpolation (PI) with factor s ...",
        "options": {"a": "divides every theta_i by s", "b": "divides only the low frequencies by s",
                    "c": "multiplies the base by s^(d/(d-2))"},
        "answer": "a",
        "why": {"b": "frequency-dependent treatment is YaRN's and Llama 3's ramp (notebook 08)",
                "c": "that is NTK-aware scaling: the highest frequency is untouched, the lowest divided by s"},
    },
    "angles_dtype": {
        "question": "Why are RoPE angles m * theta computed in float32 or better, even for a bf16 model?",
        "options": {"a": "bf16 cannot tell positions like 256 and 257 apart", "b": "sin and cos do not exist in bf16",
                    "c": "it is faster"},
        "answer": "a",
        "why": {"b": "they exist; the problem is the INPUT m: bf16 has 8 significant bits (notebook 06)",
                "c": "it is slower, if anything; it is about precision (notebook 06)"},
    },
    "glossary_waitui": {
        "question": "外推 (wài tuī) is ...",
        "options": {"a": "extrapolation (to lengths beyond training)", "b": "interpolation", "c": "relative position"},
        "answer": "a",
        "why": {"b": "interpolation is 内插 (nèi chā), as in position interpolation",
                "c": "relative position is 相对位置 (xiāng duì wèi zhì)"},
    },
    "measured_flattest": {
        "question": "In notebook 07's cached run, whose mean loss rose LEAST from L to 8L?",
        "options": {"a": "nope", "b": "sinusoidal", "c": "t5", "d": "rope", "e": "alibi"},
        "answer": None,  # computed from data/ by quiz_answers()
        "why": {},
    },
}


def quiz_answers(results: dict | None = None) -> dict:
    """The right letter for every QUIZ question; measured ones are read from the results (default data/)."""
    answers = {q: item["answer"] for q, item in QUIZ.items() if item["answer"] is not None}
    results = E.load_results("extrapolation") if results is None else results
    flattest, _ = _measured_flattest(results)
    letters = {v: k for k, v in QUIZ["measured_flattest"]["options"].items()}
    answers["measured_flattest"] = letters[flattest]
    return answers


def show_quiz() -> None:
    """Print every question with its options."""
    for i, (qid, item) in enumerate(QUIZ.items(), 1):
        print(f"{i}. [{qid}] {item['question']}")
        for letter, text in item["options"].items():
            print(f"     {letter}) {text}")


def check_quiz(answers: dict, results: dict | None = None) -> None:
    """answers: {question id: letter}. Raises ExerciseError explaining every wrong or missing answer."""
    if not isinstance(answers, dict):
        raise ExerciseError(f"answers should be a dict like {{'equivariance': 'b', ...}}, got {type(answers).__name__}")
    unknown = sorted(set(answers) - set(QUIZ))
    if unknown:
        raise ExerciseError(f"unknown question ids {unknown}; the ids are {list(QUIZ)}")
    right = quiz_answers(results)
    problems = []
    for qid, item in QUIZ.items():
        given = answers.get(qid)
        if given is None:
            problems.append(f"[{qid}] not answered yet")
            continue
        given = str(given).strip().lower()
        if given not in item["options"]:
            problems.append(f"[{qid}] {given!r} is not one of the options {list(item['options'])}")
        elif given != right[qid]:
            why = item["why"].get(given)
            if qid == "measured_flattest":
                _, rises = _measured_flattest(E.load_results("extrapolation") if results is None else results)
                chosen = item["options"][given]
                best = item["options"][right[qid]]
                why = (f"{chosen} rose by {rises[chosen]:+.3f} nats/char, {best} by {rises[best]:+.3f} "
                       f"(read data/{E.EXTRAPOLATION_FILE}, summary)")
            problems.append(f"[{qid}] not {given}: {why}")
    if problems:
        raise ExerciseError(f"{len(QUIZ) - len(problems)}/{len(QUIZ)} right.\n  " + "\n  ".join(problems))
    _ok(f"all {len(QUIZ)} answers right")


# ------------------------------------------------------------------------------------------- solutions


def _solution_last_positions_loss(nll, L):
    return nll[:, -L:].mean()


def _solution_rise(results, multiple):
    out = {}
    for enc, row in results["summary"].items():
        out[enc] = None if row[str(multiple)] is None else row[str(multiple)]["mean"] - row["1"]["mean"]
    return out


def _solution_pi_inv_freq(dim, factor, base=10000.0):
    return base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim) / factor


def _solution_ntk_base(base, factor, dim):
    return base * factor ** (dim / (dim - 2))


def _solution_rope_complex(x, m, base=10000.0):
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    rotated = z * torch.polar(torch.ones_like(theta), m * theta)
    return torch.view_as_real(rotated).flatten(-2).to(x.dtype)


SOLUTIONS: dict = {
    "last_positions_loss": _solution_last_positions_loss,
    "rise": _solution_rise,
    "pi_inv_freq": _solution_pi_inv_freq,
    "ntk_base": _solution_ntk_base,
    "rope_complex": _solution_rope_complex,
    "quiz": quiz_answers,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}
