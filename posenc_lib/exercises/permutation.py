"""Exercises of notebook 01: attention without positions permutes with its input.

Each check_<name>(answer) calls the learner's function on a few inputs, prints one line starting
with "✓" when it is right, and otherwise raises ExerciseError saying WHAT is wrong (the transpose
of the permutation matrix, the inverse permutation, rows permuted but not columns, a readout that
keeps the order ...).
`attempt(check, answer)` runs a check from a notebook cell without stopping the notebook.
SOLUTIONS[name] is a reference solution for check_<name>; CHECKS[name] is the checker.

Convention: a permutation `perm` builds the new sentence x[perm] (row i is old token perm[i]).
"""
from __future__ import annotations

import torch

from ..attention import attention
from ._common import ExerciseError, attempt, ok, same, tensor

__all__ = ["attempt", "check_permutation_matrix", "check_permuted_weights", "check_invariant_readout"]


_PERMS = ((1, 2, 0), (2, 0, 1), (3, 0, 2, 1), (1, 3, 4, 0, 2))


def check_permutation_matrix(permutation_matrix) -> None:
    """permutation_matrix(perm) -> P (T, T) with P @ x == x[perm] (row i of the result is token perm[i])."""
    gen = torch.Generator().manual_seed(1)
    for perm in _PERMS:
        t = len(perm)
        p = tensor(permutation_matrix(torch.tensor(perm)), f"permutation_matrix({perm})").double()  # perm as in 01
        if tuple(p.shape) != (t, t):
            raise ExerciseError(f"permutation_matrix({perm}) should be ({t}, {t}), got {tuple(p.shape)}")
        ones = (p == 1).sum()
        if int(ones) != t or int((p == 0).sum()) != t * t - t or not torch.all(p.sum(0) == 1) or not torch.all(p.sum(1) == 1):
            raise ExerciseError(f"permutation_matrix({perm}) is not a permutation matrix: it needs exactly one 1 in "
                                f"every row and every column, zeros elsewhere")
        x = torch.randn(t, 3, generator=gen, dtype=torch.float64)
        if torch.equal(p @ x, x[list(perm)]):
            continue
        if torch.equal(p.T @ x, x[list(perm)]):
            raise ExerciseError(f"for perm={perm} you built the transpose: P @ x gives x[inverse perm]. Row i of "
                                f"P @ x must be token perm[i], so the 1 of row i sits in column perm[i]: P[i, perm[i]] = 1")
        raise ExerciseError(f"for perm={perm}, P @ x is not x[perm]")
    ok("P @ x == x[perm], and P.T undoes it")


def _random_attention(t: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(t, 4, generator=gen, dtype=torch.float64) for _ in range(3))
    return q, k, v


def check_permuted_weights(permuted_weights) -> None:
    """permuted_weights(weights, perm) -> the attention weights of the permuted sentence, from those of the
    original one (no recomputation): weights[perm][:, perm]. Checked against attention() run on x[perm]."""
    for seed, perm in enumerate(_PERMS):
        q, k, v = _random_attention(len(perm), seed)
        _, weights = attention(q, k, v, return_weights=True)
        idx = list(perm)
        _, actual = attention(q[idx], k[idx], v[idx], return_weights=True)  # what attention really does
        got = tensor(permuted_weights(weights.clone(), torch.tensor(perm)), "permuted_weights(...)").double()
        if same(got, actual, 1e-7):
            continue
        inverse = [perm.index(i) for i in range(len(perm))]
        hints = [(weights[idx], "you permuted the rows (queries) but not the columns (keys): every word moved, "
                                "so the keys are reordered too -- weights[perm][:, perm]"),
                 (weights[:, idx], "you permuted the columns (keys) but not the rows (queries): "
                                   "weights[perm][:, perm]"),
                 (weights[inverse][:, inverse], "you used the inverse permutation: row i of the new sentence is "
                                                "old token perm[i], so index with perm itself"),
                 (weights[idx][:, idx].T, "transposed: rows are queries and each row sums to 1")]
        for wrong, hint in hints:
            if same(got, wrong, 1e-7):
                raise ExerciseError(f"perm={perm}: {hint}")
        raise ExerciseError(f"perm={perm}: the result is not the weights attention computes on x[perm]")
    ok("weights of the permuted sentence = weights[perm][:, perm]: the same numbers, rows and columns reordered")


def check_invariant_readout(readout) -> None:
    """readout(out (T, D)) -> a vector summarising the sentence, the same for every order of the tokens
    (and still depending on what the tokens are)."""
    gen = torch.Generator().manual_seed(3)
    t, d = 5, 6
    out = torch.randn(t, d, generator=gen, dtype=torch.float64)
    reference = tensor(readout(out.clone()), "readout(out)").double()
    if reference.shape == out[0].shape and torch.allclose(reference, out[0]):
        raise ExerciseError("your readout is the token in position 0; after a permutation another word sits there")
    if reference.shape == out[-1].shape and torch.allclose(reference, out[-1]):
        raise ExerciseError("your readout is the last token; after a permutation another word sits there")
    worst = 0.0
    for _ in range(20):
        perm = torch.randperm(t, generator=gen)
        got = tensor(readout(out[perm].clone()), "readout(out[perm])").double()
        if got.shape != reference.shape:
            raise ExerciseError("readout gives different shapes for different orders")
        worst = max(worst, float((got - reference).abs().max()))
    if worst > 1e-6:
        if reference.numel() == out.numel():
            raise ExerciseError("your readout keeps every token in order (a flatten/concat): reordering the tokens "
                                "reorders it; pool over the sequence axis instead")
        raise ExerciseError(f"your readout changes by up to {worst:.3g} when the tokens are reordered: it is not "
                            f"permutation-invariant (pool over the sequence axis: mean, sum or max)")
    other = out.clone()
    other[2] += 1.0
    if torch.allclose(tensor(readout(other), "readout").double(), reference):
        raise ExerciseError("your readout does not change when a token's output changes: it ignores the content")
    ok("the readout is the same for all 20 orders tried, and it still depends on the tokens")


# ------------------------------------------------------------------------------------ reference solutions

def _solution_permutation_matrix(perm):
    t = len(perm)
    p = torch.zeros(t, t)
    p[torch.arange(t), torch.as_tensor(perm)] = 1.0
    return p


def _solution_permuted_weights(weights, perm):
    idx = torch.as_tensor(perm)
    return weights[idx][:, idx]


def _solution_invariant_readout(out):
    return out.mean(dim=0)


SOLUTIONS: dict = {  # exercise name -> a reference solution (kept out of the notebooks' visible cells)
    "permutation_matrix": _solution_permutation_matrix,
    "permuted_weights": _solution_permuted_weights,
    "invariant_readout": _solution_invariant_readout,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}  # exercise name -> its checker
