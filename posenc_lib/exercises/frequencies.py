"""Exercise of notebook 14, section 4 (exercise 14.4): the frequencies of a truncated RoPE -- the slowest or the
fastest `count` pairs stopped (angle 0 at every position), the others kept -- as p-RoPE (Gemma 4's
"proportional") and HoPE (arXiv 2410.21216) stop the slowest ones.

check_truncated_inv_freq(answer) calls the learner's fn(head_dim, base, stop, count) on a few settings, prints
one line starting with "✓" when it is right, and otherwise raises ExerciseError naming the mistake: the wrong end
stopped (pair 0 is the fastest), the kept pairs given partial-rotary frequencies base ** (-2i / rotary_dim) (that
is GPT-NeoX's partial rotary, not p-RoPE), a stopped pair given theta 1 (the fastest) instead of 0, the stopped
pairs removed (a shorter tensor) and `count` read as dims, the exponent i/d. SOLUTIONS / CHECKS as
in the other topics; the right answer is posenc_lib.frequencies.TruncatedRoPE's. (Notebook 10's exercise counts
the pairs that turn less than once: posenc_lib.exercises.production.check_slow_pairs.)

Conventions (posenc_lib.rope): theta_i = base ** (-2i/head_dim), i = 0 .. head_dim/2 - 1, pair 0 the fastest.
"""
from __future__ import annotations

import torch

from ..frequencies import TruncatedRoPE
from ..i18n import tr
from ._common import ExerciseError, as_tensor, attempt, call, name_the_mistake, ok, same

__all__ = ["attempt", "check_truncated_inv_freq"]

SETTINGS = ((16, 10000.0, "slowest", 6), (16, 10000.0, "fastest", 2), (64, 500000.0, "slowest", 24),
            (8, 100.0, "fastest", 3))


def truncated_inv_freq(head_dim: int, base: float, stop: str, count: int) -> torch.Tensor:
    """The right answer: TruncatedRoPE's frequencies (float64, on the CPU)."""
    return TruncatedRoPE(head_dim, stop=stop, count=count, base=base)._frequencies("cpu")[0].double()


