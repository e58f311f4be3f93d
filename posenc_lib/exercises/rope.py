"""Exercises on RoPE: the rotation of one pair (notebook 03), rotate_half, half-split RoPE and the
conversion of a checkpoint between layouts (06), and the complex-number form (09).

Each check_<name>(answer) calls the learner's function on a few inputs, prints one line starting
with "✓" when it is right, and otherwise raises ExerciseError saying WHAT is wrong (the
clockwise rotation, the other layout, the inverse permutation, e^{-i m theta} ...).
`attempt(check, answer)` runs a check from a notebook cell without stopping the notebook.
SOLUTIONS[name] is a reference solution for check_<name>; CHECKS[name] is the checker.

Conventions (as in posenc_lib.rope): RoPE turns a pair (x1, x2) counter-clockwise,
y1 = x1 cos - x2 sin, y2 = x2 cos + x1 sin, by m * theta_i at position m, theta_i = base ** (-2i/d);
layout "half" pairs dims (i, i + d/2), "interleaved" pairs (2i, 2i+1).
"""
from __future__ import annotations

import math

import torch

from ..absolute import layout_permutation
from ..i18n import tr
from ..rope import apply_rope, rope_complex, rotate_every_two, rotate_half
from ..scaling import rope_inv_freq
from ._common import ExerciseError, as_tensor, attempt, call, float32_note, ignored, keep_dtype, ok, same, tensor

__all__ = [
    "attempt", "check_rope_pair", "check_rotate_half", "check_rope_half", "check_unpermute_qk_rows",
    "check_rope_complex",
]


# ------------------------------------------------------------------------------------ 03: one pair

def check_rope_pair(rope_pair) -> None:
    """rope_pair(x1, x2, angle) -> (y1, y2): RoPE's counter-clockwise rotation of the pair (x1, x2) by `angle`."""
    gen = torch.Generator().manual_seed(5)
    x1, x2 = torch.randn(6, generator=gen, dtype=torch.float64), torch.randn(6, generator=gen, dtype=torch.float64)
    angle = torch.rand(6, generator=gen, dtype=torch.float64) * 4 - 2
    result = call(rope_pair, x1.clone(), x2.clone(), angle.clone(), what="rope_pair")
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise ExerciseError(tr("rope_pair should return the pair (y1, y2)", "rope_pair 应返回一对 (y1, y2)"))
    y1, y2 = (tensor(r, "y") for r in result)
    for y in (y1, y2):
        if y.shape == x1.shape and y.is_floating_point():
            keep_dtype(y, x1, "rope_pair", name="x1")  # a float32 result for float64 inputs
    y1, y2 = y1.double(), y2.double()
    c, s = angle.cos(), angle.sin()
    right = (x1 * c - x2 * s, x1 * s + x2 * c)
    degrees = angle * math.pi / 180  # the angle read as degrees and converted to radians
    if same(y1, x1 * degrees.cos() - x2 * degrees.sin(), 1e-6) and same(y2, x1 * degrees.sin() + x2 * degrees.cos(),
                                                                        1e-6):
        raise ExerciseError(tr("you converted the angle from degrees (angle * pi / 180, math.radians or "
                               "torch.deg2rad): RoPE's angles m * theta are in radians already, and torch.cos and "
                               "torch.sin take radians",
                               "你把角度当成了角度制再换算（angle * pi / 180、math.radians 或 torch.deg2rad）："
                               "RoPE 的角度 m * theta 本来就是弧度，torch.cos 和 torch.sin 接受的也是弧度"))
    if same(y1, right[0], 1e-6) and same(y2, right[1], 1e-6):
        ok(tr("(x1, x2) -> (x1 cos - x2 sin, x1 sin + x2 cos): counter-clockwise, as RoPE (R_m q).(R_n k) needs",
              "(x1, x2) -> (x1 cos - x2 sin, x1 sin + x2 cos)：逆时针旋转，正是 RoPE 的 (R_m q).(R_n k) 所需要的"))
        return
    if same(y1, x1 * c + x2 * s, 1e-6) and same(y2, -x1 * s + x2 * c, 1e-6):
        raise ExerciseError(tr("you rotated clockwise, [[cos, sin], [-sin, cos]]: that is the offset map M_k's "
                               "orientation on (sin, cos) pairs, i.e. RoPE at position -m. RoPE rotates (x1, x2) "
                               "counter-clockwise, by [[cos, -sin], [sin, cos]]. Your rotation used for both q and k "
                               "is still relative but mirrored (harmless when training from scratch, wrong against "
                               "weights or code of RoPE's convention: every relative distance reversed); used for "
                               "only one of q and k, the score depends on m + n, the absolute positions",
                               "你转成了顺时针 [[cos, sin], [-sin, cos]]：这是偏移映射 M_k 在 (sin, cos) 对上的转向，"
                               "相当于位置 -m 处的 RoPE。RoPE 把 (x1, x2) 逆时针旋转，"
                               "用的是 [[cos, -sin], [sin, cos]]。你的旋转若同时用于 q 和 k，分数仍只依赖相对位置，"
                               "但方向成了镜像（从头训练时无妨，但对照按 RoPE 约定训练的权重或写的代码就错了："
                               "每个相对距离都反了过来）；若只用于 q、k 其中之一，分数就取决于 m + n，也就是绝对位置"))
    if same(y1, right[1], 1e-6) and same(y2, right[0], 1e-6):
        raise ExerciseError(tr("you returned (y2, y1): the first output is x1 cos - x2 sin",
                               "你返回的是 (y2, y1)：第一个输出应是 x1 cos - x2 sin"))
    raise ExerciseError(tr("(y1, y2) should be (x1 cos(angle) - x2 sin(angle), x1 sin(angle) + x2 cos(angle))",
                           "(y1, y2) 应为 (x1 cos(angle) - x2 sin(angle), x1 sin(angle) + x2 cos(angle))"))


