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
from ..i18n import tr
from ..relative import t5_relative_bucket
from ._common import ExerciseError, as_tensor, attempt, call, ignored, name_the_mistake, ok, refuse_low_precision, same

__all__ = ["attempt", "check_relative_positions", "check_t5_bucket", "check_alibi_slopes"]


def check_relative_positions(fn) -> None:
    """fn(length) -> (length, length) int64 with [i, j] = j - i (key - query; rows are queries); tried for
    lengths 5, 1 and 8, so a size fixed in the code is named."""
    for length in (5, 1, 8):
        _relative_positions_of_length(fn, length)
    ok(tr("[i, j] = j - i: key - query, so keys in the query's past are negative.",
          "[i, j] = j - i：键 - 查询，所以位于查询之前（过去）的键为负。"))


def _relative_positions_of_length(fn, length: int) -> None:
    what = tr(f"your function({length})", f"你的函数({length})")
    got = as_tensor(call(fn, length, what=what), what)
    want = _solution_relative_positions(length)
    if length != 5 and got.shape == (5, 5):
        why = ignored("length", length, 5)
        raise ExerciseError(tr(f"relative_matrix({length}) returned a (5, 5) matrix: {why}",
                               f"relative_matrix({length}) 返回的是 (5, 5) 矩阵：{why}"))
    if got.shape != want.shape:
        raise ExerciseError(tr(f"expected shape (length, length) = {tuple(want.shape)}, got {tuple(got.shape)}",
                               f"形状应为 (length, length) = {tuple(want.shape)}，实际是 {tuple(got.shape)}"))
    if got.is_floating_point():
        raise ExerciseError(tr("relative positions count tokens: return an integer tensor (torch.arange gives int64)",
                               "相对位置是在数 token：应返回整数张量（torch.arange 给出的就是 int64）"))
    if got.dtype in (torch.bool, torch.uint8) and length > 1:
        minus_one = "True" if got.dtype == torch.bool else "255"  # what -1 becomes in that dtype
        raise ExerciseError(tr(f"got dtype {got.dtype}, which has no negative numbers: the keys in the query's past "
                               f"(j < i) are negative, -1 became {minus_one}. Use a signed integer dtype, int64 "
                               "(torch.arange's)",
                               f"得到的 dtype 是 {got.dtype}，它没有负数：位于查询之前的键（j < i）是负的，-1 变成了 "
                               f"{minus_one}。要用有符号的整数 dtype，int64（torch.arange 的 dtype）"))
    if torch.equal(got, want):
        return
    if torch.equal(got, -want):
        raise ExerciseError(tr("relative position has the wrong sign: it is key - query (j - i, T5's memory - "
                               "context), so a key in the query's past is negative",
                               "相对位置的符号反了：它是键 - 查询（j - i，即 T5 的 memory - context），"
                               "所以位于查询之前的键为负"))
    if torch.equal(got, want.abs()):
        raise ExerciseError(tr("you took |j - i|: the sign (past or future) is lost, and T5's bidirectional buckets "
                               "and Shaw's embeddings need it. Keep key - query",
                               "你取了 |j - i|：符号（过去还是未来）就丢了，而 T5 的双向分桶和 Shaw 的相对位置嵌入"
                               "都需要它。请保留键 - 查询"))
    for shift in (1, -1):
        if torch.equal(got, want + shift):
            raise ExerciseError(tr(f"every entry is off by {shift:+d}: the diagonal (a query against its own key) "
                                   f"must be 0. [i, j] = j - i exactly, with the same positions torch.arange(length) "
                                   "for queries and keys",
                                   f"每个元素都差了 {shift:+d}：对角线（查询对自己的键）必须是 0。[i, j] 就是 j - i，"
                                   "查询和键用同一组位置 torch.arange(length)"))
    for kept, zeroed in ((want.tril(), tr("above", "上方")), (want.triu(), tr("below", "下方"))):
        if length > 1 and torch.equal(got, kept):
            raise ExerciseError(tr(f"the entries {zeroed} the diagonal are 0: a causal mask applied to the positions. "
                                   "The matrix holds j - i for every pair (the future keys too, positive); masking is "
                                   "done later, on the scores, with -inf",
                                   f"对角线{zeroed}的元素都是 0：你把因果掩码用在了位置上。这个矩阵对每一对都给出 j - i"
                                   "（未来的键也有，为正）；掩码要到后面才用，加在分数上，用 -inf"))
    raise ExerciseError(tr(f"wrong values; expected row 0 = {want[0].tolist()}, got {got[0].tolist()}",
                           f"数值不对：第 0 行应为 {want[0].tolist()}，实际是 {got[0].tolist()}"))


