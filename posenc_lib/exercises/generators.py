"""Exercises of notebook 14, section 1: encodings as exp(t M) (posenc_lib.generators).

14.1 check_alibi_generator: the nilpotent generator N whose inverse-transpose action on the lifted q~ = [q, 1, 0],
     k~ = [k, 0, 1] adds ALiBi's causal bias -slope * (m - n) to q.k.
14.2 check_relative_generators: which of GENERATOR_CHOICES give scores that depend on n - m only under the SAME
     action (q -> exp(m M) q, k -> exp(n M) k).

Each check_<name>(answer) calls the learner's function, prints one line starting with "✓" when it is right, and
otherwise raises ExerciseError naming the mistake (the entry transposed, the sign of the slope, a symmetric N that
is not nilpotent, a multiplicative decay where ALiBi adds; a decay or xPos taken for relative under the same action,
NoPE or a dense skew matrix left out). The right answers are computed here with posenc_lib.generators, never
written in. SOLUTIONS[name] is a reference solution; CHECKS[name] the checker.
"""
from __future__ import annotations

import torch

from ..generators import alibi_generator, alibi_lift, generator_scores, rope_generator, scalar_generator, xpos_generator
from ..i18n import Text, tr
from ..relative import diagonal_spread
from ._common import ExerciseError, as_tensor, attempt, call, ignored, name_the_mistake, ok, same

__all__ = ["attempt", "GENERATOR_CHOICES", "check_alibi_generator", "check_relative_generators"]