# ------------------------------------------------------------------ 06: rotate_half, RoPE, layouts

def check_rotate_half(fn) -> None:
    """fn(x (..., d)) -> [-x2, x1] where x1, x2 are the first and second half of the last dim. Tried on a
    (1, 8) row, then on a (2, 6) matrix and a batched (2, 3, 8) tensor (batch, heads, d): a hard-coded
    half or a slice of dim 1 instead of the last dim is named."""
    what = tr("your rotate_half", "你的 rotate_half 函数")
    x = torch.arange(1.0, 9.0).reshape(1, 8)
    before = x.clone()
    got = as_tensor(call(fn, x, what=what), what)
    if not torch.equal(x, before):
        raise ExerciseError(tr("your rotate_half changed x in place: return a new tensor",
                               "你的 rotate_half 原地修改了 x：请返回一个新张量"))
    want = rotate_half(x)
    if got.shape != want.shape:
        if got.shape == (2, 4) and torch.equal(got, torch.cat((-x[..., 4:], x[..., :4]), dim=0)):
            raise ExerciseError(tr("got shape (2, 4) for a (1, 8) x: torch.cat joined the halves along dim 0, its "
                                   "default; join them along the last dim, torch.cat((-x2, x1), dim=-1)",
                                   "输入 (1, 8) 却得到形状 (2, 4)：torch.cat 默认沿第 0 维拼接；"
                                   "要沿最后一维拼接前后两半，torch.cat((-x2, x1), dim=-1)"))
        if got.shape[:-1] == x.shape[:-1] and abs(got.shape[-1] - x.shape[-1]) == 1:
            raise ExerciseError(tr(f"got {got.shape[-1]} dims for x's {x.shape[-1]}: one dim lost or taken twice, the "
                                   "split is off by one (x[..., :h + 1] or x[..., h + 1:]). With h = x.shape[-1] // 2 "
                                   "the halves are x[..., :h] and x[..., h:], which hold every dim once",
                                   f"x 有 {x.shape[-1]} 维，你的结果却有 {got.shape[-1]} 维：丢了一维或者一维用了两次，"
                                   "切分处差了一（x[..., :h + 1] 或 x[..., h + 1:]）。取 h = x.shape[-1] // 2，"
                                   "两半是 x[..., :h] 和 x[..., h:]，每一维恰好出现一次"))
        raise ExerciseError(tr(f"expected the shape of x {tuple(x.shape)}, got {tuple(got.shape)}",
                               f"形状应与 x 相同，即 {tuple(x.shape)}，实际是 {tuple(got.shape)}"))
    if got.dtype == x.dtype and torch.equal(got, want):
        _rotate_half_other_shapes(fn, what)
        ok(tr(f"rotate_half([1..8]) = {got[0].tolist()}: pair i = (x[i], x[i + d/2]) turned by +90 degrees.",
              f"rotate_half([1..8]) = {got[0].tolist()}：第 i 对 (x[i], x[i + d/2]) 转了 +90 度。"))
        return
    if torch.equal(got, rotate_every_two(x)):
        raise ExerciseError(tr("you paired interleaved dims (2i, 2i+1) but the reference is half-split: pair i is "
                               "(x[i], x[i + d/2]), so move whole halves",
                               "你按交错（interleaved）方式把维度 (2i, 2i+1) 配成了对，"
                               "但参考实现是对半拆分（half-split）：第 i 对是 (x[i], x[i + d/2])，"
                               "所以要把前后两半整体搬动"))
    if torch.equal(got, -want):
        raise ExerciseError(tr("you turned by -90 degrees ([x2, -x1]): the counter-clockwise turn of (x1, x2) is "
                               "(-x2, x1), the minus goes on the second half, which moves to the front",
                               "你转了 -90 度（[x2, -x1]）：(x1, x2) 逆时针转 90 度得到 (-x2, x1)，"
                               "负号加在后一半上，后一半挪到前面"))
    if torch.equal(got, torch.cat((x[..., 4:], x[..., :4]), -1)):
        raise ExerciseError(tr("you swapped the halves but forgot the minus sign: [x1, x2] -> [-x2, x1]",
                               "你交换了前后两半，但忘了负号：[x1, x2] -> [-x2, x1]"))
    if torch.equal(got, torch.cat((-x[..., :4], x[..., 4:]), -1)):
        raise ExerciseError(tr("you negated the first half and left the halves in place, [-x1, x2]: rotate_half moves "
                               "the second half to the front and negates it, [x1, x2] -> [-x2, x1]",
                               "你把前一半取了负，两半却没有换位置，得到 [-x1, x2]：rotate_half 要把后一半挪到前面"
                               "并取负，[x1, x2] -> [-x2, x1]"))
    if torch.equal(got.double(), want.double()):
        keep_dtype(got, x, what)
    raise ExerciseError(tr(f"rotate_half([1..8]) should be {want[0].tolist()}, got {got.reshape(-1).tolist()}",
                           f"rotate_half([1..8]) 应为 {want[0].tolist()}，实际是 {got.reshape(-1).tolist()}"))


