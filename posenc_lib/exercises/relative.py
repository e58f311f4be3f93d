"""Exercises of notebook 05: relative positions, T5's buckets, ALiBi's slopes.

Each check_<name>(answer) calls the learner's function on a few inputs, prints one line starting
with "✓" when it is right, and otherwise raises ExerciseError saying WHAT is wrong (the sign
of key - query, a missing clamp, the power-of-two formula for 6 heads ...).
`attempt(check, answer)` runs a check from a notebook cell without stopping the notebook.
SOLUTIONS[name] is a reference solution for check_<name>; CHECKS[name] is the checker.

Conventions (as in posenc_lib.relative and posenc_lib.alibi): relative position = key - query;
ALiBi bias = -slope * |i - j|.
"""
from __future__ import annotations

import math

import torch

from ..alibi import alibi_slopes
from ..relative import t5_relative_bucket
from ._common import ExerciseError, as_tensor, attempt, call, ok, same

__all__ = ["attempt", "check_relative_positions", "check_t5_bucket", "check_alibi_slopes"]


def check_relative_positions(fn) -> None:
    """fn(length) -> (length, length) int64 with [i, j] = j - i (key - query; rows are queries)."""
    length = 5
    got = as_tensor(call(fn, length, what="your function"), "your function")
    want = _solution_relative_positions(length)
    if got.shape != want.shape:
        raise ExerciseError(f"expected shape (length, length) = {tuple(want.shape)}, got {tuple(got.shape)}")
    if got.is_floating_point():
        raise ExerciseError("relative positions count tokens: return an integer tensor (torch.arange gives int64)")
    if torch.equal(got, want):
        ok("[i, j] = j - i: key - query, so keys in the query's past are negative.")
        return
    if torch.equal(got, -want):
        raise ExerciseError("relative position has the wrong sign: it is key - query (j - i, T5's memory - context), "
                            "so a key in the query's past is negative")
    if torch.equal(got, want.abs()):
        raise ExerciseError("you took |j - i|: the sign (past or future) is lost, and T5's bidirectional buckets "
                            "and Shaw's embeddings need it. Keep key - query")
    raise ExerciseError(f"wrong values; expected row 0 = {want[0].tolist()}, got {got[0].tolist()}")