# ------------------------------------------------------------------------------- 14.1 ALiBi from a nilpotent N
def _bias_of(N: torch.Tensor, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """(T, T) what N adds to q.k under the inverse-transpose action on the lifted vectors (positions 0 .. T-1)."""
    ql, kl = alibi_lift(q, k)
    return generator_scores(ql, kl, N.double(), action="inverse_transpose") - q @ k.T


def check_alibi_generator(fn) -> None:
    """fn(dim, slope) -> N (dim + 2, dim + 2): with q~ = [q, 1, 0] and k~ = [k, 0, 1], the inverse-transpose
    score exp(-m N^T) q~ . exp(n N) k~ must be q.k + slope * (n - m), ALiBi's causal bias -slope * (m - n)."""
    gen = torch.Generator().manual_seed(14)
    T = 6
    for dim, slope in ((4, 0.5), (6, 0.125)):
        q = torch.randn(T, dim, generator=gen, dtype=torch.float64)
        k = torch.randn(T, dim, generator=gen, dtype=torch.float64)
        got = as_tensor(call(fn, dim, slope, what=tr("your function", "你的函数")), tr("your N", "你的 N"))
        if not got.is_floating_point():
            got = got.double()
        if tuple(got.shape) != (dim + 2, dim + 2):
            note = tr(" (a (dim, dim) N cannot add a bias that does not depend on q and k)",
                      "（(dim, dim) 的 N 加不出一个与 q、k 无关的偏置）") if tuple(got.shape) == (dim, dim) else ""
            raise ExerciseError(tr(f"N must be ({dim + 2}, {dim + 2}) for dim = {dim}: it acts on the lifted vectors "
                                   f"[q, 1, 0] and [k, 0, 1] of size dim + 2, got {tuple(got.shape)}{note}",
                                   f"dim = {dim} 时 N 应为 ({dim + 2}, {dim + 2})：它作用在大小为 dim + 2 的提升向量 "
                                   f"[q, 1, 0] 和 [k, 0, 1] 上，你的形状是 {tuple(got.shape)}{note}"))
        positions = torch.arange(T, dtype=torch.float64)
        want = slope * (positions[None, :] - positions[:, None])  # [m, n] = slope * (n - m)
        bias = _bias_of(got, q, k)
        if same(bias, want, atol=1e-9):
            continue
        if not bool(got.any()):
            raise ExerciseError(tr("N = 0 is NoPE: the score stays q.k at every distance",
                                   "N = 0 就是 NoPE：分数在任何距离上都是 q.k"))
        a, b = dim, dim + 1
        name_the_mistake(bias, [
            (torch.zeros(T, T, dtype=torch.float64),
             tr(f"your N adds nothing to q.k: the entry must take q~'s 1 (coordinate {a}) to k~'s 1 (coordinate "
                f"{b}), N[{a}, {b}] = slope; N[{b}, {a}] (the transpose) meets the zeros of q~ and k~",
                f"你的 N 没有给 q.k 加上任何东西：这个元素要把 q~ 的 1（坐标 {a}）连到 k~ 的 1（坐标 {b}），"
                f"即 N[{a}, {b}] = slope；N[{b}, {a}]（转置的位置）碰到的是 q~ 和 k~ 的 0")),
            (-want, tr(f"wrong sign: your bias is +slope * (m - n), which grows with the distance m - n and rewards "
                       f"far keys; ALiBi's is -slope * (m - n), N[{a}, {b}] = +slope",
                       f"符号反了：你的偏置是 +slope * (m - n)，随距离 m - n 增大，偏向远处的键；ALiBi 的是 "
                       f"-slope * (m - n)，N[{a}, {b}] = +slope")),
            (_bias_of(alibi_generator(dim, 1.0), q, k), ignored("slope", slope, 1)),
            (torch.sinh(want),
             tr("your N is symmetric (slope at both [d, d+1] and [d+1, d]): N @ N != 0, so exp(t N) is not I + t N "
                "and the bias is sinh(slope * (n - m)), not linear in the distance. Keep one entry: N nilpotent",
                "你的 N 是对称的（[d, d+1] 和 [d+1, d] 都是 slope）：N @ N != 0，于是 exp(t N) 不等于 I + t N，"
                "偏置是 sinh(slope * (n - m))，不随距离线性变化。只留一个元素：N 要幂零")),
            *[(_bias_of(scalar_generator(dim + 2, lam), q, k),
               tr(f"that is a scalar generator {lam:g} * I: it multiplies the score by exp({lam:g} * (n - m)); ALiBi "
                  f"adds a bias, which needs a nilpotent N on the lifted coordinates",
                  f"这是标量生成元 {lam:g} * I：它把分数乘以 exp({lam:g} * (n - m))；ALiBi 是加上一个偏置，"
                  "这要在提升出来的坐标上用幂零的 N")) for lam in (slope, -slope)],
        ], lambda g, w: same(g, w, atol=1e-9))
        gap = float((bias - want).abs().max())
        raise ExerciseError(tr(f"for dim = {dim}, slope = {slope}: N adds a bias that differs from slope * (n - m) "
                               f"by up to {gap:.3g}",
                               f"dim = {dim}、slope = {slope} 时：N 加上的偏置与 slope * (n - m) 最多相差 {gap:.3g}"))
    ok(tr("N = slope * e_d e_(d+1)^T, nilpotent: exp(n N) k~ = [k, slope n, 1], exp(-m N^T) q~ = [q, 1, -slope m], "
          "and the score is q.k - slope * (m - n), ALiBi's causal bias.",
          "N = slope * e_d e_(d+1)^T，幂零：exp(n N) k~ = [k, slope n, 1]，exp(-m N^T) q~ = [q, 1, -slope m]，"
          "分数是 q.k - slope * (m - n)，正是 ALiBi 的因果偏置。"))


# ------------------------------------------------------------------------------- 14.2 relative under the same action
def _dense_skew(dim: int) -> torch.Tensor:
    A = torch.randn(dim, dim, generator=torch.Generator().manual_seed(142), dtype=torch.float64)
    return 0.2 * (A - A.T)


GENERATOR_CHOICES: dict = {  # letter -> (what it is, the (4, 4) float64 generator M)
    "A": (Text("RoPE's S (4 dims, base 100)", "RoPE 的 S（4 维，底数 100）"), rope_generator(4, base=100.0)),
    "B": (Text("a decay, -0.1 * I", "衰减，-0.1 * I"), scalar_generator(4, -0.1)),
    "C": (Text("xPos's generator (scale_base 8)", "xPos 的生成元（scale_base 8）"), xpos_generator(4, scale_base=8.0)),
    "D": (Text("the zero matrix", "零矩阵"), torch.zeros(4, 4, dtype=torch.float64)),
    "E": (Text("a dense matrix with E^T = -E", "一个满足 E^T = -E 的稠密矩阵"), _dense_skew(4)),
    "F": (Text("ALiBi's nilpotent N on 2 dims lifted to 4", "ALiBi 的幂零 N（2 维提升到 4 维）"),
          alibi_generator(2, 0.5)),
}


def _relative_under_same_action(M: torch.Tensor) -> bool:
    """Whether exp(mM)q . exp(nM)k is a function of n - m, measured on random q, k at positions 0 .. 7."""
    gen = torch.Generator().manual_seed(7)
    q, k = torch.randn(M.shape[0], generator=gen, dtype=torch.float64), torch.randn(M.shape[0], generator=gen,
                                                                                       dtype=torch.float64)
    scores = generator_scores(q.expand(8, -1), k.expand(8, -1), M, action="same")
    return diagonal_spread(scores) < 1e-9 * max(1.0, float(scores.abs().max()))


def _letters(answer) -> set:
    if isinstance(answer, str):
        answer = [c for c in answer.upper() if c.isalpha()]
    if not isinstance(answer, (set, frozenset, list, tuple)) or not all(isinstance(a, str) for a in answer):
        raise ExerciseError(tr(f"return the letters of the generators, e.g. {{'A', 'B'}}, got {type(answer).__name__}",
                               f"请返回生成元的字母，例如 {{'A', 'B'}}，实际返回的是 {type(answer).__name__}"))
    letters = {a.strip().upper() for a in answer}
    unknown = sorted(letters - set(GENERATOR_CHOICES))
    if unknown:
        raise ExerciseError(tr(f"unknown letters {unknown}: the choices are {sorted(GENERATOR_CHOICES)}",
                               f"未知的字母 {unknown}：可选的是 {sorted(GENERATOR_CHOICES)}"))
    return letters


_WHY_NOT = {  # a letter wrongly included -> why its same-action scores are not relative
    "B": Text("B (a decay) is not relative under the same action: the score is exp(-0.1 (m + n)) q.k, which "
            "depends on m + n; a decay is relative only under the inverse-transpose action",
            "B（衰减）在同一作用下不是相对的：分数是 exp(-0.1 (m + n)) q.k，取决于 m + n；"
            "衰减只有在逆转置作用下才是相对的"),
    "C": Text("C (xPos) is not relative under the same action: its rotation part is, but its decay gives "
            "zeta ** ((m + n) / scale_base); xPos needs the inverse on the keys (torchscale downscales them)",
            "C（xPos）在同一作用下不是相对的：旋转部分是，但衰减部分给出 zeta ** ((m + n) / scale_base)；"
            "xPos 需要对键用逆（torchscale 把键缩小）"),
    "F": Text("F (ALiBi's N) is not relative under the same action: the query [q, 1, 0] is left as it is and the key "
            "becomes [k, slope n, 1], so the score is q.k + slope * n, a function of n alone",
            "F（ALiBi 的 N）在同一作用下不是相对的：查询 [q, 1, 0] 不变，键变成 [k, slope n, 1]，"
            "分数是 q.k + slope * n，只取决于 n"),
}
_WHY_SO = {  # a letter wrongly left out -> why it is relative
    "A": Text("A (RoPE) is relative: S is skew-symmetric, so exp(mS)^T exp(nS) = exp((n - m) S)",
            "A（RoPE）是相对的：S 是反对称的，所以 exp(mS)^T exp(nS) = exp((n - m) S)"),
    "D": Text("D (M = 0, NoPE) is relative too: 0 is skew-symmetric and the score q.k is the same at every (m, n), "
            "a function of n - m (a constant one)",
            "D（M = 0，NoPE）也是相对的：0 是反对称的，分数 q.k 在每个 (m, n) 都一样，是 n - m 的函数（常数函数）"),
    "E": Text("E is relative too: any skew-symmetric M gives exp(mM)^T = exp(-mM), not only RoPE's 2 x 2 blocks "
            "(a dense skew M turns all dims together)",
            "E 也是相对的：任何反对称的 M 都有 exp(mM)^T = exp(-mM)，不只是 RoPE 的 2 x 2 块（稠密的反对称 M "
            "把所有维度一起转）"),
}


def check_relative_generators(fn) -> None:
    """fn(choices) -> the letters (a set, list or string) of the generators in `choices` (GENERATOR_CHOICES:
    letter -> (what it is, M)) whose scores exp(mM)q . exp(nM)k depend on n - m only, for every q and k."""
    choices = {name: (what, M.clone()) for name, (what, M) in GENERATOR_CHOICES.items()}
    got = _letters(call(fn, choices, what=tr("your function", "你的函数")))
    right = {name for name, (_, M) in GENERATOR_CHOICES.items() if _relative_under_same_action(M)}
    if got == right:
        ok(tr(f"{', '.join(sorted(right))}: the skew-symmetric ones. Under the same action only M^T = -M gives "
              "relative scores; the others need the inverse-transpose action.",
              f"{', '.join(sorted(right))}：反对称的那几个。同一作用下只有 M^T = -M 给出相对分数；"
              "其他的要用逆转置作用。"))
        return
    for letter in sorted(got - right):
        if letter in _WHY_NOT:
            raise ExerciseError(str(_WHY_NOT[letter]))
    for letter in sorted(right - got):
        if letter in _WHY_SO:
            raise ExerciseError(str(_WHY_SO[letter]))
    raise ExerciseError(tr(f"not those: {sorted(got)}", f"不是这些：{sorted(got)}"))


# ------------------------------------------------------------------------------- reference solutions
def _solution_alibi_generator(dim, slope):
    N = torch.zeros(dim + 2, dim + 2, dtype=torch.float64)
    N[dim, dim + 1] = slope  # q~'s 1 (coordinate dim) meets k~'s 1 (coordinate dim + 1): N @ N = 0
    return N


def _solution_relative_generators(choices):
    return {name for name, (_, M) in choices.items() if torch.allclose(M, -M.T)}  # skew-symmetric


SOLUTIONS: dict = {
    "alibi_generator": _solution_alibi_generator,
    "relative_generators": _solution_relative_generators,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}