def _rotate_half_other_shapes(fn, what) -> None:
    """Right on (1, 8): also right for another d and for leading batch and head dims (float64 inputs, whose dtype
    the result keeps)?"""
    for shape in ((2, 6), (2, 3, 8)):
        other = torch.arange(1.0, 1.0 + torch.Size(shape).numel(), dtype=torch.float64).reshape(shape)
        try:
            got = as_tensor(call(fn, other, what=what), what)
            right = got.shape == other.shape and torch.equal(got.double(), rotate_half(other))
            problem = "" if right else tr(f"got shape {tuple(got.shape)}", f"得到的形状是 {tuple(got.shape)}")
        except ExerciseError as error:
            right, problem = False, str(error)
        if right:
            keep_dtype(got, other, what)  # a float32 buffer (torch.zeros(shape)) filled with a float64 x's halves
            continue
        if shape == (2, 6):
            raise ExerciseError(tr(f"right for d = 8, wrong for a (2, 6) input ({problem}): split at d // 2 = "
                                   "x.shape[-1] // 2 of the LAST dim, whatever its size and however many leading dims "
                                   "x has",
                                   f"d = 8 时对了，输入 (2, 6) 时却错了（{problem}）：要在最后一维的 d // 2 = "
                                   "x.shape[-1] // 2 处切开，不管这一维多大、x 前面还有多少维"))
        raise ExerciseError(tr(f"right for (1, 8) and (2, 6), wrong for a batched (2, 3, 8) x, as (batch, heads, d) "
                               f"or (heads, T, d) tensors are in a model ({problem}): x[:, :h] slices dim 1; index the "
                               "last dim, x[..., :h] and x[..., h:]",
                               f"输入 (1, 8) 和 (2, 6) 都对了，换成模型里常见的三维输入 (2, 3, 8)（batch, heads, d）"
                               f"却错了（{problem}）：x[:, :h] 切的是第 1 维；要切最后一维，x[..., :h] 和 x[..., h:]"))


# check_rope_half's inputs: positions past 256 (the first integer bf16 cannot hold is 257) and near 1000
# (fp16 angles there are 0.5 rad apart), so that low-precision positions or angles show.
_ROPE_POSITIONS = (0, 1, 2, 5, 17, 100, 257, 1001)


