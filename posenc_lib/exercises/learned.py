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
from ..i18n import tr
from ._common import ExerciseError, as_tensor, attempt, call, keep_dtype, name_the_mistake, ok, same, your_line

__all__ = ["attempt", "check_cosine_similarity", "check_lag_targets", "check_safe_lookup"]


def check_cosine_similarity(fn) -> None:
    """fn(table (T, d)) -> (T, T) cosine similarity of every pair of ROWS (positions)."""
    gen = torch.Generator().manual_seed(4)
    table = (torch.randn(6, 10, generator=gen, dtype=torch.float64)
             * torch.linspace(0.5, 3.0, 6, dtype=torch.float64)[:, None])
    before = table.clone()
    got = as_tensor(call(fn, table, what=tr("your function", "你的函数")), tr("your function", "你的函数"))
    if not torch.equal(table, before):
        raise ExerciseError(tr("your function changed the table in place (e.g. table /= norm): work on a copy",
                               "你的函数原地修改了 table（比如 table /= norm）：请在副本上操作"))
    want = position_similarity(table)
    if got.shape == (10, 10):
        raise ExerciseError(tr("the result is (dim, dim): you compared columns (dimensions) rather than rows "
                               "(positions). Normalise each row and take P @ P.T",
                               "结果是 (dim, dim)：你比较的是列（维度），而不是行（位置）。"
                               "先把每一行归一化，再算 P @ P.T"))
    if got.shape == (6,) and same(got, torch.ones(6, dtype=torch.float64), atol=1e-5):
        raise ExerciseError(tr("you returned 6 ones: F.cosine_similarity(P, P) compares row i with row i only. "
                               "Compare every row with every row: F.cosine_similarity(P[:, None], P[None], dim=-1), or "
                               "normalise the rows and take P @ P.T",
                               "你返回的是 6 个 1：F.cosine_similarity(P, P) 只把第 i 行和第 i 行比较。要让每一行和"
                               "每一行比较：F.cosine_similarity(P[:, None], P[None], dim=-1)，或者先把各行归一化，"
                               "再算 P @ P.T"))
    if got.shape != want.shape:
        raise ExerciseError(tr(f"expected shape (T, T) = {tuple(want.shape)}, got {tuple(got.shape)}",
                               f"形状应为 (T, T) = {tuple(want.shape)}，实际是 {tuple(got.shape)}"))
    norms = table.norm(dim=-1)
    name_the_mistake(got.double(), [
        ((table @ table.T) / norms[None, :] ** 2,
         tr("your diagonal is 1 but the matrix is not symmetric: entry [i, j] was divided by |P_j|^2, not by "
            "|P_i| |P_j|. With norms of shape (T,), norms * norms.T is norms squared (.T does nothing to a 1-D "
            "tensor); use norms[:, None] * norms[None, :] (or keepdim=True)",
            "你的对角线是 1，但矩阵不对称：第 [i, j] 个元素除以的是 |P_j|^2，而不是 |P_i| |P_j|。norms 的形状是 "
            "(T,) 时，norms * norms.T 就是 norms 的平方（.T 对一维张量不起作用）；应写 "
            "norms[:, None] * norms[None, :]（或用 keepdim=True）")),
        ((table @ table.T) / norms[:, None],
         tr("you divided by one norm only (row i's): the cosine divides the dot product by BOTH norms, "
            "|P_i| |P_j|", "你只除了一个范数（第 i 行的）：余弦要把点积除以两个范数 |P_i| |P_j|")),
        ((table @ table.T) / norms[None, :],
         tr("you divided by one norm only (row j's): the cosine divides the dot product by BOTH norms, "
            "|P_i| |P_j|", "你只除了一个范数（第 j 行的）：余弦要把点积除以两个范数 |P_i| |P_j|")),
    ])
    if same(got, table @ table.T):
        raise ExerciseError(tr("these are raw dot products: divide by both rows' norms (cosine similarity), "
                               "otherwise long vectors look 'similar' to everything",
                               "这是未归一化的点积：要除以两行各自的范数（即余弦相似度），"
                               "否则长向量看起来和谁都“相似”"))
    columns = F.normalize(table, dim=0)
    if same(got, columns @ columns.T):
        raise ExerciseError(tr("you normalised each column (dim=0); normalise each row (dim=-1): one row = one "
                               "position",
                               "你归一化的是每一列（dim=0）；应归一化每一行（dim=-1）：一行就是一个位置"))
    for scores, what in ((want, tr("the cosines", "余弦")), (table @ table.T, tr("the dot products", "点积"))):
        if same(got, scores.softmax(-1), atol=1e-5):
            raise ExerciseError(tr(f"you took a softmax over {what}: that turns the similarity into attention weights "
                                   "(rows summing to 1), and the similarity matrix is not attention (it is symmetric "
                                   "and largest at i = j; attention ranks keys with W_q != W_k). Return the cosines "
                                   "themselves",
                                   f"你对{what}做了 softmax：这就把相似度变成了注意力权重（每行之和为 1）。相似度矩阵"
                                   "不是注意力（它是对称的，在 i = j 处最大；注意力用 W_q != W_k 给键排序）。"
                                   "直接返回余弦本身"))
    if not same(got.diagonal(), torch.ones(6, dtype=torch.float64), atol=1e-5):
        raise ExerciseError(tr(f"the diagonal must be all 1 (every position is identical to itself), got "
                               f"{got.diagonal().double().tolist()}",
                               f"对角线必须全为 1（每个位置和自己完全相同），实际是 "
                               f"{got.diagonal().double().tolist()}"))
    if not same(got, want, atol=1e-5):
        raise ExerciseError(tr(f"wrong values: max |difference| {float((got.double() - want).abs().max()):.3g}",
                               f"数值不对：最大 |差值| 为 {float((got.double() - want).abs().max()):.3g}"))
    keep_dtype(got, table, tr("your function", "你的函数"), name="table")  # e.g. a float32 torch.zeros(T, T) filled
    ok(tr("cosine similarity of the rows, diagonal 1, symmetric.",
          "各行之间的余弦相似度：对角线为 1，矩阵对称。"))


