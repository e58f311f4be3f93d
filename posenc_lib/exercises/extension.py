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
from ..encoding_rules import rule_report
from ..experiments import summarize
from ..experiments.own_encoding import experiment_config
from ..i18n import tr
from ..scaling import rope_inv_freq
from ._common import FAR_POSITION, ExerciseError, attempt, call, ignored, number, ok, refuse_low_precision, same, tensor

__all__ = ["attempt", "check_last_positions_loss", "check_rise", "check_encoding_rules", "check_pi_inv_freq",
           "check_ntk_base"]


def _diagnose(value: float, candidates, prefix: str, fallback: str, **tolerance):
    """Raise ExerciseError: prefix + the message of the first (wrong value, message) candidate that
    `value` matches (math.isclose with `tolerance`), or prefix + fallback when none does."""
    hint = next((hint for wrong, hint in candidates if math.isclose(value, wrong, **tolerance)), None)
    raise ExerciseError(f"{prefix}{tr(': ', '：')}{hint or fallback}")


def _theta(dim: int, base: float = 10000.0) -> torch.Tensor:
    """Plain RoPE's frequencies theta_i = base ** (-2i/dim), float64."""
    return rope_inv_freq(dim, base=base)[0]


# ------------------------------------------------------------------------------- 07: extrapolation

def check_last_positions_loss(last_positions_loss) -> None:
    """last_positions_loss(nll, L) -> mean of nll (windows, n) over the LAST L positions of every window. Tried
    with (5, 40) and L = 8, then (3, 24) and L = 5, so an L or a size fixed in the code is named."""
    gen = torch.Generator().manual_seed(7)
    for windows, n, L in ((5, 40, 8), (3, 24, 5)):
        nll = torch.rand(windows, n, generator=gen, dtype=torch.float64) + torch.linspace(0, 3, n, dtype=torch.float64)
        _last_positions_loss_on(last_positions_loss, nll, L)
    ok(tr("the mean over the last L positions: the same characters are scored at every window length",
          "对最后 L 个位置取平均：无论窗口多长，打分的都是同一批字符"))


