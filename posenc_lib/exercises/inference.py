"""Exercises of notebook 12: positions at inference time. The positions of a left-padded batch, a new query
rotated against a cache of rotated keys, and the positions a rolling window with sink tokens gives its keys.

Each check_<name>(answer) calls the learner's function on a few inputs, prints one line starting with "✓"
when it is right, and otherwise raises ExerciseError naming the mistake (the pads numbered, counting from 1,
the query not rotated, the cached keys rotated twice, text positions where the cache counts its own ...).
SOLUTIONS[name] is a reference solution; CHECKS[name] the checker. The right answers come from
posenc_lib.inference and posenc_lib.rope, which tests/test_inference.py compares with transformers.

Conventions (as in posenc_lib.rope): "half" layout, pair i = (x[i], x[i + d/2]), turned counter-clockwise
by m * theta_i, theta_i = base ** (-2i/d).
"""
from __future__ import annotations

import torch

from ..i18n import tr
from ..inference import position_ids_from_mask
from ..rope import apply_rope
from ._common import ExerciseError, as_tensor, attempt, call, ignored, integers, name_the_mistake, ok, same

__all__ = ["attempt", "check_left_pad_positions", "check_query_against_cache", "check_window_positions"]


# ------------------------------------------------------------------------------- positions of a left-padded batch
_MASKS = (torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1], [0, 0, 0, 0, 1]]),
          torch.tensor([[0, 1, 1], [1, 1, 1]]))


def check_left_pad_positions(fn) -> None:
    """fn(attention_mask (batch, T) int64, 1 = real token, 0 = pad on the left) -> position_ids (batch, T):
    each row's real tokens numbered 0, 1, 2, ... from its first real token; a pad's value is not read (it is
    masked), but must not be negative (transformers' generate() puts 0 there)."""
    for mask in _MASKS:
        before = mask.clone()
        got = integers(call(fn, mask, what=tr("your function", "你的函数")), tr("your positions", "你的位置"))
        if not torch.equal(mask, before):
            raise ExerciseError(tr("your function changed the mask in place: return a new tensor",
                                   "你的函数原地改动了掩码：请返回一个新张量"))
        if tuple(got.shape) != tuple(mask.shape):
            raise ExerciseError(tr(f"expected one position per token, shape {tuple(mask.shape)}, got "
                                   f"{tuple(got.shape)}",
                                   f"每个 token 一个位置，形状应为 {tuple(mask.shape)}，得到的是 {tuple(got.shape)}"))
        real = mask.bool()
        want = position_ids_from_mask(mask)
        if torch.equal(got[real], want[real]):
            if bool((got[~real] < 0).any()):
                raise ExerciseError(tr("a pad got a negative position (cumsum - 1 gives -1 before the first real "
                                       "token): a table lookup would read its last row; put 0 there, as generate() "
                                       "does",
                                       "有填充位置得到了负数（cumsum - 1 在第一个真实 token 之前是 -1）："
                                       "查表时会读到最后一行；像 generate() 那样在那里填 0"))
            continue
        columns = torch.arange(mask.shape[1]).expand_as(mask)
        from_the_end = real.long().flip(-1).cumsum(-1).flip(-1) - 1
        name_the_mistake(got[real], [
            (columns[real], tr("you numbered every slot, pads included: with left padding a row's first real "
                               "token is then not at 0, and a learned or sinusoidal table (or a decode step that "
                               "counts on from the real tokens) sees other positions than for the unpadded prompt",
                               "你把每个槽位都编了号，包括填充：左填充时一行的第一个真实 token 就不在 0 了，"
                               "可学习位置嵌入或正弦表（以及只按真实 token 继续计数的解码步）"
                               "看到的位置就和未填充时不同")),
            (want[real] + 1, tr("off by one: positions start at 0 (cumsum(mask) - 1), you started at 1",
                                "差了一：位置从 0 开始（cumsum(mask) - 1），你从 1 开始")),
            (from_the_end[real], tr("you counted from the end of the row: the first real token is position 0",
                                    "你是从行尾往前数的：第一个真实 token 的位置是 0")),
            ((real.long().cumsum(0) - 1)[real], tr("you took the cumsum over dim 0, down the batch: count along "
                                                   "each row, mask.cumsum(-1) - 1",
                                                   "你在第 0 维（沿批次方向）上做了 cumsum：应沿每一行计数，"
                                                   "mask.cumsum(-1) - 1")),
        ], torch.equal)
        raise ExerciseError(tr(f"for the mask {mask.tolist()} the real tokens should get {want[real].tolist()}, "
                               f"got {got[real].tolist()}",
                               f"掩码为 {mask.tolist()} 时真实 token 的位置应为 {want[real].tolist()}，"
                               f"得到的是 {got[real].tolist()}"))
    ok(tr("positions counted from each row's first real token, as transformers' generate() counts them.",
          "位置从每行第一个真实 token 数起，和 transformers 的 generate() 一样。"))


