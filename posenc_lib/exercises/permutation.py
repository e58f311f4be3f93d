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
from ..i18n import tr
from ._common import ExerciseError, attempt, call, keep_dtype, name_the_mistake, ok, same, tensor

__all__ = ["attempt", "check_permutation_matrix", "check_permuted_weights", "check_invariant_readout"]


_PERMS = ((1, 2, 0), (2, 0, 1), (3, 0, 2, 1), (1, 3, 4, 0, 2))


def check_permutation_matrix(permutation_matrix) -> None:
    """permutation_matrix(perm) -> P (T, T) with P @ x == x[perm] (row i of the result is token perm[i])."""
    gen = torch.Generator().manual_seed(1)
    for perm in _PERMS:
        t = len(perm)
        what = f"permutation_matrix({perm})"
        p = tensor(call(permutation_matrix, torch.tensor(perm), what=what), what)  # perm as in 01
        if not p.is_floating_point():
            raise ExerciseError(tr(f"permutation_matrix({perm}) is {p.dtype}: P @ x with a float x then fails "
                                   f"(matmul wants one dtype; F.one_hot gives int64). Return a float matrix, e.g. "
                                   f"torch.eye(T)[perm] or F.one_hot(perm).float()",
                                   f"permutation_matrix({perm}) 是 {p.dtype}：与浮点的 x 相乘 P @ x 就会出错"
                                   f"（matmul 要求两边 dtype 相同；F.one_hot 给出的是 int64）。应返回浮点矩阵，"
                                   f"例如 torch.eye(T)[perm] 或 F.one_hot(perm).float()"))
        p = p.double()
        if tuple(p.shape) != (t, t):
            raise ExerciseError(tr(f"permutation_matrix({perm}) should be ({t}, {t}), got {tuple(p.shape)}",
                                   f"permutation_matrix({perm}) 的形状应为 ({t}, {t})，实际是 {tuple(p.shape)}"))
        ones = (p == 1).sum()
        if (int(ones) != t or int((p == 0).sum()) != t * t - t or not torch.all(p.sum(0) == 1)
                or not torch.all(p.sum(1) == 1)):
            raise ExerciseError(tr(f"permutation_matrix({perm}) is not a permutation matrix: it needs exactly one 1 in "
                                   f"every row and every column, zeros elsewhere",
                                   f"permutation_matrix({perm}) 不是置换矩阵：每行、每列都必须恰好有一个 1，"
                                   "其余全为 0"))
        x = torch.randn(t, 3, generator=gen, dtype=torch.float64)
        if torch.equal(p @ x, x[list(perm)]):
            continue
        if torch.equal(p, torch.eye(t, dtype=p.dtype)):
            raise ExerciseError(tr(f"for perm={perm} you returned the identity: P @ x is x, the old order. Row i of "
                                   f"P @ x must be token perm[i]: P[i, perm[i]] = 1",
                                   f"perm={perm} 时你返回的是单位矩阵：P @ x 就是 x，还是原来的顺序。P @ x 的第 i 行"
                                   f"必须是第 perm[i] 个 token：P[i, perm[i]] = 1"))
        if torch.equal(p.T @ x, x[list(perm)]):
            raise ExerciseError(tr(f"for perm={perm} you built the transpose: P @ x gives x[inverse perm]. Row i of "
                                   "P @ x must be token perm[i], so the 1 of row i sits in column perm[i]: "
                                   "P[i, perm[i]] = 1",
                                   f"perm={perm} 时你构造的是转置：P @ x 得到的是 x[逆置换]。P @ x 的第 i 行必须是第 "
                                   f"perm[i] 个 token，所以第 i 行的 1 要放在第 perm[i] 列：P[i, perm[i]] = 1"))
        raise ExerciseError(tr(f"for perm={perm}, P @ x is not x[perm]", f"perm={perm} 时，P @ x 不等于 x[perm]"))
    ok(tr("P @ x == x[perm], and P.T undoes it", "P @ x == x[perm]，P.T 再把它还原"))


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
        what = f"permuted_weights(weights, {perm})"
        got = tensor(call(permuted_weights, weights.clone(), torch.tensor(perm), what=what), what).double()
        if same(got, actual, 1e-7):
            continue
        if same(got, weights[idx, idx], 1e-7):
            raise ExerciseError(tr(f"perm={perm}: weights[perm, perm] pairs the two index lists and picks "
                                   f"{len(perm)} single entries, weights[perm[i], perm[i]]. Reorder the rows, then "
                                   f"the columns: weights[perm][:, perm]",
                                   f"perm={perm} 时，weights[perm, perm] 会把两个下标列表逐个配对，只取出 "
                                   f"{len(perm)} 个元素 weights[perm[i], perm[i]]。应先重排行，再重排列："
                                   f"weights[perm][:, perm]"))
        inverse = [perm.index(i) for i in range(len(perm))]
        hints = [(weights, tr("you returned the weights unchanged, as if self-attention were permutation-invariant "
                              "and you could compare position by position. It is equivariant: every word takes its "
                              "weights along to its new place, so compare word by word: weights[perm][:, perm]",
                              "你原样返回了权重，好像自注意力是置换不变的，可以逐位置比较。其实它是置换等变的："
                              "每个词都带着自己的权重挪到新位置，所以要逐词比较：weights[perm][:, perm]")),
                 (weights[idx], tr("you permuted the rows (queries) but not the columns (keys): every word moved, "
                                   "so the keys are reordered too -- weights[perm][:, perm]",
                                   "你只重排了行（查询），没有重排列（键）：每个词都换了位置，键的顺序也跟着变了，"
                                   "应为 weights[perm][:, perm]")),
                 (weights[:, idx], tr("you permuted the columns (keys) but not the rows (queries): "
                                      "weights[perm][:, perm]",
                                      "你只重排了列（键），没有重排行（查询）：应为 weights[perm][:, perm]")),
                 (weights[inverse][:, inverse], tr("you used the inverse permutation: row i of the new sentence is "
                                                   "old token perm[i], so index with perm itself",
                                                   "你用的是逆置换：新句子的第 i 行是原来的第 perm[i] 个 token，"
                                                   "所以直接用 perm 本身做索引")),
                 (weights[idx][:, idx].T, tr("transposed: rows are queries and each row sums to 1",
                                             "转置了：行对应查询，每行之和为 1"))]
        name_the_mistake(got, [(wrong, tr(f"perm={perm}: {hint}", f"perm={perm} 时，{hint}")) for wrong, hint in hints],
                         lambda a, b: same(a, b, 1e-7))
        raise ExerciseError(tr(f"perm={perm}: the result is not the weights attention computes on x[perm]",
                               f"perm={perm}：结果不是注意力在 x[perm] 上算出的权重"))
    ok(tr("weights of the permuted sentence = weights[perm][:, perm]: the same numbers, rows and columns reordered",
          "置换后句子的注意力权重 = weights[perm][:, perm]：数值不变，只是行和列换了顺序"))