def check_t5_bucket(fn) -> None:
    """fn(relative_position (N,) int64, bidirectional, num_buckets, max_distance) -> buckets (N,) int64,
    relative_position = key - query."""
    r = torch.arange(-300, 301)
    for bidirectional in (True, False):
        for num_buckets, max_distance in ((32, 128), (16, 64)):
            setting = f"bidirectional={bidirectional}, num_buckets={num_buckets}, max_distance={max_distance}"
            got = as_tensor(call(fn, r.clone(), bidirectional, num_buckets, max_distance,
                                   what=tr(f"your function ({setting})", f"你的函数（{setting}）")),
                            tr("your function", "你的函数"))
            want = t5_relative_bucket(r, bidirectional=bidirectional, num_buckets=num_buckets,
                                      max_distance=max_distance)
            if got.shape != want.shape:
                raise ExerciseError(tr(f"({setting}) expected one bucket per relative position, shape "
                                       f"{tuple(want.shape)}, got {tuple(got.shape)}",
                                       f"（{setting}）每个相对位置应对应一个桶，形状应为 {tuple(want.shape)}，"
                                       f"实际是 {tuple(got.shape)}"))
            if got.is_floating_point() or got.is_complex() or got.dtype == torch.bool:
                raise ExerciseError(_bucket_dtype(got, want, setting))
            if torch.equal(got.long(), want):
                continue
            sizes = (num_buckets, max_distance)
            name_the_mistake(got.long(), [
                (t5_relative_bucket(r, bidirectional=not bidirectional, num_buckets=num_buckets,
                                    max_distance=max_distance), _bidirectional_ignored(bidirectional)),
                *([] if sizes == (32, 128) else [  # the defaults used instead of the arguments
                    (t5_relative_bucket(r, bidirectional=bidirectional),
                     ignored("num_buckets, max_distance", sizes, (32, 128))),
                    (t5_relative_bucket(r, bidirectional=bidirectional, num_buckets=num_buckets),
                     ignored("max_distance", max_distance, 128))])], torch.equal)
            flipped = t5_relative_bucket(-r, bidirectional=bidirectional, num_buckets=num_buckets,
                                         max_distance=max_distance)
            if torch.equal(got.long(), flipped):
                raise ExerciseError(tr(f"({setting}) relative position has the wrong sign: T5 uses key - query "
                                       f"(memory_position - context_position), so keys in the past are negative",
                                       f"（{setting}）相对位置的符号反了：T5 用的是键 - 查询"
                                       f"（memory_position - context_position），所以过去的键为负")
                                    + (tr("; in the causal form the past gets the buckets, every future key bucket 0",
                                          "；因果形式下桶都留给过去，未来的键一律进 0 号桶")
                                       if not bidirectional else ""))
            if int(got.max()) >= num_buckets or int(got.min()) < 0:
                raise ExerciseError(tr(f"({setting}) buckets must lie in [0, num_buckets): got {int(got.min())} .. "
                                       f"{int(got.max())}. Clamp the log buckets to n - 1 (distances past max_distance "
                                       f"share the last bucket)",
                                       f"（{setting}）桶号必须在 [0, num_buckets) 内，实际是 {int(got.min())} .. "
                                       f"{int(got.max())}。把对数分桶截断到 n - 1（超过 max_distance 的距离共用最后"
                                       "一个桶）")
                                    + (tr(", and in the bidirectional form each side has num_buckets // 2 buckets",
                                          "；双向形式下每一侧各有 num_buckets // 2 个桶") if bidirectional else ""))
            if not bidirectional and bool((got[r > 0] != 0).any()):
                raise ExerciseError(tr(f"({setting}) in the causal form every future key (r > 0) goes to bucket 0: "
                                       f"the distance is -min(r, 0)",
                                       f"（{setting}）因果形式下，所有未来的键（r > 0）都进 0 号桶："
                                       f"距离是 -min(r, 0)"))
            n = num_buckets // 2 if bidirectional else num_buckets
            small = (r.abs() < n // 2) if bidirectional else ((r <= 0) & (-r < n // 2))
            if not torch.equal(got[small].long(), want[small]):
                after = tr(" + n for keys after the query", "，查询之后的键再加 n") if bidirectional else ""
                raise ExerciseError(tr(f"({setting}) distances below n/2 = {n // 2} each get their own bucket "
                                       f"(bucket = distance{after})",
                                       f"（{setting}）小于 n/2 = {n // 2} 的距离各占一个桶（桶号 = 距离{after}）"))
            bad = int((got.long() != want).nonzero()[0])
            raise ExerciseError(tr(f"({setting}) wrong bucket for relative position {int(r[bad])}: expected "
                                   f"{int(want[bad])}, got {int(got[bad])} (the log-spaced part: exact + "
                                   f"log(d / exact) / log(max_distance / exact) * (n - exact), truncated)",
                                   f"（{setting}）相对位置 {int(r[bad])} 的桶号不对：应为 {int(want[bad])}，"
                                   f"实际是 {int(got[bad])}（对数间隔部分：exact + "
                                   f"log(d / exact) / log(max_distance / exact) * (n - exact)，再截断取整）"))
    ok(tr("T5 buckets match for the bidirectional and the causal form.",
          "双向和因果两种形式的 T5 分桶都对上了。"))


def _bucket_dtype(got: torch.Tensor, want: torch.Tensor, setting: str) -> str:
    """The message for buckets that are not integers: they index an embedding table (one bias per bucket)."""
    rounded = tr("; truncated to integers they would be right", "；截断取整后就对了") \
        if not got.is_complex() and torch.equal(got.trunc().long(), want) else ""
    if not got.is_complex() and got.dtype != torch.bool and not torch.equal(got, got.trunc()):
        return tr(f"({setting}) your buckets have fractions (e.g. {float(got[(got != got.trunc())][0]):.3f}): the "
                  f"log-spaced part is truncated to an integer, exact + (log(d / exact) / log(max_distance / exact) "
                  f"* (n - exact)).long(), as T5 does{rounded}",
                  f"（{setting}）你的桶号带小数（例如 {float(got[(got != got.trunc())][0]):.3f}）：对数间隔部分要截断"
                  f"取整，exact + (log(d / exact) / log(max_distance / exact) * (n - exact)).long()，T5 就是这样做的"
                  f"{rounded}")
    return tr(f"({setting}) your buckets are {got.dtype}: a bucket indexes the table of learned biases "
              f"(nn.Embedding wants integers), so return an integer tensor (int64, as .long() gives){rounded}",
              f"（{setting}）你的桶号是 {got.dtype}：桶号是可学习偏置表的下标（nn.Embedding 要整数），"
              f"所以应返回整数张量（int64，即 .long() 的结果）{rounded}")


def _bidirectional_ignored(bidirectional: bool) -> str:
    """The message for T5 buckets computed in the other form than the `bidirectional` argument asked for."""
    if bidirectional:
        return tr("bidirectional=True asks for the encoder's buckets (half per side, keys after the query offset by "
                  "n), you gave the causal ones: use the `bidirectional` argument",
                  "bidirectional=True 要的是编码器的分桶（每侧一半，查询之后的键再加 n），你给的是因果形式："
                  "要用参数 `bidirectional`")
    return tr("bidirectional=False asks for a decoder's causal buckets, you gave the bidirectional ones: in a decoder "
              "half of those buckets would go to future keys that the mask removes, while the causal form gives all "
              "num_buckets to the past (every future key bucket 0). Use the `bidirectional` argument",
              "bidirectional=False 要的是解码器的因果分桶，你给的是双向的：在解码器里，双向分桶有一半留给了被掩码"
              "去掉的未来的键，而因果形式把全部 num_buckets 个桶都留给过去（未来的键一律进 0 号桶）。"
              "要用参数 `bidirectional`")


def check_alibi_slopes(fn) -> None:
    """fn(num_heads) -> (num_heads,) slopes, head 0 first; checked for 1, 4, 8, 6 and 12 heads. Powers of two:
    the paper's 2^(-8h/n); other head counts: the authors' code (get_slopes), as BLOOM and posenc_lib.alibi."""
    for n in (1, 4, 8, 6, 12):
        got = as_tensor(call(fn, n, what=tr(f"your function ({n} heads)", f"你的函数（{n} 个头）")),
                        tr("your function", "你的函数")).reshape(-1)
        want = alibi_slopes(n, dtype=torch.float64)
        def cost(gap, got=got, want=want):
            far = float((got.double() - want).abs().max()) * 4096  # the bias error at distance 4096
            return tr(f"The bias -slope * distance is then off by {gap:.2%} of itself, up to {far:.2g} at distance "
                      f"4096. Compute the slopes in float32 or float64",
                      f"偏置 -slope * distance 也就偏了自身的 {gap:.2%}，在距离 4096 处最多偏 {far:.2g}。"
                      f"斜率要用 float32 或 float64 计算")
        refuse_low_precision(got, want, tr(f"your answer for {n} heads", f"你对 {n} 个头的答案"), cost)
        got = got.double()
        if got.numel() != n:
            raise ExerciseError(tr(f"{n} heads need {n} slopes, got {got.numel()}",
                                   f"{n} 个头需要 {n} 个斜率，实际是 {got.numel()} 个"))
        if same(got, want, atol=0, rtol=1e-6):
            continue
        if same(got, want.flip(0), atol=0, rtol=1e-6):
            raise ExerciseError(tr(f"({n} heads) reversed: head 0 gets the LARGEST slope 2^(-8/n')",
                                   f"（{n} 个头）顺序反了：头 0 的斜率最大，为 2^(-8/n')"))
        power = (n & (n - 1)) == 0
        naive = torch.tensor([2.0 ** (-8.0 * h / n) for h in range(1, n + 1)], dtype=torch.float64)
        if power:
            if same(got, torch.tensor([2.0 ** (-8.0 * h / n) for h in range(n)], dtype=torch.float64), atol=0,
                    rtol=1e-6):
                raise ExerciseError(tr(f"({n} heads) off by one: h runs from 1 to n, so the first slope is 2^(-8/n), "
                                       "not 1",
                                       f"（{n} 个头）差了一位：h 从 1 取到 n，所以第一个斜率是 2^(-8/n)，不是 1"))
            raise ExerciseError(tr(f"({n} heads) for a power of two the slopes are 2^(-8h/n), h = 1..n: a geometric "
                                   f"sequence starting at and stepping by 2^(-8/n); expected {want.tolist()}",
                                   f"（{n} 个头）头数是 2 的幂时，斜率为 2^(-8h/n)，h = 1..n：首项和公比都是 "
                                   f"2^(-8/n) 的等比数列；应为 {want.tolist()}"))
        if same(got, naive, atol=0, rtol=1e-6):
            raise ExerciseError(tr(f"({n} heads) you applied the power-of-two formula 2^(-8h/n) with n = {n}. The "
                                   "paper only trains power-of-two head counts; for other counts the authors' code "
                                   "(get_slopes, a 'workaround' in its own comment, used by BLOOM and this library) "
                                   "takes all slopes of the largest power of two below n, then every other slope "
                                   f"(h = 1, 3, 5, ...) of twice that",
                                   f"（{n} 个头）你把 2 的幂的公式 2^(-8h/n) 直接套在了 n = {n} 上。论文只训练过头数"
                                   f"为 2 的幂的模型；其他头数时，作者的代码（get_slopes，其注释自称是个“workaround”，"
                                   f"BLOOM 和本库都沿用它）先取小于 n 的最大 2 的幂对应的全部斜率，再从两倍头数的斜率里"
                                   f"隔一个取一个（h = 1, 3, 5, ...）"))
        closest = 2 ** math.floor(math.log2(n))
        doubled = alibi_slopes(2 * closest, dtype=torch.float64)
        if same(got, doubled[:n], atol=0, rtol=1e-6):
            extra = torch.log2(doubled[0::2][:n - closest]).tolist()
            raise ExerciseError(tr(f"({n} heads) you took the first {n} slopes of {2 * closest} heads; the authors' "
                                   f"code (get_slopes) keeps all {closest} slopes of {closest} heads and adds the "
                                   f"slopes of {2 * closest} heads with odd h = 1, 3, 5, ... (its [0::2]): here "
                                   f"{', '.join(f'2^{v:g}' for v in extra)}",
                                   f"（{n} 个头）你取的是 {2 * closest} 个头的前 {n} 个斜率；作者的代码（get_slopes）"
                                   f"保留 {closest} 个头的全部 {closest} 个斜率，再补上 {2 * closest} 个头中 h 为奇数 "
                                   f"1, 3, 5, ... 的斜率（即它的 [0::2]）：这里是 "
                                   f"{', '.join(f'2^{v:g}' for v in extra)}"))
        if len(set(round(v, 12) for v in got.tolist())) < n:
            raise ExerciseError(tr(f"({n} heads) two heads share a slope: the extra slopes must be "
                                   f"2^(-8h/{2 * closest}) for ODD h; even h repeats slopes of {closest} heads",
                                   f"（{n} 个头）有两个头的斜率相同：补上的斜率必须是 h 为奇数时的 "
                                   f"2^(-8h/{2 * closest})；h 为偶数会与 {closest} 个头的斜率重复"))
        raise ExerciseError(tr(f"({n} heads) expected {[round(v, 5) for v in want.tolist()]}, got "
                               f"{[round(v, 5) for v in got.tolist()]}",
                               f"（{n} 个头）应为 {[round(v, 5) for v in want.tolist()]}，实际是 "
                               f"{[round(v, 5) for v in got.tolist()]}"))
    ok(tr("ALiBi slopes for 1, 4, 8, 6 and 12 heads.", "1、4、8、6、12 个头的 ALiBi 斜率都对。"))


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