def check_lag_targets(fn) -> None:
    """fn(tokens (B, T) int64, lag) -> targets (B, T): targets[:, t] = tokens[:, t - lag], -100 where t < lag."""
    gen = torch.Generator().manual_seed(5)
    tokens = torch.randint(0, 50, (3, 12), generator=gen)
    for lag in (1, 3):
        before = tokens.clone()
        got = as_tensor(call(fn, tokens, lag, what=tr(f"your function (lag={lag})", f"你的函数（lag={lag}）")),
                        tr("your function", "你的函数"))
        if not torch.equal(tokens, before):
            raise ExerciseError(tr("your function changed `tokens` in place: build a new targets tensor",
                                   "你的函数原地修改了 `tokens`：请新建一个 targets 张量"))
        if got.shape != tokens.shape:
            raise ExerciseError(tr(f"targets must have the shape of tokens {tuple(tokens.shape)}, got "
                                   f"{tuple(got.shape)}",
                                   f"targets 必须和 tokens 形状相同，即 {tuple(tokens.shape)}，"
                                   f"实际是 {tuple(got.shape)}"))
        if got.dtype != torch.long:
            raise ExerciseError(tr(f"targets must be int64 class indices (F.cross_entropy), got {got.dtype}",
                                   f"targets 必须是 int64 的类别下标（F.cross_entropy 的要求），实际是 {got.dtype}"))
        want = _solution_lag_targets(tokens, lag)
        if torch.equal(got, want):
            continue
        if torch.equal(got[:, :-lag], tokens[:, lag:]):
            raise ExerciseError(tr(f"(lag={lag}) your targets are the token {lag} places AHEAD (the future); the "
                                   f"task is to copy the token {lag} places BACK: targets[:, t] = tokens[:, t - {lag}]",
                                   f"（lag={lag}）你的 targets 取的是往后第 {lag} 个 token（来自未来）；任务是复制"
                                   f"往前第 {lag} 个 token：targets[:, t] = tokens[:, t - {lag}]"))
        if torch.equal(got[:, lag:], tokens[:, :-lag]):
            head = got[:, :lag]
            if torch.equal(head, tokens[:, -lag:]):
                raise ExerciseError(tr(f"(lag={lag}) the first {lag} targets wrapped around to the last tokens "
                                       f"(torch.roll does that): positions t < lag have no token lag places back; "
                                       f"set them to -100 so F.cross_entropy ignores them",
                                       f"（lag={lag}）前 {lag} 个 target 绕回去取了末尾的 token（torch.roll 就会"
                                       "这样）：t < lag 的位置往前数 lag 个并没有 token；把它们设为 -100，"
                                       f"F.cross_entropy 就会忽略它们"))
            raise ExerciseError(tr(f"(lag={lag}) positions t < {lag} have no token {lag} places back: their target "
                                   f"must be -100 (F.cross_entropy's ignore_index), got {head[0].tolist()}",
                                   f"（lag={lag}）t < {lag} 的位置往前数 {lag} 个并没有 token：它们的 target 必须是 "
                                   f"-100（F.cross_entropy 的 ignore_index），实际是 {head[0].tolist()}"))
        for off in (lag - 1, lag + 1):
            if 0 < off < tokens.shape[1] and torch.equal(got[:, off:], tokens[:, :-off]):
                raise ExerciseError(tr(f"(lag={lag}) off by one: your targets copy the token {off} places back, not "
                                       f"{lag}",
                                       f"（lag={lag}）差了一位：你的 targets 复制的是往前第 {off} 个 token，"
                                       f"而不是第 {lag} 个"))
        raise ExerciseError(tr(f"(lag={lag}) wrong targets: expected {want[0].tolist()}, got {got[0].tolist()} "
                               f"(first row)",
                               f"（lag={lag}）targets 不对：第一行应为 {want[0].tolist()}，实际是 {got[0].tolist()}"))
    ok(tr("targets[:, t] = tokens[:, t - lag], and -100 (ignored) where there is nothing to copy.",
          "targets[:, t] = tokens[:, t - lag]，无 token 可复制的位置为 -100（忽略）。"))


