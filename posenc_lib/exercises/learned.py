"""Exercises of notebook 04: learned absolute positions.

Each check_<name>(answer) calls the learner's function on a few inputs, prints one line starting
with "✓" when it is right, and otherwise raises ExerciseError saying WHAT is wrong (columns
compared instead of rows, targets from the future, a wrap-around, a bare IndexError ...).
`attempt(check, answer)` runs a check from a notebook cell without stopping the notebook.
SOLUTIONS[name] is a reference solution for check_<name>; CHECKS[name] is the checker.
"""
from __future__ import annotations

import torch
from torch.nn import functional as F

from ..absolute import position_similarity
from ._common import ExerciseError, as_tensor, attempt, call, ok, same

__all__ = ["attempt", "check_cosine_similarity", "check_lag_targets", "check_safe_lookup"]


def check_cosine_similarity(fn) -> None:
    """fn(table (T, d)) -> (T, T) cosine similarity of every pair of ROWS (positions)."""
    gen = torch.Generator().manual_seed(4)
    table = torch.randn(6, 10, generator=gen, dtype=torch.float64) * torch.linspace(0.5, 3.0, 6, dtype=torch.float64)[:, None]
    before = table.clone()
    got = as_tensor(call(fn, table, what="your function"), "your function")
    if not torch.equal(table, before):
        raise ExerciseError("your function changed the table in place (e.g. table /= norm): work on a copy")
    want = position_similarity(table)
    if got.shape == (10, 10):
        raise ExerciseError("the result is (dim, dim): you compared columns (dimensions) rather than rows "
                            "(positions). Normalise each row and take P @ P.T")
    if got.shape != want.shape:
        raise ExerciseError(f"expected shape (T, T) = {tuple(want.shape)}, got {tuple(got.shape)}")
    if same(got, table @ table.T):
        raise ExerciseError("these are raw dot products: divide by both rows' norms (cosine similarity), "
                            "otherwise long vectors look 'similar' to everything")
    columns = F.normalize(table, dim=0)
    if same(got, columns @ columns.T):
        raise ExerciseError("you normalised each column (dim=0); normalise each row (dim=-1): one row = one position")
    if not same(got.diagonal(), torch.ones(6, dtype=torch.float64), atol=1e-5):
        raise ExerciseError(f"the diagonal must be all 1 (every position is identical to itself), got "
                            f"{got.diagonal().double().tolist()}")
    if not same(got, want, atol=1e-5):
        raise ExerciseError(f"wrong values: max |difference| {float((got.double() - want).abs().max()):.3g}")
    ok("cosine similarity of the rows, diagonal 1, symmetric.")


def check_lag_targets(fn) -> None:
    """fn(tokens (B, T) int64, lag) -> targets (B, T): targets[:, t] = tokens[:, t - lag], -100 where t < lag."""
    gen = torch.Generator().manual_seed(5)
    tokens = torch.randint(0, 50, (3, 12), generator=gen)
    for lag in (1, 3):
        before = tokens.clone()
        got = as_tensor(call(fn, tokens, lag, what=f"your function (lag={lag})"), "your function")
        if not torch.equal(tokens, before):
            raise ExerciseError("your function changed `tokens` in place: build a new targets tensor")
        if got.shape != tokens.shape:
            raise ExerciseError(f"targets must have the shape of tokens {tuple(tokens.shape)}, got {tuple(got.shape)}")
        if got.dtype != torch.long:
            raise ExerciseError(f"targets must be int64 class indices (F.cross_entropy), got {got.dtype}")
        want = _solution_lag_targets(tokens, lag)
        if torch.equal(got, want):
            continue
        if torch.equal(got[:, :-lag], tokens[:, lag:]):
            raise ExerciseError(f"(lag={lag}) your targets are the token {lag} places AHEAD (the future); the task is "
                                f"to copy the token {lag} places BACK: targets[:, t] = tokens[:, t - {lag}]")
        if torch.equal(got[:, lag:], tokens[:, :-lag]):
            head = got[:, :lag]
            if torch.equal(head, tokens[:, -lag:]):
                raise ExerciseError(f"(lag={lag}) the first {lag} targets wrapped around to the last tokens "
                                    f"(torch.roll does that): positions t < lag have no token lag places back; "
                                    f"set them to -100 so F.cross_entropy ignores them")
            raise ExerciseError(f"(lag={lag}) positions t < {lag} have no token {lag} places back: their target must be "
                                f"-100 (F.cross_entropy's ignore_index), got {head[0].tolist()}")
        for off in (lag - 1, lag + 1):
            if 0 < off < tokens.shape[1] and torch.equal(got[:, off:], tokens[:, :-off]):
                raise ExerciseError(f"(lag={lag}) off by one: your targets copy the token {off} places back, not {lag}")
        raise ExerciseError(f"(lag={lag}) wrong targets: expected {want[0].tolist()}, got {got[0].tolist()} "
                            f"(first row)")
    ok("targets[:, t] = tokens[:, t - lag], and -100 (ignored) where there is nothing to copy.")


