"""Exercise of notebook 14, section 2 (positions that depend on the content): CoPE's positions from its gates.

check_cope_positions(answer) calls the learner's function on a few gate matrices, prints one line starting with
"✓" when it is right, and otherwise raises ExerciseError naming the mistake (a count that runs from the first
token instead of from the key, keys after the query counted, the key's or the query's own gate left out, the
sum taken over the queries). SOLUTIONS[name] is a reference solution; CHECKS[name] the checker. The right
answer is what posenc_lib.content.CoPE.positions computes (without its cap), which tests/test_content.py
checks against a per-token loop.
"""
from __future__ import annotations

import torch

from ..i18n import tr
from ._common import ExerciseError, as_tensor, attempt, call, keep_dtype, name_the_mistake, ok, same

__all__ = ["attempt", "check_cope_positions"]


def _lower(t: torch.Tensor) -> torch.Tensor:
    """The entries j <= i of a (T, T) matrix (the ones a causal query sees), flattened."""
    return t[torch.ones(t.shape, dtype=torch.bool).tril()]


def _from_the_key(gates: torch.Tensor, *, causal=True, skip_key=False, skip_query=False) -> torch.Tensor:
    """sum over l of gates[i, l] for l from j (j + 1 if skip_key) to i (i - 1 if skip_query; the last key if not
    causal)."""
    T = gates.shape[-1]
    query, key = torch.arange(T)[:, None], torch.arange(T)[None, :]
    keep = (key <= query - int(skip_query)) if causal else torch.ones(T, T, dtype=torch.bool)
    counted = (gates * keep).flip(-1).cumsum(-1).flip(-1)                      # sum over l >= j
    return counted - gates * keep if skip_key else counted


def check_cope_positions(fn) -> None:
    """fn(gates) -> (T, T) positions: gates[i, l] = sigmoid(q_i . k_l / sqrt(d)) for every query i and key l (the
    keys after the query too: masking them is part of the task). p[i, j] = gates[i, j] + gates[i, j + 1] + ... +
    gates[i, i], the number of selected tokens from key j to query i. Entries j > i are not checked (the causal
    mask hides them)."""
    gen = torch.Generator().manual_seed(143)
    for T in (6, 9):
        gates = torch.rand(T, T, generator=gen, dtype=torch.float64)
        before = gates.clone()
        answer = call(fn, gates, what=tr("your function", "你的函数"))
        got = as_tensor(answer, tr("your positions", "你的位置"))
        if not torch.equal(gates, before):
            raise ExerciseError(tr("your function changed `gates` in place (a masked_fill_, +=, or an assignment "
                                   "into it): compute on a copy and return a new tensor",
                                   "你的函数原地改动了 `gates`（masked_fill_、+= 或对它赋值）：请在副本上计算，"
                                   "返回新的张量"))
        want = _from_the_key(gates)
        if tuple(got.shape) != (T, T):
            raise ExerciseError(tr(f"expected one position per (query, key) pair, shape ({T}, {T}), got "
                                   f"{tuple(got.shape)}",
                                   f"每个（查询，键）对应一个位置，形状应为 ({T}, {T})，得到的是 {tuple(got.shape)}"))
        if same(_lower(got), _lower(want), atol=1e-6):
            if isinstance(answer, torch.Tensor):                                # (a list has no dtype to keep)
                keep_dtype(got, gates, tr("your function", "你的函数"), name="gates")
            continue
        forward = gates.cumsum(-1)            # sum over l = 0 .. j (a mask changes nothing there: j <= i)
        name_the_mistake(_lower(got), [(_lower(w), m) for w, m in (
            (_from_the_key(gates, causal=False),
             tr("you counted the keys after the query too: gates[i, l] for l > i belong to tokens the query cannot "
                "see; mask them (l <= i) before summing",
                "你把查询之后的键也数进去了：l > i 的 gates[i, l] 属于查询看不到的 token；"
                "求和前先把它们屏蔽（l <= i）")),
            (forward,
             tr("your count runs from the first token up to key j (a cumsum from the start): CoPE counts from key j "
                "up to the query i, so sum from the end (flip, cumsum, flip) over the keys j..i",
                "你的计数是从第一个 token 数到键 j（从开头做 cumsum）：CoPE 是从键 j 数到查询 i，"
                "所以要从末尾往前累加（flip、cumsum、flip），范围是键 j..i")),
            (_from_the_key(gates, skip_key=True),
             tr("you left out key j's own gate: p[i, j] sums l = j .. i, key j included (so p > 0 for every key "
                "the query sees)",
                "你漏掉了键 j 自己的门：p[i, j] 的求和范围是 l = j .. i，包括键 j"
                "（所以查询看得到的每个键都有 p > 0）")),
            (_from_the_key(gates, skip_query=True),
             tr("you left out the query's own token (l = i): the sum runs to l = i inclusive",
                "你漏掉了查询自己的 token（l = i）：求和要一直加到 l = i（包括在内）")),
            (_from_the_key(gates.T).T,
             tr("you summed over the queries (dim 0) instead of the keys: each row i is one query, and its "
                "positions sum that row's gates over the keys",
                "你是沿查询方向（第 0 维）求和的，而不是沿键的方向：每一行 i 是一个查询，"
                "它的位置是对这一行的门沿键求和")),
        )])
        gap = float((_lower(got) - _lower(want)).abs().max())
        raise ExerciseError(tr(f"for T = {T} your positions differ from sum_(l=j..i) gates[i, l] (largest gap "
                               f"{gap:.3g})",
                               f"T = {T} 时，你的位置和 sum_(l=j..i) gates[i, l] 不同（最大差 {gap:.3g}）"))
    ok(tr("p[i, j] counts the selected tokens from key j to query i: with every gate 1 it is i - j + 1, the "
          "ordinary distance; with gates that open on full stops it counts sentences.",
          "p[i, j] 数的是从键 j 到查询 i 之间被选中的 token：门全为 1 时就是 i - j + 1，即普通的距离；"
          "门只在句号处打开时，它数的是句子。"))


def _solution_cope_positions(gates):
    T = gates.shape[-1]
    seen = torch.ones(T, T, dtype=torch.bool, device=gates.device).tril()   # key l <= query i
    return (gates * seen).flip(-1).cumsum(-1).flip(-1)                      # sum over l = j .. i


SOLUTIONS: dict = {
    "cope_positions": _solution_cope_positions,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}