def check_invariant_readout(readout) -> None:
    """readout(out (T, D)) -> a vector summarising the sentence, the same for every order of the tokens
    (and still depending on what the tokens are)."""
    gen = torch.Generator().manual_seed(3)
    t, d = 5, 6
    out = torch.randn(t, d, generator=gen, dtype=torch.float64)
    what = tr("your readout(out)", "你的 readout(out)")
    first = tensor(call(readout, out.clone(), what=what), what)
    reference = first.double()
    if reference.shape == out[0].shape and torch.allclose(reference, out[0]):
        raise ExerciseError(tr("your readout is the token in position 0; after a permutation another word sits there",
                               "你的 readout 取的是位置 0 上的 token；一经置换，那里就换成了别的词"))
    if reference.shape == out[-1].shape and torch.allclose(reference, out[-1]):
        raise ExerciseError(tr("your readout is the last token; after a permutation another word sits there",
                               "你的 readout 取的是最后一个 token；一经置换，那里就换成了别的词"))
    if reference.shape == (t,) and any(same(reference, pool) for pool in (out.mean(1), out.sum(1), out.amax(1))):
        raise ExerciseError(tr(f"you pooled over dim 1, the {d} features, which leaves one number per token ({t} "
                               f"in the tokens' order): reorder the tokens and it is reordered. Pool over dim 0, the "
                               f"sequence axis, for one vector of {d} features",
                               f"你在第 1 维（{d} 个特征）上做了池化，结果是每个 token 一个数（共 {t} 个，顺序跟着 "
                               f"token 走）：token 一换序，它也跟着换序。要在第 0 维（序列维）上做池化，"
                               f"得到一个 {d} 维的向量"))
    if reference.numel() == 1:
        raise ExerciseError(tr(f"your readout is one number (the mean, sum or max of all {t} x {d} entries, no dim "
                               f"given): the same for every order, but it keeps one number of the {d} features. Pool "
                               f"over the sequence axis only, dim=0, for a vector of {d}",
                               f"你的 readout 只有一个数（没给 dim，对全部 {t} x {d} 个元素取了 mean、sum 或 max）："
                               f"顺序怎么变它都不变，但 {d} 个特征只剩下一个数。只在序列维 dim=0 上做池化，"
                               f"得到 {d} 维的向量"))
    worst = 0.0
    for _ in range(20):
        perm = torch.randperm(t, generator=gen)
        what = tr("your readout(out[perm])", "你的 readout(out[perm])")
        got = tensor(call(readout, out[perm].clone(), what=what), what).double()
        if got.shape != reference.shape:
            raise ExerciseError(tr("readout gives different shapes for different orders",
                                   "词序不同时，readout 给出的形状也不同"))
        if got.shape == out.shape and same(reference, out) and same(got, out[perm]):
            raise ExerciseError(tr("your readout keeps one output per token (T, D), in the tokens' order: reorder the "
                                   "tokens and its rows are reordered the same way. That is equivariance, not "
                                   "invariance (\"self-attention is permutation-invariant\" is the common mistake): a "
                                   "per-token readout is just as blind to the order. Pool over the sequence axis "
                                   "(mean, sum or max over dim 0) for one vector that every order gives",
                                   "你的 readout 给每个 token 保留一个输出（T, D），顺序跟着 token 走：token 换了序，"
                                   "它的行也按同样的方式换序。这是等变，不是不变（“自注意力是置换不变的”正是常见的误解）："
                                   "逐 token 的 readout 同样看不出顺序。要沿序列维做池化（在第 0 维上取 mean、"
                                   "sum 或 max），得到一个任何顺序都相同的向量"))
        worst = max(worst, float((got - reference).abs().max()))
    if worst > 1e-6:
        if reference.numel() == out.numel():
            raise ExerciseError(tr("your readout keeps every token in order (a flatten/concat): reordering the tokens "
                                   "reorders it; pool over the sequence axis instead",
                                   "你的 readout 按顺序保留了每个 token（flatten/concat）：token 一换序，"
                                   "结果也跟着换序；应改为沿序列维做池化"))
        raise ExerciseError(tr(f"your readout changes by up to {worst:.3g} when the tokens are reordered: it is not "
                               f"permutation-invariant (pool over the sequence axis: mean, sum or max)",
                               f"token 换序后，你的 readout 最多变化 {worst:.3g}：它不是置换不变的"
                               f"（应沿序列维做池化：mean、sum 或 max）"))
    other = out.clone()
    other[2] += 1.0
    what = tr("your readout(out)", "你的 readout(out)")
    if torch.allclose(tensor(call(readout, other, what=what), what).double(), reference):
        raise ExerciseError(tr("your readout does not change when a token's output changes: it ignores the content",
                               "某个 token 的输出变了，你的 readout 却没变：它忽略了内容"))
    if first.is_floating_point():
        keep_dtype(first, out, what, name="out")  # e.g. a sum accumulated in a float32 torch.zeros(D)
    ok(tr("the readout is the same for all 20 orders tried, and it still depends on the tokens",
          "试过的 20 种顺序下 readout 都相同，而且它仍取决于 token 本身"))


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