def check_safe_lookup(fn) -> None:
    """fn(table (max_len, d), positions (T,) int64) -> table rows (T, d); positions outside [0, max_len) must
    raise a ValueError whose message names max_len."""
    gen = torch.Generator().manual_seed(6)
    table = torch.randn(8, 4, generator=gen)
    valid = torch.tensor([0, 3, 7, 7, 1])
    got = as_tensor(call(fn, table, valid, what=tr("your function on valid positions", "你的函数在合法位置上")),
                    tr("your function", "你的函数"))
    if not same(got, table[valid]):
        raise ExerciseError(tr("valid positions must return table[positions] (one row per position)",
                               "合法位置必须返回 table[positions]（每个位置一行）"))
    # max_len 12: 8 and 11 are valid; float64, whose rows come back float64 (a float32 buffer filled is named)
    longer = torch.randn(12, 4, generator=gen, dtype=torch.float64)
    past_eight = torch.tensor([8, 11, 2])
    fixed = tr("right for a table of 8 rows, wrong for one of 12 rows at the valid positions [8, 11, 2]: is max_len "
               "fixed at 8 in your code? Read it from the table, max_len = table.shape[0]",
               "8 行的表对了，换成 12 行的表、在合法位置 [8, 11, 2] 上就错了：你是不是把 max_len 写死成了 8？"
               "要从表里读：max_len = table.shape[0]")
    try:
        got = as_tensor(call(fn, longer, past_eight, what=tr("your function on a table of 12 rows",
                                                             "你的函数在 12 行的表上")),
                        tr("your function", "你的函数"))
    except ExerciseError as error:
        if isinstance(error.__cause__, ValueError):  # the learner's range check refused valid positions
            raise ExerciseError(tr(f"{fixed} ({error})", f"{fixed}（{error}）")) from error
        raise
    if not same(got, longer[past_eight], atol=1e-6, rtol=1e-6):
        raise ExerciseError(fixed)
    keep_dtype(got, longer, tr("your function", "你的函数"), name="table")
    for bad, why in ((torch.tensor([2, 8]), tr("position 8 == max_len has no row (rows are 0 .. max_len - 1): "
                                               "reject positions >= max_len, not only > max_len",
                                               "位置 8 == max_len 没有对应的行（行号是 0 .. max_len - 1）："
                                               "要拒绝 >= max_len 的位置，而不只是 > max_len 的")),
                     (torch.tensor([40]), tr("position 40 is past max_len=8", "位置 40 超出了 max_len=8")),
                     (torch.tensor([-1, 2]), tr("position -1 silently reads the LAST row (Python's negative "
                                                "indexing): reject negative positions too",
                                                "位置 -1 会悄无声息地读到最后一行（Python 的负数下标）："
                                                "负的位置也要拒绝"))):
        try:
            result = fn(table, bad)
        except NotImplementedError:
            raise
        except ValueError as error:
            if "max_len" not in str(error):
                raise ExerciseError(tr(f"the ValueError for {bad.tolist()} should name max_len and its value so the "
                                       f"reader knows the limit; your message: {error}",
                                       f"针对 {bad.tolist()} 的 ValueError 应写明 max_len 及其取值，让读者知道上限；"
                                       f"你的消息是：{error}")) from error
            continue
        except IndexError as error:
            if "max_len" in str(error):  # the learner's own check, with the wrong exception type
                raise ExerciseError(tr(f"for positions {bad.tolist()} your check is right, but it raises IndexError; "
                                       f"raise a ValueError (a bad argument, not a bad index)",
                                       f"对位置 {bad.tolist()}，你的检查是对的，但抛出的是 IndexError；"
                                       f"应抛出 ValueError（这是参数不合法，不是下标越界）")) from error
            raise ExerciseError(tr(f"for positions {bad.tolist()} torch raised its bare IndexError ({error}): {why}; "
                                   f"check first and raise a ValueError naming max_len",
                                   f"对位置 {bad.tolist()}，torch 直接抛出了它自己的 IndexError（{error}）：{why}；"
                                   f"应先检查，再抛出写明 max_len 的 ValueError")) from error
        except Exception as error:  # noqa: BLE001
            raise ExerciseError(tr(f"for positions {bad.tolist()} expected a ValueError naming max_len, got "
                                   f"{type(error).__name__}: {error}",
                                   f"对位置 {bad.tolist()}，应抛出写明 max_len 的 ValueError，实际得到的是 "
                                   f"{type(error).__name__}：{error}") + your_line(error)) from error
        _name_a_silent_fix(result, table, bad)
        raise ExerciseError(tr(f"no error for positions {bad.tolist()}: {why}",
                               f"位置 {bad.tolist()} 没有报错：{why}"))
    ok(tr("rows for valid positions, a ValueError naming max_len for anything outside [0, max_len).",
          "合法位置返回对应的行，超出 [0, max_len) 的位置一律抛出写明 max_len 的 ValueError。"))