def check_t5_bucket(fn) -> None:
    """fn(relative_position (N,) int64, bidirectional, num_buckets, max_distance) -> buckets (N,) int64,
    relative_position = key - query."""
    r = torch.arange(-300, 301)
    for bidirectional in (True, False):
        for num_buckets, max_distance in ((32, 128), (16, 64)):
            setting = f"bidirectional={bidirectional}, num_buckets={num_buckets}, max_distance={max_distance}"
            got = as_tensor(call(fn, r.clone(), bidirectional, num_buckets, max_distance,
                                   what=f"your function ({setting})"), "your function")
            want = t5_relative_bucket(r, bidirectional=bidirectional, num_buckets=num_buckets,
                                      max_distance=max_distance)
            if got.shape != want.shape:
                raise ExerciseError(f"({setting}) expected one bucket per relative position, shape {tuple(want.shape)}, "
                                    f"got {tuple(got.shape)}")
            if torch.equal(got.long(), want):
                continue
            flipped = t5_relative_bucket(-r, bidirectional=bidirectional, num_buckets=num_buckets,
                                         max_distance=max_distance)
            if torch.equal(got.long(), flipped):
                raise ExerciseError(f"({setting}) relative position has the wrong sign: T5 uses key - query "
                                    f"(memory_position - context_position), so keys in the past are negative"
                                    + ("; in the causal form the past gets the buckets, every future key bucket 0"
                                       if not bidirectional else ""))
            if int(got.max()) >= num_buckets or int(got.min()) < 0:
                raise ExerciseError(f"({setting}) buckets must lie in [0, num_buckets): got {int(got.min())} .. "
                                    f"{int(got.max())}. Clamp the log buckets to n - 1 (distances past max_distance "
                                    f"share the last bucket)" + (", and in the bidirectional form each side has "
                                                                 "num_buckets // 2 buckets" if bidirectional else ""))
            if not bidirectional and bool((got[r > 0] != 0).any()):
                raise ExerciseError(f"({setting}) in the causal form every future key (r > 0) goes to bucket 0: "
                                    f"the distance is -min(r, 0)")
            n = num_buckets // 2 if bidirectional else num_buckets
            small = (r.abs() < n // 2) if bidirectional else ((r <= 0) & (-r < n // 2))
            if not torch.equal(got[small].long(), want[small]):
                raise ExerciseError(f"({setting}) distances below n/2 = {n // 2} each get their own bucket "
                                    f"(bucket = distance{' + n for keys after the query' if bidirectional else ''})")
            bad = int((got.long() != want).nonzero()[0])
            raise ExerciseError(f"({setting}) wrong bucket for relative position {int(r[bad])}: expected "
                                f"{int(want[bad])}, got {int(got[bad])} (the log-spaced part: exact + "
                                f"log(d / exact) / log(max_distance / exact) * (n - exact), truncated)")
    ok("T5 buckets match for the bidirectional and the causal form.")


def check_alibi_slopes(fn) -> None:
    """fn(num_heads) -> (num_heads,) slopes, head 0 first; checked for 1, 4, 8, 6 and 12 heads. Powers of two:
    the paper's 2^(-8h/n); other head counts: the authors' code (get_slopes), as BLOOM and posenc_lib.alibi."""
    for n in (1, 4, 8, 6, 12):
        got = as_tensor(call(fn, n, what=f"your function ({n} heads)"), "your function").double().reshape(-1)
        want = alibi_slopes(n, dtype=torch.float64)
        if got.numel() != n:
            raise ExerciseError(f"{n} heads need {n} slopes, got {got.numel()}")
        if same(got, want, atol=0, rtol=1e-6):
            continue
        if same(got, want.flip(0), atol=0, rtol=1e-6):
            raise ExerciseError(f"({n} heads) reversed: head 0 gets the LARGEST slope 2^(-8/n')")
        power = (n & (n - 1)) == 0
        naive = torch.tensor([2.0 ** (-8.0 * h / n) for h in range(1, n + 1)], dtype=torch.float64)
        if power:
            if same(got, torch.tensor([2.0 ** (-8.0 * h / n) for h in range(n)], dtype=torch.float64), atol=0, rtol=1e-6):
                raise ExerciseError(f"({n} heads) off by one: h runs from 1 to n, so the first slope is 2^(-8/n), not 1")
            raise ExerciseError(f"({n} heads) for a power of two the slopes are 2^(-8h/n), h = 1..n: a geometric "
                                f"sequence starting at and stepping by 2^(-8/n); expected {want.tolist()}")
        if same(got, naive, atol=0, rtol=1e-6):
            raise ExerciseError(f"({n} heads) you applied the power-of-two formula 2^(-8h/n) with n = {n}. The paper "
                                f"only trains power-of-two head counts; for other counts the authors' code "
                                f"(get_slopes, a 'workaround' in its own comment, used by BLOOM and this library) takes "
                                f"all slopes of the largest power of two below n, then every other slope "
                                f"(h = 1, 3, 5, ...) of twice that")
        closest = 2 ** math.floor(math.log2(n))
        doubled = alibi_slopes(2 * closest, dtype=torch.float64)
        if same(got, doubled[:n], atol=0, rtol=1e-6):
            extra = torch.log2(doubled[0::2][:n - closest]).tolist()
            raise ExerciseError(f"({n} heads) you took the first {n} slopes of {2 * closest} heads; the authors' code "
                                f"(get_slopes) keeps all {closest} slopes of {closest} heads and adds the slopes of "
                                f"{2 * closest} heads with odd h = 1, 3, 5, ... (its [0::2]): here "
                                f"{', '.join(f'2^{v:g}' for v in extra)}")
        if len(set(round(v, 12) for v in got.tolist())) < n:
            raise ExerciseError(f"({n} heads) two heads share a slope: the extra slopes must be 2^(-8h/{2 * closest}) "
                                f"for ODD h; even h repeats slopes of {closest} heads")
        raise ExerciseError(f"({n} heads) expected {[round(v, 5) for v in want.tolist()]}, got "
                            f"{[round(v, 5) for v in got.tolist()]}")
    ok("ALiBi slopes for 1, 4, 8, 6 and 12 heads.")


# ------------------------------------------------------------------------------------ reference solutions

def _solution_relative_positions(length):
    pos = torch.arange(length)
    return pos[None, :] - pos[:, None]  # [i, j] = key j - query i


def _solution_t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = num_buckets // 2 if bidirectional else num_buckets
    bucket = torch.zeros_like(relative_position)
    if bidirectional:
        bucket += (relative_position > 0).long() * n
        distance = relative_position.abs()
    else:
        distance = -torch.clamp(relative_position, max=0)
    exact = n // 2
    large = exact + (torch.log(distance.float() / exact) / math.log(max_distance / exact) * (n - exact)).long()
    large = torch.clamp(large, max=n - 1)
    return bucket + torch.where(distance < exact, distance, large)


def _solution_alibi_slopes(num_heads):
    closest = 2 ** math.floor(math.log2(num_heads))
    slopes = [2.0 ** (-8.0 * h / closest) for h in range(1, closest + 1)]
    extra = [2.0 ** (-8.0 * h / (2 * closest)) for h in range(1, 2 * closest, 2)]
    return torch.tensor(slopes + extra[: num_heads - closest], dtype=torch.float64)


SOLUTIONS: dict = {  # exercise name -> a reference solution (kept out of the notebooks' visible cells)
    "relative_positions": _solution_relative_positions,
    "t5_bucket": _solution_t5_bucket,
    "alibi_slopes": _solution_alibi_slopes,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}  # exercise name -> its checker