# ------------------------------------------------------------------------------- a new query against a cache
def check_query_against_cache(fn) -> None:
    """fn(q (d,), position m (int), cached_keys (n, d), base) -> the n scores (R_m q) . k_j, (n,), where the
    cached keys are ALREADY rotated, key j at position j (half layout), and q is the new query before rotation."""
    gen = torch.Generator().manual_seed(12)
    d, n, base = 8, 6, 100.0
    q = torch.randn(d, generator=gen, dtype=torch.float64)
    raw = torch.randn(n, d, generator=gen, dtype=torch.float64)
    keys = apply_rope(raw, torch.arange(n), base=base)                     # (n, d), rotated at 0 .. n-1
    for m in (n, n + 4):                                                   # the next token, and one later
        q_before, keys_before = q.clone(), keys.clone()
        answer = _half_width_named(lambda m=m: call(fn, q, m, keys, base, what=tr("your function", "你的函数")), d)
        got = as_tensor(answer, tr("your scores", "你的分数"))
        if isinstance(answer, torch.Tensor) and answer.dtype != q.dtype:
            raise ExerciseError(tr(f"your scores are {answer.dtype}, q and the keys are {q.dtype}: keep their dtype "
                                   "(a cast to a lower precision loses digits the cache kept)",
                                   f"你的分数是 {answer.dtype}，而 q 和键是 {q.dtype}：保持它们的 dtype"
                                   "（转成更低的精度会丢掉缓存保留的位数）"))
        if not (torch.equal(q, q_before) and torch.equal(keys, keys_before)):
            raise ExerciseError(tr("your function changed q or the cached keys in place: a cache must stay as it is",
                                   "你的函数原地改动了 q 或缓存的键：缓存必须保持原样"))
        if tuple(got.shape) != (n,):
            raise ExerciseError(tr(f"expected one score per cached key, shape ({n},), got {tuple(got.shape)}",
                                   f"每个缓存的键一个分数，形状应为 ({n},)，得到的是 {tuple(got.shape)}"))
        want = keys @ apply_rope(q[None], torch.tensor([m]), base=base)[0]
        if same(got, want, atol=1e-6):
            continue
        name_the_mistake(got, _query_mistakes(q, keys, m, base))
        raise ExerciseError(tr(f"for m = {m} expected the scores {[round(float(v), 4) for v in want]}, got "
                               f"{[round(float(v), 4) for v in got.reshape(-1)][:n]}",
                               f"m = {m} 时分数应为 {[round(float(v), 4) for v in want]}，得到的是 "
                               f"{[round(float(v), 4) for v in got.reshape(-1)][:n]}"))
    ok(tr("the new query turned by its own position, the cached keys left as they were: the scores of one full "
          "forward.",
          "新的查询按自己的位置旋转，缓存的键原样不动：和一次完整前向的分数相同。"))