def _name_a_silent_fix(result, table, bad) -> None:
    """A lookup that returned rows for positions outside the table: clamped to its ends, or wrapped round modulo
    max_len? Both hide the bad position, which is what the ValueError is for."""
    if not isinstance(result, torch.Tensor) or tuple(result.shape) != (len(bad), table.shape[1]):
        return
    max_len = table.shape[0]
    wraps = [(bad % max_len, tr("wrapped them round modulo max_len", "把它们按 max_len 取模绕回来了"))]
    for fixed, how in ((bad.clamp(0, max_len - 1), tr("clamped them to 0 .. max_len - 1",
                                                      "把它们截到了 0 .. max_len - 1")),
                       *(wraps if bool((bad >= 0).all()) else [])):  # -1 % max_len is Python's own negative index
        if not torch.equal(fixed, bad) and same(result, table[fixed]):
            raise ExerciseError(tr(f"no error for positions {bad.tolist()}: you {how}, and position "
                                   f"{int(bad[fixed != bad][0])} silently reads row {int(fixed[fixed != bad][0])}, so "
                                   "a too-long input trains or runs on the wrong rows without a word. Raise a "
                                   "ValueError naming max_len",
                                   f"位置 {bad.tolist()} 没有报错：你{how}，位置 {int(bad[fixed != bad][0])} 悄无声息"
                                   f"地读到了第 {int(fixed[fixed != bad][0])} 行，过长的输入就这样一声不响地用错了行。"
                                   "应抛出写明 max_len 的 ValueError"))


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