def check_safe_lookup(fn) -> None:
    """fn(table (max_len, d), positions (T,) int64) -> table rows (T, d); positions outside [0, max_len) must
    raise a ValueError whose message names max_len."""
    gen = torch.Generator().manual_seed(6)
    table = torch.randn(8, 4, generator=gen)
    valid = torch.tensor([0, 3, 7, 7, 1])
    got = as_tensor(call(fn, table, valid, what="your function on valid positions"), "your function")
    if not same(got, table[valid]):
        raise ExerciseError("valid positions must return table[positions] (one row per position)")
    for bad, why in ((torch.tensor([2, 8]), "position 8 == max_len has no row (rows are 0 .. max_len - 1): "
                                            "reject positions >= max_len, not only > max_len"),
                     (torch.tensor([40]), "position 40 is past max_len=8"),
                     (torch.tensor([-1, 2]), "position -1 silently reads the LAST row (Python's negative "
                                             "indexing): reject negative positions too")):
        try:
            fn(table, bad)
        except NotImplementedError:
            raise
        except ValueError as error:
            if "max_len" not in str(error):
                raise ExerciseError(f"the ValueError for {bad.tolist()} should name max_len and its value so the "
                                    f"reader knows the limit; your message: {error}") from error
            continue
        except IndexError as error:
            if "max_len" in str(error):  # the learner's own check, with the wrong exception type
                raise ExerciseError(f"for positions {bad.tolist()} your check is right, but it raises IndexError; "
                                    f"raise a ValueError (a bad argument, not a bad index)") from error
            raise ExerciseError(f"for positions {bad.tolist()} torch raised its bare IndexError ({error}): {why}; "
                                f"check first and raise a ValueError naming max_len") from error
        except Exception as error:  # noqa: BLE001
            raise ExerciseError(f"for positions {bad.tolist()} expected a ValueError naming max_len, got "
                                f"{type(error).__name__}: {error}") from error
        raise ExerciseError(f"no error for positions {bad.tolist()}: {why}")
    ok("rows for valid positions, a ValueError naming max_len for anything outside [0, max_len).")


# ------------------------------------------------------------------------------------ reference solutions

def _solution_cosine_similarity(table):
    unit = F.normalize(table, dim=-1)
    return unit @ unit.T


def _solution_lag_targets(tokens, lag):
    targets = torch.full_like(tokens, -100)
    targets[:, lag:] = tokens[:, :-lag]
    return targets


def _solution_safe_lookup(table, positions):
    max_len = table.shape[0]
    if positions.numel() and (int(positions.min()) < 0 or int(positions.max()) >= max_len):
        raise ValueError(f"positions must lie in [0, max_len={max_len}), got min {int(positions.min())}, "
                         f"max {int(positions.max())}")
    return table[positions]


SOLUTIONS: dict = {  # exercise name -> a reference solution (kept out of the notebooks' visible cells)
    "cosine_similarity": _solution_cosine_similarity,
    "lag_targets": _solution_lag_targets,
    "safe_lookup": _solution_safe_lookup,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}  # exercise name -> its checker