def _rope_close(got: torch.Tensor, want: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Per row: equal within 1e-5 + 1e-6 * position (float32 angles, whose error grows with the position,
    pass; bf16/fp16 ones do not)."""
    tolerance = 1e-5 + 1e-6 * positions.double().abs()[:, None]
    return ((got.double() - want.double()).abs() <= tolerance).all(-1)


def check_rope_half(fn) -> None:
    """fn(x (T, d), positions (T,) int64, base) -> RoPE of x in the half-split layout (x * cos + rotate_half(x) * sin).
    Tried with base 500 at positions up to 1001, then with d = 16, base 10000 and other positions; the mistakes
    of notebook 06's list are named: the other layout or orientation, an ignored `base` or `positions`, a wrong
    or doubled exponent, mixed cos/sin tables, positions or angles in bf16/fp16."""
    what = tr("your RoPE", "你的 RoPE 实现")
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(len(_ROPE_POSITIONS), 8, generator=gen, dtype=torch.float64)
    positions = torch.tensor(_ROPE_POSITIONS)
    base = 500.0  # not 100: a doubled exponent at base 100 would be RoPE with base 10000, the default
    before = x.clone()
    got = as_tensor(call(fn, x, positions, base, what=what), what)
    if not torch.equal(x, before):
        raise ExerciseError(tr("your RoPE changed x in place: return a new tensor",
                               "你的 RoPE 原地修改了 x：请返回一个新张量"))
    want = apply_rope(x, positions, base=base, layout="half")
    if got.shape != want.shape:
        raise ExerciseError(tr(f"expected the shape of x {tuple(x.shape)}, got {tuple(got.shape)}",
                               f"形状应与 x 相同，即 {tuple(x.shape)}，实际是 {tuple(got.shape)}"))
    if got.dtype != x.dtype:
        raise ExerciseError(tr(f"your result is {got.dtype}, x is {x.dtype}: RoPE returns x's dtype (compute the "
                               "angles in float64 and the rotation in x's dtype, or .to(x.dtype) at the end)",
                               f"你的结果是 {got.dtype}，而 x 是 {x.dtype}：RoPE 应返回 x 的 dtype（角度用 float64 "
                               "计算，旋转用 x 的 dtype，或者最后 .to(x.dtype)）"))
    rows_right = _rope_close(got, want, positions)
    if bool(rows_right.all()):
        _rope_half_other_inputs(fn, what)
        ok(tr("half-split RoPE: pair (x[i], x[i + d/2]) turned by position * base^(-2i/d).",
              "对半拆分（half-split）的 RoPE：每对 (x[i], x[i + d/2]) 转过的角度是 position * base^(-2i/d)。")
           + float32_note(float((got.double() - want).abs().max()), int(positions.max())))
        return
    if not same(got[0], x[0], atol=1e-5):
        raise ExerciseError(tr("position 0 must not move (angle 0: cos 1, sin 0); yours changes it",
                               "位置 0 不应有任何变化（角度为 0：cos 为 1，sin 为 0）；你的实现却改动了它"))
    for mistake, reference in _rope_half_mistakes(x, positions, base):
        if bool(_rope_close(got, reference, positions).all()):
            raise ExerciseError(mistake)
    low = positions <= 256
    if bool(rows_right[low].all()):
        wrong = positions[~rows_right].tolist()
        raise ExerciseError(tr(f"right up to position 256, wrong at positions {wrong}: positions or angles rounded "
                               "to a low precision (bf16 holds integers exactly only up to 256, so 257 becomes 256; "
                               "fp16 angles near 1000 are 0.5 rad apart). Compute positions * theta in float32 or "
                               "better (positions.float() or .double()) and round only the result",
                               f"位置 256 以内都对，位置 {wrong} 却错了：位置或角度被舍入到了低精度（bf16 只能精确表示 "
                               "256 以内的整数，257 会变成 256；fp16 的角度在 1000 附近相隔 0.5 弧度）。"
                               "用 float32 或更高精度计算 positions * theta（positions.float() 或 .double()），"
                               "只在最后对结果做舍入"))
    raise ExerciseError(tr(f"wrong values: max |difference| {float((got.double() - want).abs().max()):.3g}",
                           f"数值不对：最大 |差值| 为 {float((got.double() - want).abs().max()):.3g}"))


def _rope_half_mistakes(x, positions, base):
    """(message, what that mistake returns) for the mistakes check_rope_half names, in the order it tries them."""
    dim = x.shape[-1]
    pairs = torch.arange(0, dim, 2, dtype=torch.float64)              # 2i for pair i
    yield (tr("you paired interleaved dims (2i, 2i+1) but the reference is half-split: cos and sin must be "
              "torch.cat((c, c)), and rotate_half moves whole halves",
              "你按交错（interleaved）方式把维度 (2i, 2i+1) 配成了对，但参考实现是对半拆分（half-split）："
              "cos 和 sin 必须是 torch.cat((c, c))，rotate_half 则把前后两半整体搬动"),
           apply_rope(x, positions, base=base, layout="interleaved"))
    yield (tr("your rotation turns clockwise (by -m theta): that is RoPE at negated positions, whose "
              "scores depend on n - m instead of m - n (harmless in a model trained with it, wrong against "
              "the reference and every checkpoint that turns counter-clockwise). "
              "Use x * cos + rotate_half(x) * sin with rotate_half(x) = [-x2, x1]",
              "你的旋转是顺时针的（转 -m theta）：相当于在取负的位置上做 RoPE，分数取决于 n - m "
              "而不是 m - n（在用它训练出来的模型里无妨，但与参考实现以及所有逆时针旋转的检查点都对不上）。"
              "应写成 x * cos + rotate_half(x) * sin，其中 rotate_half(x) = [-x2, x1]"),
           apply_rope(x, -positions, base=base, layout="half"))
    yield (tr(f"you ignored the `base` argument: your result is RoPE with base 10000, the check passed base={base:g}",
              f"你没有用参数 `base`：你的结果是底数 10000 的 RoPE，而检查器传入的是 base={base:g}"),
           apply_rope(x, positions, base=10000.0, layout="half"))
    passed = list(_ROPE_POSITIONS)
    yield (tr(f"you ignored the `positions` argument: row t was turned as if at position t (torch.arange(T)); "
              f"the check passed positions {passed}, which need not be 0, 1, 2, ...",
              f"你没有用参数 `positions`：第 t 行按位置 t（torch.arange(T)）旋转了；检查器传入的位置是 "
              f"{passed}，不一定是 0, 1, 2, ..."),
           apply_rope(x, torch.arange(len(positions)), base=base, layout="half"))
    yield (tr("frequency exponent: theta_i = base^(-2i/d) for pair i = 0 .. d/2 - 1 "
              "(torch.arange(0, d, 2) / d), you used i/d",
              "频率的指数错了：第 i 对（i = 0 .. d/2 - 1）的 theta_i = base^(-2i/d)"
              "（torch.arange(0, d, 2) / d），你用的是 i/d"),
           apply_rope(x, positions, inv_freq=base ** (-pairs / 2 / dim), layout="half"))
    yield (tr("a doubled exponent: base ** (-2 * arange(0, d, 2) / d) is base^(-4i/d), every frequency of base^2; "
              "arange(0, d, 2) already is 2i, so theta_i = base ** (-arange(0, d, 2) / d)",
              "指数翻倍了：base ** (-2 * arange(0, d, 2) / d) 是 base^(-4i/d)，相当于把底数换成了 base^2；"
              "arange(0, d, 2) 本身就是 2i，所以 theta_i = base ** (-arange(0, d, 2) / d)"),
           apply_rope(x, positions, inv_freq=base ** (-2 * pairs / dim), layout="half"))
    ang = positions.double()[:, None] * base ** (-pairs / dim)
    for dtype, name in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
        rounded = ang.to(dtype).double()
        yield (tr(f"your angles are rounded to {name}: position * theta near 1000 rad is off by up to "
                  f"{float((rounded - ang).abs().max()):.2g} rad at these positions, a low precision that turns every "
                  "pair by a wrong angle. Compute the angles in float32 or better and round only the result",
                  f"你的角度被舍入成了 {name}：在这些位置上 position * theta（约 1000 弧度）最多偏了 "
                  f"{float((rounded - ang).abs().max()):.2g} 弧度，精度太低，每一对都转错了角度。"
                  "用 float32 或更高精度计算角度，只在最后对结果做舍入"),
               x * torch.cat((rounded.cos(),) * 2, -1) + _solution_rotate_half(x) * torch.cat((rounded.sin(),) * 2, -1))
    for dtype, name in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
        low_pos, low_theta = positions.to(dtype), (base ** (-pairs / dim)).to(dtype)
        low = (low_pos[:, None] * low_theta)  # the product in the low precision too
        for cos, sin in ((low.double().cos(), low.double().sin()), (low.cos().double(), low.sin().double())):
            yield (tr(f"your angles were computed in {name} (positions and theta in {name}, so their product "
                      f"too): {name} keeps {8 if name == 'bf16' else 11} significant bits, so position * theta is "
                      "wrong by whole fractions of a radian at these positions (the bf16 trap of notebook 06). "
                      "Compute positions * theta in float64 and round only the result",
                      f"你的角度是用 {name} 算的（positions 和 theta 都是 {name}，乘积也是）：{name} 只有 "
                      f"{8 if name == 'bf16' else 11} 位有效二进制位，在这些位置上 position * theta 会错上零点几弧度"
                      "（notebook 06 讲的 bf16 陷阱）。positions * theta 要用 float64 计算，只在最后对结果做舍入"),
                   x * torch.cat((cos,) * 2, -1) + _solution_rotate_half(x) * torch.cat((sin,) * 2, -1))
    yield (tr("your cos/sin are repeat_interleave'd (c0 c0 c1 c1 ..., the interleaved layout's tables) "
              "but rotate_half pairs halves: for the half-split layout use torch.cat((c, c), -1)",
              "你的 cos/sin 是用 repeat_interleave 展开的（c0 c0 c1 c1 ...，交错布局的表），"
              "但 rotate_half 配对的是前后两半：对半拆分布局要用 torch.cat((c, c), -1)"),
           x * ang.cos().repeat_interleave(2, -1) + _solution_rotate_half(x) * ang.sin().repeat_interleave(2, -1))


def _rope_half_other_inputs(fn, what) -> None:
    """Right at d = 8, base 500: also for d = 16, base 10000 and positions that start at 3?"""
    gen = torch.Generator().manual_seed(17)
    x = torch.randn(5, 16, generator=gen, dtype=torch.float64)
    positions = torch.tensor([3, 4, 9, 40, 300])
    want = apply_rope(x, positions, base=10000.0, layout="half")
    try:
        got = as_tensor(call(fn, x, positions, 10000.0, what=what), what)
        if got.shape != want.shape:
            problem = tr(f"shape {tuple(got.shape)}", f"形状 {tuple(got.shape)}")
        elif not bool(_rope_close(got, want, positions).all()):
            gap = float((got.double() - want).abs().max())
            problem = tr(f"max |difference| {gap:.3g}", f"最大 |差值| 为 {gap:.3g}")
        else:
            problem = ""
    except ExerciseError as error:
        problem = str(error)
    if problem:
        raise ExerciseError(tr("right for x of shape (8, 8) with base 500, wrong for x of shape (5, 16), base 10000 "
                               f"and positions [3, 4, 9, 40, 300] ({problem}): take d from x.shape[-1] and use the "
                               "`base` and `positions` you are given, nothing fixed",
                               "x 形状为 (8, 8)、base 为 500 时对了，换成形状 (5, 16)、base 10000、位置 "
                               f"[3, 4, 9, 40, 300] 就错了（{problem}）：d 要从 x.shape[-1] 取，"
                               "base 和 positions 用传进来的参数，不要写死"))


def check_unpermute_qk_rows(fn) -> None:
    """fn(weight (num_heads*head_dim, d_model), num_heads) -> the rows of a HALF-SPLIT checkpoint's W_q or W_k
    reordered, within each head, back to the interleaved pair order, so that interleaved RoPE (Meta-style code)
    on the new weights gives the scores half-split RoPE gives on the old ones."""
    gen = torch.Generator().manual_seed(8)
    what = tr("your function", "你的函数")
    for num_heads, head_dim, d_model, dtype in ((2, 8, 6, torch.float64), (4, 6, 5, torch.bfloat16)):
        weight = torch.randn(num_heads * head_dim, d_model, generator=gen, dtype=torch.float64).to(dtype)
        before = weight.clone()
        got = as_tensor(call(fn, weight, num_heads, what=what), what)
        if not torch.equal(weight, before):
            raise ExerciseError(tr("your function changed the weight in place: return a new tensor",
                                   "你的函数原地修改了 weight：请返回一个新张量"))
        _unpermuted_rows(got, weight, num_heads, what)
    ok(tr("rows permuted back head by head: interleaved RoPE on the new W gives half-split RoPE's scores on the old W.",
          "已逐个头把行换回原来的顺序：交错布局的 RoPE 作用于新 W，分数与对半拆分的 RoPE 作用于旧 W 相同。"))


def _unpermuted_rows(got, weight, num_heads, what) -> None:
    """check_unpermute_qk_rows on one weight: returns when `got` is its rows put back, else names the mistake."""
    out_features, d_model = weight.shape
    head_dim = out_features // num_heads
    want = _solution_unpermute_qk_rows(weight, num_heads)
    if got.shape != weight.shape:
        if got.shape == weight.T.shape:
            raise ExerciseError(tr("the result is transposed: keep nn.Linear's (out_features, in_features) layout",
                                   "结果转置了：要保持 nn.Linear 的 (out_features, in_features) 布局"))
        raise ExerciseError(tr(f"expected the weight's shape {tuple(weight.shape)}, got {tuple(got.shape)}",
                               f"形状应与 weight 相同，即 {tuple(weight.shape)}，实际是 {tuple(got.shape)}"))
    if got.is_floating_point() and same(got, want.to(got.dtype), atol=0):  # right rows, perhaps rounded to got's dtype
        keep_dtype(got, weight, what, name="weight")  # a checkpoint's bf16 rows returned as float32: twice the bytes
        return
    if num_heads != 2:
        for heads in {2, 1, out_features // 8} - {num_heads, 0}:  # 8 rows a head, the first weight's
            if out_features % heads == 0 and same(got, _solution_unpermute_qk_rows(weight, heads), atol=0):
                raise ExerciseError(tr(f"right for the first weight (2 heads of 8 rows), wrong for this one: "
                                       f"{ignored('num_heads', num_heads, heads)}; head_dim = weight.shape[0] // "
                                       "num_heads",
                                       f"第一个权重（2 个头，每个 8 行）对了，这一个却错了："
                                       f"{ignored('num_heads', num_heads, heads)}；head_dim = weight.shape[0] // "
                                       "num_heads"))
    perm = layout_permutation(head_dim)
    if same(got, weight.reshape(num_heads, head_dim, d_model)[:, perm].reshape_as(weight), atol=0):
        raise ExerciseError(tr("that is the interleaved -> half-split direction (perm itself); going back needs the "
                               "inverse permutation, torch.argsort(perm): new row perm[j] = old row j",
                               "这是从交错到对半拆分的方向（perm 本身）；要换回去得用逆置换 torch.argsort(perm)："
                               "新的第 perm[j] 行 = 旧的第 j 行"))
    if same(got, weight[:, torch.argsort(layout_permutation(d_model))], atol=0):
        raise ExerciseError(tr("you permuted the columns (input features); the pairs live in the OUTPUT dims: permute "
                               "rows",
                               "你重排的是列（输入特征）；成对的维度在输出维上：要重排的是行"))
    if same(got, weight[torch.argsort(layout_permutation(num_heads * head_dim))], atol=0):
        raise ExerciseError(tr("you permuted all rows at once, mixing the heads; permute within each head's block of "
                               "head_dim rows (reshape to (num_heads, head_dim, d_model) first)",
                               "你把所有行放在一起重排，各个头就混在一起了；应在每个头自己的 head_dim 行里重排"
                               "（先 reshape 成 (num_heads, head_dim, d_model)）"))
    raise ExerciseError(tr("wrong row order: within each head, new row perm[j] = old row j, "
                           "perm = layout_permutation(head_dim)",
                           "行的顺序不对：在每个头内部，新的第 perm[j] 行 = 旧的第 j 行，"
                           "其中 perm = layout_permutation(head_dim)"))


# ---------------------------------------------------------------------------- 09: the complex form

def _rope_complex_mistakes(x, m, base):
    """(message, what that mistake returns) for the mistakes check_rope_complex names, in the order it tries them."""
    d = x.shape[-1]
    theta, _ = rope_inv_freq(d, base=base)
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())

    def turned(angles):
        return torch.view_as_real(z * torch.polar(torch.ones(d // 2, dtype=torch.float64), angles)).flatten(-2)

    z_half = torch.complex(x[..., :d // 2], x[..., d // 2:]) * torch.polar(torch.ones(d // 2, dtype=torch.float64),
                                                                          m * theta)
    yield (tr("you paired dim i with dim i + d/2 (the half-split layout of rotate_half): the derivation "
              "and view_as_complex pair neighbours (2i, 2i+1); both are valid RoPEs, but they differ by a "
              "permutation of dims and must not be mixed",
              "你把第 i 维和第 i + d/2 维配成了一对（rotate_half 的对半拆分布局）：推导和 "
              "view_as_complex 配对的是相邻两维 (2i, 2i+1)；两种都是合法的 RoPE，"
              "但彼此差一个维度置换，不能混用"),
           torch.cat((z_half.real, z_half.imag), -1))
    yield (tr("you multiplied by e^{-i m theta} (a clockwise turn): RoPE uses e^{+i m theta}. Used for "
              "both q and k, e^{-i m theta} is RoPE at negated positions: scores depend on n - m instead "
              "of m - n, so against the reference (or Meta's Llama weights) a key 3 positions back "
              "scores as one 3 positions ahead would",
              "你乘的是 e^{-i m theta}（顺时针旋转）：RoPE 用的是 e^{+i m theta}。q 和 k 都乘 "
              "e^{-i m theta}，就相当于在取负的位置上做 RoPE：分数取决于 n - m 而不是 m - n，"
              "于是对照参考实现（或 Meta 的 Llama 权重），往前 3 个位置的键拿到的，"
              "是往后 3 个位置的键本该有的分数"),
           turned(-m * theta))
    yield (tr("wrong frequencies: theta_i = base ** (-2i/d) for pair i, not base ** (-i/d)",
              "频率错了：第 i 对的 theta_i = base ** (-2i/d)，不是 base ** (-i/d)"),
           turned(m * base ** (-torch.arange(d // 2, dtype=torch.float64) / d)))
    yield (tr("a doubled exponent: base ** (-2 * arange(0, d, 2) / d) is base^(-4i/d), every frequency of base^2; "
              "arange(0, d, 2) already is 2i, so theta_i = base ** (-arange(0, d, 2) / d)",
              "指数翻倍了：base ** (-2 * arange(0, d, 2) / d) 是 base^(-4i/d)，相当于把底数换成了 base^2；"
              "arange(0, d, 2) 本身就是 2i，所以 theta_i = base ** (-arange(0, d, 2) / d)"),
           turned(m * theta ** 2))
    yield (tr(f"you ignored the `base` argument: your result is RoPE with base 10000, the check passed base={base:g}",
              f"你没有用参数 `base`：你的结果是底数 10000 的 RoPE，而检查器传入的是 base={base:g}"),
           turned(m * rope_inv_freq(d)[0]))
    for dtype, name in ((torch.bfloat16, "bf16"), (torch.float16, "fp16")):
        for rounded in ((m * theta).to(dtype).double(), m * theta.to(dtype).double()):
            yield (tr(f"your angles m * theta (or theta) are rounded to {name}: {name} keeps "
                      f"{8 if name == 'bf16' else 11} significant bits, so every pair turns by a slightly wrong "
                      f"angle, and the error grows with m. Compute theta and m * theta in float32 or better "
                      f"(torch.polar needs float angles anyway)",
                      f"你的角度 m * theta（或 theta）被舍入成了 {name}：{name} 只有 "
                      f"{8 if name == 'bf16' else 11} 位有效二进制位，每一对都转错了一点角度，误差还随 m 增大。"
                      f"theta 和 m * theta 要用 float32 或更高精度计算（torch.polar 本来也需要浮点角度）"),
                   turned(rounded))


def check_rope_complex(rope_by_complex) -> None:
    """rope_by_complex(x, m, base=10000.0) -> x (..., d) rotated for position m via pairs (x[2i], x[2i+1]) as
    complex numbers times e^{i m theta_i} (the derivation's form; compare posenc_lib.rope_complex). Tried at
    m = 0, 3, 17 with base 10000 and at m = 5 with base 500; the mistakes of _rope_complex_mistakes are named,
    as are a complex result, view_as_real's (..., d/2, 2) left unflattened and a result not in x's dtype (float64);
    float32 angles pass with a note on what they cost at long positions."""
    gen = torch.Generator().manual_seed(9)
    x = torch.randn(3, 8, generator=gen, dtype=torch.float64)
    gap = 0.0  # the largest difference of a right answer from the float64 reference: float32 angles get a note
    for m, base in ((0, 10000.0), (3, 10000.0), (17, 10000.0), (5, 500.0)):
        before = x.clone()
        what = f"rope_by_complex(x, {m}, base={base:g})"
        got = tensor(call(rope_by_complex, x, m, base=base, what=what), what)
        if not torch.equal(x, before):
            raise ExerciseError(tr("your function modified x in place; return a new tensor",
                                   "你的函数原地修改了 x；请返回一个新张量"))
        if got.is_complex():
            raise ExerciseError(tr(f"{what} returned complex numbers {tuple(got.shape)} {got.dtype}: the exercise "
                                   f"asks for the real tensor of x's shape {tuple(x.shape)}: "
                                   f"torch.view_as_real(z).flatten(-2)",
                                   f"{what} 返回的是复数 {tuple(got.shape)} {got.dtype}：题目要的是与 x 形状相同 "
                                   f"{tuple(x.shape)} 的实数张量：torch.view_as_real(z).flatten(-2)"))
        result_dtype, got = got.dtype, got.double()
        right = rope_complex(x[:, None, :], torch.tensor([m]), base=base)[:, 0]  # each row at position m
        if same(got, right, 1e-5):  # float32 angles (Meta's Llama code) are right too, with a note
            keep_dtype(got.to(result_dtype), x, what)
            gap = max(gap, float((got - right).abs().max()))
            continue
        if tuple(got.shape) == (*x.shape[:-1], x.shape[-1] // 2, 2):
            raise ExerciseError(tr(f"the result has shape {tuple(got.shape)}: view_as_real gives (..., d/2, 2); "
                                   f"flatten its last two dims (.flatten(-2)) to get x's shape {tuple(x.shape)}",
                                   f"结果的形状是 {tuple(got.shape)}：view_as_real 给出的是 (..., d/2, 2)；"
                                   f"把最后两维展平（.flatten(-2)），才是 x 的形状 {tuple(x.shape)}"))
        if tuple(got.shape) != tuple(x.shape):
            raise ExerciseError(tr(f"the result should have x's shape {tuple(x.shape)}, got {tuple(got.shape)}",
                                   f"结果应与 x 形状相同，即 {tuple(x.shape)}，实际是 {tuple(got.shape)}"))
        for mistake, reference in _rope_complex_mistakes(x, m, base):
            if same(got, reference, 1e-5):
                raise ExerciseError(mistake)
        raise ExerciseError(tr(f"at m={m} the result differs from the reference by up to "
                               f"{float((got - right).abs().max()):.3g}",
                               f"m={m} 时，结果与参考实现最多相差 {float((got - right).abs().max()):.3g}"))
    ok(tr("pairs as complex numbers times e^{i m theta}: the same rotation as apply_rope(..., layout='interleaved')",
          "把每一对看作复数，再乘以 e^{i m theta}：与 apply_rope(..., layout='interleaved') 是同一个旋转")
       + float32_note(gap, 17))


# ------------------------------------------------------------------------------------ reference solutions

def _solution_rope_pair(x1, x2, angle):
    c, s = torch.cos(angle), torch.sin(angle)
    return x1 * c - x2 * s, x1 * s + x2 * c


def _solution_rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _solution_rope_half(x, positions, base=10000.0):
    dim = x.shape[-1]
    inv_freq = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    angles = positions.double()[:, None] * inv_freq[None, :]  # angles in float64
    cos, sin = torch.cat((angles.cos(), angles.cos()), -1), torch.cat((angles.sin(), angles.sin()), -1)
    return (x.double() * cos + _solution_rotate_half(x.double()) * sin).to(x.dtype)


def _solution_unpermute_qk_rows(weight, num_heads):
    out_features, in_features = weight.shape
    head_dim = out_features // num_heads
    inverse = torch.argsort(layout_permutation(head_dim))  # half-split dim j came from interleaved dim perm[j]
    return weight.reshape(num_heads, head_dim, in_features)[:, inverse].reshape(out_features, in_features)


def _solution_rope_complex(x, m, base=10000.0):
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    rotated = z * torch.polar(torch.ones_like(theta), m * theta)
    return torch.view_as_real(rotated).flatten(-2).to(x.dtype)


SOLUTIONS: dict = {  # exercise name -> a reference solution (kept out of the notebooks' visible cells)
    "rope_pair": _solution_rope_pair,
    "rotate_half": _solution_rotate_half,
    "rope_half": _solution_rope_half,
    "unpermute_qk_rows": _solution_unpermute_qk_rows,
    "rope_complex": _solution_rope_complex,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}  # exercise name -> its checker