def _half_width_named(run, d):
    """run(); a crash from multiplying a (d,) vector by a (d/2,) cos/sin table is named: full-width tables."""
    try:
        return run()
    except ExerciseError as error:
        cause = str(error.__cause__ or "")
        if isinstance(error.__cause__, RuntimeError) and f"({d})" in cause and f"({d // 2})" in cause:
            raise ExerciseError(tr(f"use full-width tables: your cos/sin have d/2 = {d // 2} entries, q has d = {d}. "
                                   "For the half layout, cos = torch.cat((c, c)) and sin = torch.cat((s, s)), so "
                                   f"that q * cos + rotate_half(q) * sin pairs q[i] with q[i + d/2] ({error})",
                                   f"要用全宽的表：你的 cos/sin 只有 d/2 = {d // 2} 个元素，而 q 有 d = {d} 个。"
                                   "half 布局下 cos = torch.cat((c, c))、sin = torch.cat((s, s))，"
                                   f"这样 q * cos + rotate_half(q) * sin 才把 q[i] 和 q[i + d/2] 配成对（{error}）")
                                ) from error
        raise


def _query_mistakes(q, keys, m, base):
    """(what each known mistake returns, its message) for check_query_against_cache, computed one at a time."""
    def scored(position, layout="half"):                                # the cached keys against q turned to `position`
        return keys @ apply_rope(q[None], torch.tensor([position]), base=base, layout=layout)[0]

    unrotated = tr("the query was not rotated: the cached keys carry their positions, so the new "
                   "query must be turned by its own position m",
                   "查询没有旋转：缓存的键带着各自的位置，新的查询也必须按自己的位置 m 旋转")
    yield keys @ q, unrotated
    yield scored(0), unrotated
    off_by_one = tr("off by one: the query is at position m itself", "差了一：查询就在位置 m 上")
    yield scored(m - 1), off_by_one
    yield scored(m + 1), off_by_one
    yield scored(-m), tr("turned the wrong way: R_m turns counter-clockwise by +m theta_i",
                         "方向反了：R_m 按 +m theta_i 逆时针旋转")
    twice = apply_rope(keys, torch.arange(keys.shape[0]), base=base)      # each key turned a second time
    yield twice @ apply_rope(q[None], torch.tensor([m]), base=base)[0], tr(
        "the cached keys were rotated again: they are stored already rotated by their positions, a second turn "
        "counts each position twice",
        "缓存的键又被旋转了一次：它们存进去时已经按位置旋转过，再转一次会把位置算两遍")
    ignored_base = keys @ apply_rope(q[None], torch.tensor([m]), base=10000.0)[0]
    yield ignored_base, ignored("base", base, 10000.0)
    yield scored(m, "interleaved"), tr("layout: the keys use the half layout, pairs (i, i + d/2), not (2i, 2i+1)",
                                       "布局不对：键用的是 half 布局，即 (i, i + d/2) 成对，不是 (2i, 2i+1)")


# ------------------------------------------------------------------------------- a rolling window with sinks
_WINDOW_CASES = ((20, 2, 5), (9, 4, 8), (100, 4, 16), (7, 0, 3))


def _kept(seen, num_sinks, window):
    if seen <= num_sinks + window:
        return list(range(seen))
    return list(range(num_sinks)) + list(range(seen - window, seen))