def _theta(head_dim, base, exponent=2.0):
    return base ** (-exponent * torch.arange(head_dim // 2, dtype=torch.float64) / head_dim)


def _stopped(theta, stop, count, value=0.0):
    index = torch.arange(theta.shape[0])
    stopped = index >= theta.shape[0] - count if stop == "slowest" else index < count
    return torch.where(stopped, torch.full_like(theta, value), theta)


def _mistakes(head_dim, base, stop, count):
    """(what a known mistake returns for these settings, its message), most specific first."""
    theta, pairs = _theta(head_dim, base), head_dim // 2
    other = "fastest" if stop == "slowest" else "slowest"
    which = tr("slowest", "最慢") if other == "slowest" else tr("fastest", "最快")
    yield _stopped(theta, other, count), tr(
        f"you stopped the {which} pairs: pair 0 (theta_0 = 1 radian per position) is the FASTEST, pair "
        f"head_dim/2 - 1 the slowest; stop={stop!r} asks for the other end",
        f"你停转的是{which}的那些对：第 0 对（theta_0 = 每个位置 1 弧度）"
        f"最快，第 head_dim/2 - 1 对最慢；stop={stop!r} 要的是另一端")
    if stop == "slowest" and count < pairs:
        rotary = 2 * (pairs - count)
        kept = base ** (-2 * torch.arange(pairs, dtype=torch.float64) / rotary)
        yield _stopped(kept, "slowest", count), tr(
            f"your kept pairs have the frequencies base^(-2i/{rotary}) of a {rotary}-dim rotary part: that is "
            "GPT-NeoX's partial rotary; p-RoPE keeps the head's own theta_i = base^(-2i/head_dim) and only sets "
            "the slowest to 0",
            f"你保留的对用的是 {rotary} 维旋转部分的频率 base^(-2i/{rotary})：那是 GPT-NeoX 的部分旋转；"
            "p-RoPE 保留整个头自己的 theta_i = base^(-2i/head_dim)，只把最慢的设为 0")
    yield _stopped(theta, stop, count, 1.0), tr(
        "a stopped pair never turns: its angle m·theta is 0 at every position, so theta = 0. theta = 1 is the "
        "fastest pair there is",
        "停转的对永远不转：它在每个位置的角度 m·theta 都是 0，所以 theta = 0。theta = 1 是最快的那一对")
    yield _stopped(theta, stop, count // 2), tr(
        f"count = {count} counts PAIRS (each two dims that turn together); you stopped {count // 2} pairs",
        f"count = {count} 数的是对（一起旋转的两个维度），你只停转了 {count // 2} 对")
    yield _stopped(_theta(head_dim, base, 1.0), stop, count), tr(
        "your frequencies use the exponent -i/head_dim: RoPE's is theta_i = base^(-2i/head_dim)",
        "你的频率用的指数是 -i/head_dim：RoPE 的是 theta_i = base^(-2i/head_dim)")


def check_truncated_inv_freq(fn) -> None:
    """fn(head_dim, base, stop, count) -> (head_dim/2,) float64: theta_i = base ** (-2i/head_dim), with the
    `count` slowest (stop="slowest") or fastest (stop="fastest") pairs set to 0."""
    answers = {}
    for head_dim, base, stop, count in SETTINGS:
        what = tr(f"your frequencies for head_dim={head_dim}, base={base:g}, stop={stop!r}, count={count}",
                  f"你在 head_dim={head_dim}、base={base:g}、stop={stop!r}、count={count} 时的频率")
        got = as_tensor(call(fn, head_dim, base, stop, count, what=tr("your function", "你的函数")), what)
        if got.dim() == 1 and got.shape[0] == head_dim // 2 - count:
            raise ExerciseError(tr(f"{what} has {got.shape[0]} values: keep one frequency per pair, "
                                   f"({head_dim // 2},), with 0 for a stopped pair (removing them shifts every pair "
                                   "after them onto the wrong dims)",
                                   f"{what}只有 {got.shape[0]} 个值：每对保留一个频率，形状 ({head_dim // 2},)，"
                                   "停转的对为 0（把它们删掉会让后面的对都错位到别的维度上）"))
        if got.shape != (head_dim // 2,):
            raise ExerciseError(tr(f"{what} has shape {tuple(got.shape)}: one frequency per pair, ({head_dim // 2},)",
                                   f"{what}的形状是 {tuple(got.shape)}：每对一个频率，应为 ({head_dim // 2},)"))
        got = got.double()
        right = truncated_inv_freq(head_dim, base, stop, count)
        answers[head_dim, base, stop, count] = got
        if same(got, right, atol=0.0, rtol=1e-6):
            continue
        name_the_mistake(got, _mistakes(head_dim, base, stop, count),
                         close=lambda a, b: same(a, b, atol=0.0, rtol=1e-6))
        raise ExerciseError(tr(f"{what} is {[round(v, 6) for v in got.tolist()]}, expected "
                               f"{[round(v, 6) for v in right.tolist()]}",
                               f"{what}是 {[round(v, 6) for v in got.tolist()]}，应为 "
                               f"{[round(v, 6) for v in right.tolist()]}"))
    got = answers[16, 10000.0, "slowest", 6]
    ok(tr(f"right: p-RoPE on a 16-dim head with 6 of 8 pairs stopped keeps theta = "
          f"{[round(v, 4) for v in got[:2].tolist()]} and turns nothing else",
          f"正确：16 维的头停转 8 对中的 6 对后，p-RoPE 只保留 theta = {[round(v, 4) for v in got[:2].tolist()]}，"
          "其余都不转"))


def _solution_truncated_inv_freq(head_dim, base, stop, count):
    theta = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    i = torch.arange(head_dim // 2)
    stopped = i >= head_dim // 2 - count if stop == "slowest" else i < count
    return torch.where(stopped, 0.0, theta)


SOLUTIONS: dict = {"truncated_inv_freq": _solution_truncated_inv_freq}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}