def _last_positions_loss_on(last_positions_loss, nll: torch.Tensor, L: int) -> None:
    what = f"last_positions_loss(nll, {L})"
    before = nll.clone()
    got = number(call(last_positions_loss, nll, L, what=what), what)
    if not torch.equal(nll, before):
        raise ExerciseError(tr("your function changed the caller's nll tensor in place; compute on a copy (or without "
                               "in-place ops)",
                               "你的函数原地改动了调用方传进来的 nll 张量：请在副本上计算（或者不用原地操作）"))
    right = float(nll[:, -L:].mean())
    if math.isclose(got, right, rel_tol=1e-6, abs_tol=1e-6):  # float32 answers are right too
        return
    hints = [
        (float(nll[:, -8:].mean()), ignored("L", L, 8)),
        (float(nll[:, :L].mean()), tr("you scored the FIRST L positions: in a longer window those are the positions "
                                      "the model saw in training, so every length would give the same number",
                                      "你算的是最前面 L 个位置，而窗口再长，这些也都是模型训练时见过的位置，"
                                      "所以每种长度都会得到同一个数")),
        (float(nll.mean()), tr("you averaged over all n positions: a longer window then mixes short-context positions "
                               "with long ones, and the lengths are no longer compared on the same characters",
                               "你对全部 n 个位置取了平均：窗口一长，短上下文的位置和长上下文的位置就混在一起，"
                               "各长度比较的不再是同一批字符")),
        (float(nll[:, -L:].sum()), tr("that is the sum over the last L positions of all windows, not the mean",
                                      "这是所有窗口最后 L 个位置的总和，不是平均值")),
        (float(nll[:, -L:].mean(0).sum()), tr("you summed over positions after averaging over windows: take the mean "
                                              "of both",
                                              "你先对窗口取平均，再对位置求和了：两个维度都要取平均")),
        (float(nll[:, -L - 1:-1].mean()), tr("off by one: nll[:, -L:] is the last L positions, you skipped the very "
                                             "last",
                                             "差了一位：nll[:, -L:] 才是最后 L 个位置，你漏掉了最后那一个")),
        *[(float(nll[:, -(L + off):].mean()), tr(f"off by one: you averaged the last {L + off} positions; "
                                                 f"nll[:, -L:] is the last L = {L}",
                                                 f"差了一位：你平均的是最后 {L + off} 个位置；nll[:, -L:] 才是最后 "
                                                 f"L = {L} 个")) for off in (1, -1)],
        (float(nll[0, -L:].mean()), tr("you used only the first window; average over every window",
                                       "你只用了第一个窗口；要对所有窗口取平均")),
    ]
    _diagnose(got, hints, tr(f"{what}: got {got:.4f}, expected {right:.4f}",
                             f"{what}：得到 {got:.4f}，应为 {right:.4f}"),
              tr("nll[:, -L:].mean() is the mean over the last L positions",
                 "最后 L 个位置的平均是 nll[:, -L:].mean()"),
              rel_tol=1e-6, abs_tol=1e-6)


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
        what = f"rise(results, {multiple})"
        got = call(rise, results, multiple, what=what)
        if not isinstance(got, dict):
            raise ExerciseError(tr(f"rise should return a dict encoding -> number or None, got {type(got).__name__}",
                                   f"rise 应返回一个 dict（编码 -> 数值或 None），得到的是 {type(got).__name__}"))
        missing = sorted(set(results["summary"]) - set(got))
        if missing:
            raise ExerciseError(tr(f"rise(results, {multiple}) has no entry for {missing}: give every encoding a key "
                                   "(None when it has no value at that length)",
                                   f"rise(results, {multiple}) 里缺了 {missing}：每种编码都要有一个键"
                                   f"（在该长度下没有值就填 None）"))
        for enc, row in results["summary"].items():
            value = got[enc]
            if row[str(multiple)] is None:
                if value is not None and not (isinstance(value, float) and math.isnan(value)):
                    raise ExerciseError(tr(f"{enc} has no loss at {multiple}L (a learned table has no row past L), so "
                                           f"its rise is None, not {value!r}",
                                           f"{enc} 在 {multiple}L 处没有损失（可学习的位置表在 L 之后没有行），"
                                           f"所以它的 rise 是 None，而不是 {value!r}"))
                if value is not None:
                    raise ExerciseError(tr(f"{enc}: use None, not NaN, for 'no value' (NaN compares false with "
                                           "everything and sorts unpredictably)",
                                           f"{enc}：“没有值”要用 None 表示，不要用 NaN（NaN 和谁比较都为假，"
                                           "排序结果也没法预料）"))
                continue
            if value is None:
                raise ExerciseError(tr(f"{enc} has losses at L and {multiple}L, so its rise is a number, not None",
                                       f"{enc} 在 L 和 {multiple}L 处都有损失，所以它的 rise 是一个数，不是 None"))
            value = number(value, f"rise(results, {multiple})[{enc!r}]")
            runs = [r["loss"] for r in results["runs"] if r["encoding"] == enc]
            mean_l = sum(r["1"] for r in runs) / len(runs)
            mean_m = sum(r[str(multiple)] for r in runs) / len(runs)
            right = mean_m - mean_l
            if math.isclose(value, right, abs_tol=1e-6):
                continue
            hints = [(mean_l - mean_m, tr("the sign is flipped: rise = loss at the longer length minus loss at L",
                                          "符号反了：rise = 较长长度处的损失减去 L 处的损失")),
                     (mean_m / mean_l, tr("that is a ratio; the rise is the difference of the two losses (in "
                                          "nats/char)",
                                          "这是比值；rise 是两个损失之差（单位 nats/char）")),
                     (runs[0][str(multiple)] - runs[0]["1"], tr("that is seed 0 only; average over every seed first",
                                                                "这只是种子 0 的结果；要先对所有种子取平均")),
                     (mean_m, tr(f"that is the loss at {multiple}L itself; subtract the loss at L",
                                 f"这是 {multiple}L 处的损失本身；还要减去 L 处的损失")),
                     ((mean_m - mean_l) / mean_l, tr("that is the rise relative to the loss at L (a fraction); the "
                                                     "rise is the difference itself, in nats/char",
                                                     "这是相对于 L 处损失的涨幅（一个比例）；rise 是差值本身，"
                                                     "单位 nats/char")),
                     ((mean_m - mean_l) * len(runs), tr(f"that is summed over the {len(runs)} seeds; average them "
                                                        "(divide by the number of seeds)",
                                                        f"这是 {len(runs)} 个种子的总和；要取平均（除以种子个数）")),
                     *([(mean_m - sum(r[str(multiple // 2)] for r in runs) / len(runs),
                         tr(f"that is the rise from {multiple // 2}L, the length before; the rise is always "
                            "measured from L (key \"1\")",
                            f"这是从前一个长度 {multiple // 2}L 起算的涨幅；rise 总是从 L（键 \"1\"）起算"))]
                       if multiple > 2 else [])]
            _diagnose(value, hints, tr(f"{enc} at {multiple}L: got {value:.4f}, expected {right:.4f}",
                                       f"{enc} 在 {multiple}L 处：得到 {value:.4f}，应为 {right:.4f}"),
                      tr(f"the mean over seeds at {multiple}L minus the mean over seeds at L",
                         f"正确值是 {multiple}L 处各种子的平均损失减去 L 处各种子的平均损失"), abs_tol=1e-6)
    ok(tr("rise = mean loss at mL minus mean loss at L, None where an encoding has no value",
          "rise = mL 处的平均损失减去 L 处的平均损失；某种编码没有值时为 None"))


def check_encoding_rules(encoding) -> None:
    """encoding: your PositionalEncoding subclass (or a function config -> encoding, or an instance).
    Does it keep the protocol's rules before it is trained? At least one hook; shapes, dtype and device
    kept (the meta device stands in for a GPU); its inputs left alone; and position t never sees a later
    position (hook by hook, then through a causal TinyLM). Each problem names the rule and the hook
    (posenc_lib.encoding_rules has the details). Built with the experiment's sizes, as it will be trained."""
    report = rule_report(encoding, experiment_config())
    problems = report["problems"]
    if problems:
        rules = tr("rule", "条规则") if len(problems) == 1 else tr("rules", "条规则")
        raise ExerciseError(tr(f"{report['name']} breaks {len(problems)} {rules}:\n  ",
                               f"{report['name']} 违反了 {len(problems)} {rules}：\n  ") + "\n  ".join(problems))
    ok(tr(f"{report['name']} ({', '.join(report['hooks'])}) keeps every rule: shapes, dtype, device (meta), inputs "
          "untouched, and position t sees only positions <= t, hook by hook and through a causal TinyLM",
          f"{report['name']}（{', '.join(report['hooks'])}）遵守了每一条规则：形状、dtype、device（meta）不变，"
          f"输入原样未动，位置 t 只看得到 <= t 的位置，逐个钩子检查和放进因果 TinyLM 检查都成立"))


# --------------------------------------------------------------------------- 08: context extension

def check_pi_inv_freq(pi_inv_freq) -> None:
    """pi_inv_freq(dim, factor, base=10000.0) -> (dim/2,) frequencies of linear position interpolation; tried
    with base 10000 and with Llama 3's 500000, so an ignored `base` is named."""
    far = 0.0  # the largest angle error of a right answer at position FAR_POSITION: float32 frequencies get a note
    for dim, factor, base in ((16, 4.0, 10000.0), (64, 2.0, 10000.0), (8, 8.0, 10000.0), (16, 4.0, 500000.0)):
        what = f"pi_inv_freq({dim}, {factor}, base={base:g})"
        got = tensor(call(pi_inv_freq, dim, factor, base=base, what=what), what)
        right = _theta(dim, base) / factor
        refuse_low_precision(got, right, what, lambda gap, right=right: tr(
            f"At position 32,768 that turns the slowest pair by {gap * 32768 * float(right[-1]):.2g} rad too much "
            f"or too little. Compute theta in float32 or float64 (RoPE's inv_freq is a float32 buffer even in a "
            f"bf16 model)",
            f"到位置 32,768 时，最慢那一对的角度要偏 {gap * 32768 * float(right[-1]):.2g} 弧度。theta 要用 float32 "
            f"或 float64 计算（即使在 bf16 模型里，RoPE 的 inv_freq 也是 float32 的缓冲区）"))
        got = got.double()
        if same(got, right, 1e-6):
            far = max(far, FAR_POSITION * float((got - right).abs().max()))
            continue
        if tuple(got.shape) == (dim,):
            raise ExerciseError(tr(f"shape {tuple(got.shape)}: RoPE has one frequency per PAIR, dim/2 = {dim // 2} of "
                                   "them",
                                   f"形状是 {tuple(got.shape)}：RoPE 是每一对维度一个频率，共 dim/2 = {dim // 2} 个"))
        if tuple(got.shape) != (dim // 2,):
            raise ExerciseError(tr(f"pi_inv_freq({dim}, {factor}) should have shape ({dim // 2},), got "
                                   f"{tuple(got.shape)}",
                                   f"pi_inv_freq({dim}, {factor}) 的形状应为 ({dim // 2},)，"
                                   f"得到的是 {tuple(got.shape)}"))
        hints = [
            (_theta(dim) / factor, ignored("base", f"{base:g}", 10000)),
            (_theta(dim, base) * factor, tr("you multiplied theta by the factor: positions would turn FASTER, pushing "
                                      "angles even further out of the trained range; PI divides",
                                      "你把 theta 乘上了缩放因子：位置会转得更快，角度离训练范围更远；PI 是除以因子")),
            (_theta(dim, base), tr("these are the plain RoPE frequencies: divide every one by the factor",
                             "这是未缩放的 RoPE 频率：每一个都要除以因子")),
            (_theta(dim, base * factor ** (dim / (dim - 2))), tr("you changed the base: that is NTK-aware scaling "
                                                                    "(high frequencies kept); PI divides EVERY "
                                                                    "theta_i by the factor",
                                                                    "你改的是底数，那是 NTK-aware 缩放（保留高频）；"
                                                                    "PI 是把每一个 theta_i 都除以因子")),
            (base ** (-torch.arange(dim // 2, dtype=torch.float64) / dim) / factor,
             tr("wrong exponent: theta_i = base ** (-2i/dim) for pair i, not base ** (-i/dim)",
                "指数错了：第 i 对的 theta_i = base ** (-2i/dim)，不是 base ** (-i/dim)")),
            (1 / _theta(dim, base) / factor,
             tr("the exponent's sign: theta_i = base ** (-2i/dim), at most 1 radian per position; you used "
                "base ** (+2i/dim), the wavelengths' growth without the 2*pi",
                "指数的符号错了：theta_i = base ** (-2i/dim)，每个位置最多转 1 弧度；你用的是 base ** (+2i/dim)，"
                "那是波长的增长方式（还少了 2*pi）")),
        ]
        for wrong, hint in hints:
            if same(got, wrong, 1e-6):
                raise ExerciseError(tr(f"{what}: {hint}", f"{what} 有误：{hint}"))
        raise ExerciseError(tr(f"{what} differs from base ** (-2i/dim) / factor by up to "
                               f"{float((got - right).abs().max()):.3g}",
                               f"{what} 与 base ** (-2i/dim) / factor "
                               f"最多相差 {float((got - right).abs().max()):.3g}"))
    note = "" if far <= 1e-9 else tr(
        f" Note: your frequencies look float32: right here, but at position {FAR_POSITION:,} they turn a pair up to "
        f"{far:.1g} rad off, more further out; the task asks for float64.",
        f"注意：你的频率看来是 float32：在这里没问题，但到位置 {FAR_POSITION:,} 时，"
        f"会让某一对的角度偏到 {far:.1g} 弧度，位置越远偏得越多；题目要求用 float64。")
    ok(tr("PI divides every frequency by the factor: position m at the new length turns like m / factor did in "
          "training.",
          "PI 把每个频率都除以因子：在新长度下，位置 m 转过的角度和训练时位置 m / factor 的一样。") + note)


def check_ntk_base(ntk_base) -> None:
    """ntk_base(base, factor, dim) -> the NTK-aware base whose LOWEST frequency is theta_low / factor."""
    for base, factor, dim in ((10000.0, 4.0, 16), (10000.0, 8.0, 128), (500000.0, 2.0, 64)):
        what = f"ntk_base({base:g}, {factor:g}, {dim})"
        got = number(call(ntk_base, base, factor, dim, what=what), what)
        right = base * factor ** (dim / (dim - 2))
        if math.isclose(got, right, rel_tol=1e-6):
            continue
        lowest = lambda b, dim=dim: b ** (-(dim - 2) / dim)  # noqa: E731  the lowest frequency theta_{dim/2-1}
        hints = [
            (base * factor, tr("base * factor divides the lowest frequency by only factor^((d-2)/d) = "
                               f"{factor ** ((dim - 2) / dim):.3f}, not by the factor; the exponent must be d/(d-2)",
                               f"base * factor 只让最低频率除以 factor^((d-2)/d) = "
                               f"{factor ** ((dim - 2) / dim):.3f}，而不是除以 factor；指数应为 d/(d-2)")),
            (base / factor, tr("dividing the base makes every frequency FASTER; NTK-aware scaling makes the base "
                               "larger",
                               "底数除以因子会让每个频率都变快；NTK-aware 缩放是把底数调大")),
            (base * factor ** ((dim - 2) / dim), tr("exponent upside down: (d-2)/d should be d/(d-2)",
                                                    "指数上下颠倒了：(d-2)/d 应为 d/(d-2)")),
            (10000.0 * factor ** (dim / (dim - 2)), ignored("base", f"{base:g}", 10000)),
            ((base * factor) ** (dim / (dim - 2)), tr("the exponent d/(d-2) applies to the factor only: "
                                                      "base * factor ** (d/(d-2)); you raised base * factor to it",
                                                      "指数 d/(d-2) 只作用在因子上：base * factor ** (d/(d-2))；"
                                                      "你把 base * factor 整个取了这个幂")),
            (base * factor ** 2, tr("factor squared is not it: solve base'^(-(d-2)/d) = base^(-(d-2)/d) / factor for "
                                    "base'",
                                    "不是因子的平方：应从 base'^(-(d-2)/d) = base^(-(d-2)/d) / factor 解出 base'")),
        ]
        _diagnose(got, hints, f"ntk_base({base:g}, {factor:g}, {dim}) = {got:.6g}",
                  tr(f"expected {right:.6g}; the lowest frequency becomes {lowest(got):.3g} instead of "
                     f"{lowest(base) / factor:.3g}",
                     f"应为 {right:.6g}；按你的底数，最低频率变成 {lowest(got):.3g}，而不是 "
                     f"{lowest(base) / factor:.3g}"), rel_tol=1e-6)
    ok(tr("base' = base * factor^(d/(d-2)): the lowest frequency is interpolated by the factor, the highest barely "
          "moves",
          "base' = base * factor^(d/(d-2))：最低频率按因子做了插值，最高频率几乎不动"))


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