def check_window_positions(fn) -> None:
    """fn(seen, num_sinks, window) -> (kept, positions): after `seen` tokens (text positions 0 .. seen-1) went
    through a StreamingLLM cache, `kept` lists the text positions it still holds (the first num_sinks and the
    last window), `positions` the positions RoPE uses for them (counted within the cache)."""
    for seen, sinks, window in _WINDOW_CASES:
        answer = call(fn, seen, sinks, window, what=tr(f"your function({seen}, {sinks}, {window})",
                                                      f"你的函数({seen}, {sinks}, {window})"))
        if not (isinstance(answer, (tuple, list)) and len(answer) == 2):
            raise ExerciseError(tr("return two lists: (kept, positions)", "请返回两个列表：(kept, positions)"))
        kept, positions = (integers(a, tr("each of your lists", "你的每个列表"), flat=True).tolist() for a in answer)
        right = _kept(seen, sinks, window)
        if kept != right:
            name_the_mistake(kept, [  # with no sinks the first list is the right answer, so it never matches here
                (list(range(max(seen - window, 0), seen)),
                 tr("the sinks were evicted: StreamingLLM keeps the first num_sinks tokens for good",
                    "注意力汇聚点被逐出了：StreamingLLM 会一直保留前 num_sinks 个 token")),
                (list(range(sinks)) + list(range(seen - (window - sinks), seen)),
                 tr("the window counts the recent tokens only: the cache holds num_sinks + window",
                    "窗口只算最近的 token：缓存里一共是 num_sinks + window 个")),
                *[(list(range(sinks)) + list(range(seen - window - shift, seen)),
                   tr(f"off by one: your window holds the last {window + shift} tokens; it holds the last `window` = "
                      f"{window}, text positions seen - window .. seen - 1 = {seen - window} .. {seen - 1}",
                      f"差了一个：你的窗口里是最后 {window + shift} 个 token；窗口里应是最后 `window` = {window} 个，"
                      f"即文本位置 seen - window .. seen - 1 = {seen - window} .. {seen - 1}"))
                  for shift in (1, -1) if seen - window - shift > sinks]])
            raise ExerciseError(tr(f"after {seen} tokens with {sinks} sinks and a window of {window} the cache holds "
                                   f"{right}, got {kept}",
                                   f"处理了 {seen} 个 token、{sinks} 个注意力汇聚点、窗口为 {window} 时，"
                                   f"缓存中应为 {right}，得到的是 {kept}"))
        if positions == kept and kept != list(range(len(kept))):
            raise ExerciseError(tr("those are the text positions: StreamingLLM numbers the keys by their slot in the "
                                   "cache, 0 .. len-1, so distances stay within what the model was trained on",
                                   "这是文本中的位置：StreamingLLM 按键在缓存中的槽位编号，即 0 .. len-1，"
                                   "这样距离不会超出模型训练时见过的范围"))
        if positions == list(range(1, len(right) + 1)):
            raise ExerciseError(tr(f"the slots are numbered from 0: positions 0 .. {len(right) - 1}, not 1 .. "
                                   f"{len(right)} (the first sink sits at position 0, as it did in the text)",
                                   f"槽位从 0 开始编号：位置是 0 .. {len(right) - 1}，不是 1 .. {len(right)}"
                                   "（第一个注意力汇聚点在位置 0，和它在文本里一样）"))
        if positions != list(range(len(right))):
            raise ExerciseError(tr(f"the positions inside the cache are 0 .. {len(right) - 1}, got {positions}",
                                   f"缓存内的位置应为 0 .. {len(right) - 1}，得到的是 {positions}"))
    ok(tr("sinks plus the last window, numbered by their slots in the cache, as StreamingLLM numbers them.",
          "注意力汇聚点加上最近的窗口，按它们在缓存中的槽位编号，和 StreamingLLM 一样。"))


# ------------------------------------------------------------------------------- reference solutions
def _solution_left_pad_positions(attention_mask):
    positions = attention_mask.long().cumsum(-1) - 1        # real tokens: 0, 1, 2, ...
    return positions.masked_fill(attention_mask == 0, 0)     # pads: 0 (never read: they are masked)


def _solution_query_against_cache(q, position, cached_keys, base=10000.0):
    half = q.shape[-1] // 2
    theta = base ** (-torch.arange(half, dtype=torch.float64) / half)
    angle = position * theta                                   # (d/2,): m * theta_i
    q1, q2 = q[:half], q[half:]
    rotated = torch.cat((q1 * angle.cos() - q2 * angle.sin(), q2 * angle.cos() + q1 * angle.sin()))
    return cached_keys @ rotated.to(cached_keys.dtype)         # the keys are already rotated


def _solution_window_positions(seen, num_sinks, window):
    if seen <= num_sinks + window:
        kept = list(range(seen))
    else:
        kept = list(range(num_sinks)) + list(range(seen - window, seen))
    return kept, list(range(len(kept)))


SOLUTIONS: dict = {
    "left_pad_positions": _solution_left_pad_positions,
    "query_against_cache": _solution_query_against_cache,
    "window_positions": _solution_window_positions,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}
