"""Exercises of notebook 11: positions in two and three dimensions. The (row, col) of every patch, 2-D axial
RoPE in Qwen2-VL's vision form, M-RoPE's position ids for text around an image, and which coordinate
each RoPE pair reads under M-RoPE's chunks and Qwen3-VL's interleaving.

Each check_<name>(answer) calls the learner's function on a few inputs, prints one line starting
with "✓" when it is right, and otherwise raises ExerciseError saying WHAT is wrong (rows and columns
swapped, column-major order, the flattened index, Pixtral's frequencies, counting tokens instead of
resuming after the largest id, the chunked layout where the interleaved one was asked ...).
`attempt(check, answer)` runs a check from a notebook cell without stopping the notebook.
SOLUTIONS[name] is a reference solution for check_<name>; CHECKS[name] is the checker.

Conventions (as in posenc_lib.multidim): positions are (axes, seq) with the axis first; row-major order
(the column changes fastest); 2-D RoPE pairs 0 .. d/4-1 read the row and d/4 .. d/2-1 the column in
the half-split layout, turned counter-clockwise; M-RoPE axes are t (0), h (1), w (2).
"""
from __future__ import annotations

import torch

from ..i18n import tr
from ..multidim import apply_axial_rope, mrope_axes, mrope_position_ids
from ..rope import apply_rope
from ._common import (
    ExerciseError,
    as_tensor,
    attempt,
    call,
    float32_note,
    ignored,
    integers,
    keep_dtype,
    name_the_mistake,
    ok,
    same,
)

__all__ = ["attempt", "check_patch_positions", "check_axial_rope", "check_text_image_positions",
           "check_mrope_axes"]


# ------------------------------------------------------------------------------- (row, col) of the patches

def check_patch_positions(fn) -> None:
    """fn(height, width) -> (2, height * width) integer tensor: [0] the row, [1] the column of every patch of a
    height x width grid in row-major order (0,0) (0,1) ... (0,W-1) (1,0) ..."""
    for height, width in ((2, 3), (3, 5)):
        got = as_tensor(call(fn, height, width, what=tr(f"your function({height}, {width})",
                                                        f"你的函数({height}, {width})")),
                        tr("your function", "你的函数"))
        want = _solution_patch_positions(height, width)
        if got.is_floating_point() or got.is_complex() or got.dtype == torch.bool:
            raise ExerciseError(tr(f"your coordinates are {got.dtype}: a patch's row and column count patches, so "
                                   f"return integers (torch.arange and meshgrid give int64); RoPE turns them into "
                                   f"float64 angles itself",
                                   f"你的坐标是 {got.dtype}：patch 的行号和列号是在数 patch，应返回整数（torch.arange "
                                   f"和 meshgrid 给出的就是 int64）；RoPE 会自己把它们变成 float64 的角度"))
        if tuple(got.shape) == tuple(want.shape) and torch.equal(got.long(), want):
            continue
        if tuple(got.shape) == (height * width, 2):
            raise ExerciseError(tr(f"shape {tuple(got.shape)}: the course (and M-RoPE's position ids) puts the axis "
                                   "first, (2, seq); use torch.stack((rows, cols)) rather than dim=-1",
                                   f"形状是 {tuple(got.shape)}：本课程（以及 M-RoPE 的 position ids）把轴放在第一维，"
                                   f"即 (2, seq)；请用 torch.stack((rows, cols))，不要用 dim=-1"))
        if tuple(got.shape) == (height * width,):
            raise ExerciseError(tr("you returned one number per patch (the flattened index?): 2-D RoPE needs the row "
                                   "and the column of each patch, shape (2, height * width)",
                                   "你给每个 patch 只返回了一个数（展平后的索引？）：2-D RoPE 要的是每个 patch "
                                   "的行和列，形状为 (2, height * width)"))
        if tuple(got.shape) != tuple(want.shape):
            raise ExerciseError(tr(f"expected shape {tuple(want.shape)} for a {height} x {width} grid, got "
                                   f"{tuple(got.shape)}",
                                   f"{height} x {width} 网格的形状应为 {tuple(want.shape)}，"
                                   f"你的是 {tuple(got.shape)}"))
        got = got.long()
        if torch.equal(got, want.flip(0)):
            raise ExerciseError(tr("rows and columns are swapped: [0] must be the row, [1] the column",
                                   "行和列弄反了：[0] 应是行，[1] 应是列"))
        if torch.equal(got, want + 1):
            raise ExerciseError(tr("your rows and columns start at 1; patch (0, 0) is the top-left one",
                                   "你的行号和列号从 1 开始了；左上角的 patch 是 (0, 0)"))
        column_major = torch.stack(torch.meshgrid(torch.arange(height), torch.arange(width), indexing="xy")).flatten(1)
        if torch.equal(got, column_major):
            raise ExerciseError(tr("column-major order (the row changes fastest): patches are flattened row by row, "
                                   "so the column changes fastest (meshgrid(..., indexing='ij'))",
                                   "这是列优先顺序（行变化最快）：patch 是逐行展平的，所以应是列变化最快"
                                   "（meshgrid(..., indexing='ij')）"))
        raise ExerciseError(tr(f"for a {height} x {width} grid expected {want.tolist()}, got {got.tolist()}",
                               f"{height} x {width} 的网格应为 {want.tolist()}，得到的是 {got.tolist()}"))
    ok(tr("(row, col) of every patch, row by row: the input of 2-D RoPE.",
          "逐行给出每个 patch 的 (row, col)：这就是 2-D RoPE 的输入。"))


# ------------------------------------------------------------------------------- 2-D axial RoPE

def check_axial_rope(fn) -> None:
    """fn(x (T, d), rows (T,), cols (T,), base) -> x rotated by 2-D axial RoPE in Qwen2-VL's vision form:
    half-split pairs (x[i], x[i + d/2]); pair i < d/4 turns by rows * phi_i, pair i >= d/4 by
    cols * phi_{i - d/4}, phi_j = base ** (-2j / (d/2)); counter-clockwise. Tried on a 3 x 4 grid with d = 16 and
    base 100, then on a 2 x 5 grid with d = 8 and base 1000, then on the first grid's patches at rows 5.. and
    columns 3.. (a crop of a larger image), so a size, a base or a grid fixed in the code is named. The result is in
    x's dtype (float64 here); float32 angles pass with a note on what they cost at long positions."""
    gen = torch.Generator().manual_seed(11)
    gap = 0.0  # the largest difference of a right answer from the float64 reference: float32 angles get a note
    for height, width, dim, base, shift in ((3, 4, 16, 100.0, (0, 0)), (2, 5, 8, 1000.0, (0, 0)),
                                            (3, 4, 16, 100.0, (5, 3))):
        x = torch.randn(height * width, dim, generator=gen, dtype=torch.float64)
        gap = max(gap, _axial_rope_on(fn, x, height, width, base, shift))
    ok(tr("2-D axial RoPE: half of the pairs turn with the row, the other half with the column; the score depends "
          "on (d_row, d_col) only.",
          "2-D 轴向 RoPE：一半的对随行旋转，另一半随列旋转；分数只取决于 (d_row, d_col)。") + float32_note(gap, 7))


def _axial_rope_on(fn, x, height, width, base, shift) -> float:
    """check_axial_rope on one grid: the largest difference of a right answer from the float64 reference, or the
    mistake named."""
    dim = x.shape[-1]
    from_zero = torch.stack(torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")).flatten(1)
    grid = from_zero + torch.tensor(shift)[:, None]                                          # (2, T): rows, cols
    rows, cols = grid[0].clone(), grid[1].clone()
    before = x.clone()
    got = as_tensor(call(fn, x, rows, cols, base, what=tr("your axial RoPE", "你的轴向 RoPE 函数")),
                    tr("your axial RoPE", "你的轴向 RoPE 函数"))
    if not torch.equal(x, before):
        raise ExerciseError(tr("your function changed x in place: return a new tensor",
                               "你的函数原地改动了 x：请返回一个新张量"))
    want = apply_axial_rope(x, grid, base=base, style="qwen2_vl")
    if tuple(got.shape) != tuple(want.shape):
        raise ExerciseError(tr(f"expected x's shape {tuple(x.shape)}, got {tuple(got.shape)}",
                               f"形状应与 x 相同，即 {tuple(x.shape)}，得到的是 {tuple(got.shape)}"))
    if same(got, want, atol=1e-5):
        keep_dtype(got, x, tr("your axial RoPE", "你的轴向 RoPE 函数"))
        return float((got.double() - want).abs().max())
    if shift != (0, 0):
        name_the_mistake(got, [(apply_axial_rope(x, from_zero, base=base, style="qwen2_vl"),
                                ignored("rows, cols", tr(f"rows from {shift[0]}, columns from {shift[1]}",
                                                         f"({shift[0]}, {shift[1]}) 起的网格"),
                                        tr("a grid of your own from (0, 0)", "你自己从 (0, 0) 建的网格")))],
                         lambda a, b: same(a, b, atol=1e-5))
    if shift == (0, 0) and not same(got[0], x[0], atol=1e-5):
        raise ExerciseError(tr("patch (0, 0) must not move (all angles are 0); yours changes it",
                               "patch (0, 0) 不应改变（所有角度都是 0）；你的结果把它改了"))
    mistakes = [
        (apply_axial_rope(x, grid.flip(0), base=base, style="qwen2_vl"),
         tr("rows and columns are swapped: pairs 0 .. d/4-1 turn with the ROW, pairs d/4 .. d/2-1 with the column",
            "行和列弄反了：第 0 .. d/4-1 对随行旋转，第 d/4 .. d/2-1 对随列旋转")),
        (apply_rope(x, rows * width + cols, base=base),
         tr("that is 1-D RoPE on the flattened index row * W + col: the patch below is then W positions away. Turn "
            "half of the pairs with the row and half with the column",
            "这是对展平索引 row * W + col 做的 1-D RoPE：正下方的 patch 因此相距 W 个位置。"
            "应让一半的对随行旋转，另一半随列旋转")),
        (apply_axial_rope(x, grid, base=base, style="pixtral"),
         tr("those are Pixtral's frequencies (rows on theta_0, theta_2, ..., columns on theta_1, theta_3, ... of base "
            "** (-2j/d)); Qwen2-VL gives rows and columns the same phi_j = base ** (-2j/(d/2))",
            "这是 Pixtral 的频率（取 base ** (-2j/d)，行用 theta_0, theta_2, ...，列用 theta_1, theta_3, ...）；"
            "Qwen2-VL 的行和列用的是同一组 phi_j = base ** (-2j/(d/2))")),
        (apply_axial_rope(x, grid, base=base, style="qwen2_vl", layout="interleaved"),
         tr("you paired neighbouring dims (2i, 2i+1); Qwen2-VL's vision tower uses the half-split pairs (x[i], x[i + "
            "d/2]) with rotate_half",
            "你把相邻维度 (2i, 2i+1) 配成了对；Qwen2-VL 的视觉编码器用的是对半拆分的配对 "
            "(x[i], x[i + d/2])，配合 rotate_half")),
        (apply_axial_rope(x, -grid, base=base, style="qwen2_vl"),
         tr("your rotation turns clockwise (by -angle): use x * cos + rotate_half(x) * sin",
            "你的旋转是顺时针的（转了 -angle）：应为 x * cos + rotate_half(x) * sin")),
        (_axial(x, grid, base, exponent_over=dim),
         tr("frequency exponent: phi_j = base ** (-2j/(d/2)) (computed over HALF the head dim, as transformers' "
            "Qwen2VLVisionRotaryEmbedding does); you used base ** (-2j/d)",
            "频率的指数不对：phi_j = base ** (-2j/(d/2))（按头维度的一半计算，与 transformers 的 "
            "Qwen2VLVisionRotaryEmbedding 一致）；你用的是 base ** (-2j/d)")),
        (_axial(x, torch.stack((rows, torch.zeros_like(cols))), base),
         tr("the columns do nothing in your version: pairs d/4 .. d/2-1 must turn by col * phi",
            "你的版本里列不起作用：第 d/4 .. d/2-1 对要转过 col * phi")),
        *[(apply_axial_rope(x, grid, base=other, style="qwen2_vl"), ignored("base", f"{base:g}", f"{other:g}"))
          for other in (10000.0, 100.0) if other != base],  # the default, or the first input's base
        (_axial(x, grid, base, tables="repeat_interleave"),
         tr("your cos/sin tables are repeat_interleave'd (c0 c0 c1 c1 ..., the interleaved layout's tables), but "
            "rotate_half pairs x[i] with x[i + d/2]: the full-width tables are [cos, cos] = torch.cat((cos, cos), -1) "
            "of the (T, d/2) angles",
            "你的 cos/sin 表是用 repeat_interleave 展开的（c0 c0 c1 c1 ...，交错布局的表），但 rotate_half 把 x[i] "
            "和 x[i + d/2] 配成一对：全宽的表是 (T, d/2) 角度的 [cos, cos] = torch.cat((cos, cos), -1)")),
        (_axial(x, grid, base, tables="per_axis"),
         tr("your tables repeat each axis on its own, [rows, rows, cols, cols]: then x[i] turns with the row and its "
            "partner x[i + d/2] with the column, so the pair is no rotation at all. Concatenate the d/2 angles "
            "[rows, cols] first, then repeat that whole half-width table: [rows, cols, rows, cols]",
            "你的表把每个轴单独重复了一遍，[rows, rows, cols, cols]：于是 x[i] 随行旋转，它的搭档 x[i + d/2] "
            "却随列旋转，这一对根本不是旋转。应先拼出 d/2 个角度 [rows, cols]，再把这整张半宽的表重复一遍："
            "[rows, cols, rows, cols]")),
        *[(_axial(x, grid, base, low=dtype, low_product=product, low_trig=trig),
           tr(f"your angles are {name} ({bits} significant bits): row * phi and col * phi are off by up to "
              f"{float(((grid.abs().max() * 2.0 ** -bits))):.2g} rad here, and more on a large image. The task asks "
              f"for angles in float64",
              f"你的角度是 {name}（只有 {bits} 位有效二进制位）：这里 row * phi 和 col * phi 最多偏 "
              f"{float(((grid.abs().max() * 2.0 ** -bits))):.2g} 弧度，图像越大偏得越多。题目要求角度用 float64"))
          for dtype, name, bits in ((torch.bfloat16, "bf16", 8), (torch.float16, "fp16", 11))
          for product in (False, True) for trig in (False, True)],
    ]
    name_the_mistake(got, mistakes, lambda a, b: same(a, b, atol=1e-5))
    raise ExerciseError(tr(f"wrong values: max |difference| {float((got.double() - want).abs().max()):.3g}",
                           f"数值不对：最大 |差值| 为 {float((got.double() - want).abs().max()):.3g}"))


def _axial(x, grid, base, exponent_over=None, tables="full", low=None, low_product=False, low_trig=False):
    """Qwen2-VL-style axial RoPE with phi_j = base ** (-2j/exponent_over) (default d/2), float64; or with one of a
    learner's slips: tables "repeat_interleave" (c0 c0 c1 c1 ..., the interleaved layout's tables) or "per_axis"
    ([rows, rows, cols, cols]: each axis's angles repeated instead of the whole half-width table), angles in the
    dtype `low` (rounded from float64, or with low_product positions and phi multiplied in it; low_trig: cos and
    sin taken in it too)."""
    dim = x.shape[-1]
    over = dim // 2 if exponent_over is None else exponent_over
    phi = base ** (-torch.arange(0, dim // 2, 2, dtype=torch.float64) / over)            # (d/4,)
    if low is None:
        rows, cols = grid[0, :, None] * phi, grid[1, :, None] * phi
    elif low_product:
        rows, cols = grid[0, :, None].to(low) * phi.to(low), grid[1, :, None].to(low) * phi.to(low)
    else:
        rows, cols = (grid[0, :, None] * phi).to(low), (grid[1, :, None] * phi).to(low)
    if not low_trig:
        rows, cols = rows.double(), cols.double()

    def cos_sin(parts):
        return (torch.cat([p.cos() for p in parts], -1).double(), torch.cat([p.sin() for p in parts], -1).double())

    if tables == "repeat_interleave":
        cos, sin = (t.repeat_interleave(2, -1) for t in cos_sin((rows, cols)))
    elif tables == "per_axis":
        cos, sin = cos_sin((rows, rows, cols, cols))
    else:
        cos, sin = cos_sin((rows, cols, rows, cols))
    half = dim // 2
    turned = torch.cat((-x[..., half:], x[..., :half]), -1)
    return x.double() * cos + turned.double() * sin


# ------------------------------------------------------------------------------- M-RoPE position ids

def check_text_image_positions(fn) -> None:
    """fn(text_before, height, width, text_after) -> (3, seq) integer tensor: M-RoPE ids (t, h, w) of
    `text_before` text tokens, an image of height x width LLM tokens (after the spatial merge; one frame)
    in row-major order, and `text_after` text tokens (Qwen2-VL's rule: text counts on from the largest id
    so far + 1)."""
    for before, height, width, after in ((3, 2, 3, 2), (1, 4, 2, 3)):
        args = (before, height, width, after)
        got = integers(call(fn, *args, what=tr(f"your function{args}", f"你的函数{args}")),
                       tr("your function", "你的函数"))
        want = mrope_position_ids([("text", before), ("image", (1, height, width)), ("text", after)],
                                  spatial_merge_size=1)
        if tuple(got.shape) == tuple(want.shape) and torch.equal(got.long(), want):
            continue
        if tuple(got.shape) == tuple(want.T.shape):
            raise ExerciseError(tr(f"shape {tuple(got.shape)}: put the axis first, (3, seq) (rows t, h, w)",
                                   f"形状是 {tuple(got.shape)}：轴要放在第一维，即 (3, seq)（三行依次是 t、h、w）"))
        if tuple(got.shape) != tuple(want.shape):
            raise ExerciseError(tr(f"expected shape (3, {want.shape[1]}) for {args} (text + image tokens + text), got "
                                   f"{tuple(got.shape)}",
                                   f"{args}（文本 + 图像 token + 文本）的形状应为 (3, {want.shape[1]})，"
                                   f"得到的是 {tuple(got.shape)}"))
        got = got.long()
        image = slice(before, before + height * width)
        tail = slice(before + height * width, None)
        if not torch.equal(got[:, :before], want[:, :before]):
            raise ExerciseError(tr("the first text tokens are plain 1-D positions 0, 1, ... on all three axes",
                                   "开头的文本 token 就是普通的 1-D 位置 0, 1, ...，三个轴上都一样"))
        if torch.equal(got[:, image], want[:, image] - before):
            raise ExerciseError(tr(f"the image's ids start at 0: offset them by the first free id ({before} here), so "
                                   "the image comes after the text",
                                   f"图像的 id 从 0 开始了：要加上第一个空闲的 id（这里是 {before}），"
                                   f"让图像排在文本之后"))
        if torch.equal(got[:, image], want[:, image] + 1):
            raise ExerciseError(tr(f"off by one: the image starts at {before + 1}; the first free id after "
                                   f"{before} text tokens (ids 0 .. {before - 1}) is {before}, and the image's "
                                   f"(t, h, w) start there: {before} + (0, row, col)",
                                   f"差了一位：你的图像从 {before + 1} 开始；"
                                   f"{before} 个文本 token（id 0 .. {before - 1}）之后第一个空闲的 id 是 {before}，"
                                   f"图像的 (t, h, w) 从那里开始：{before} + (0, row, col)"))
        if torch.equal(got[1:, image], want[1:, image].flip(0)):
            raise ExerciseError(tr("h and w are swapped: h is the row (changes slowest), w the column (changes "
                                   "fastest)",
                                   "h 和 w 弄反了：h 是行（变化最慢），w 是列（变化最快）"))
        if not torch.equal(got[0, image], want[0, image]):
            raise ExerciseError(tr("an image is one frame: its t id is the same for every token, the start id "
                                   f"{before}",
                                   f"一张图像只有一帧：每个 token 的 t id 都相同，都是起始 id {before}"))
        if not torch.equal(got[:, image], want[:, image]):
            raise ExerciseError(tr(f"image tokens: expected {want[:, image].tolist()}, got {got[:, image].tolist()}",
                                   f"图像 token：应为 {want[:, image].tolist()}，得到的是 {got[:, image].tolist()}"))
        start = int(got[0, tail][0])
        right = int(want[0, tail][0])
        if start == before + height * width:
            raise ExerciseError(tr(f"you counted tokens (text after the image starts at {start} = {before} + "
                                   f"{height}x{width}); M-RoPE resumes at the largest id so far + 1 = {right}: an "
                                   "image moves the position on by max(h, w), not by h*w",
                                   f"你数的是 token 个数（图像后的文本从 {start} = {before} + {height}x{width} 开始）；"
                                   f"M-RoPE 从目前最大的 id + 1 = {right} 接着编号：一张图像让位置前进 max(h, w)，"
                                   f"而不是 h*w"))
        if start == right - 1:
            raise ExerciseError(tr(f"off by one: the largest image id is {right - 1}, so the text after it starts at "
                                   f"{right}, not {start} (two tokens would share ids)",
                                   f"差了一位：图像最大的 id 是 {right - 1}，所以其后的文本从 {right} 开始，"
                                   f"而不是 {start}（否则会有两个 token 的 id 相同）"))
        raise ExerciseError(tr(f"the text after the image should be {want[0, tail].tolist()} on every axis, got "
                               f"{got[:, tail].tolist()}",
                               f"图像后的文本在每个轴上都应为 {want[0, tail].tolist()}，"
                               f"得到的是 {got[:, tail].tolist()}"))
    ok(tr("text, image, text: the image sits on a (t, h, w) grid from the first free id, the text after it resumes at "
          "max id + 1.",
          "文本、图像、文本：图像从第一个空闲 id 起排在 (t, h, w) 网格上，其后的文本从最大 id + 1 接着编号。"))


# ------------------------------------------------------------------------------- which pair reads which axis

def check_mrope_axes(fn) -> None:
    """fn(mrope_section, interleaved) -> the axis (0 t, 1 h, 2 w) of every RoPE pair, a list or tensor of
    sum(mrope_section) ints: chunks t..t h..h w..w, or Qwen3-VL's interleaving t h w t h w ... t t."""
    for section, interleaved in (((2, 3, 3), False), ((4, 2, 2), True), ((24, 20, 20), True), ((16, 24, 24), False),
                                 ((24, 20, 20), False)):
        got = integers(call(fn, list(section), interleaved,
                            what=tr(f"your function({list(section)}, {interleaved})",
                                    f"你的函数({list(section)}, {interleaved})")),
                       tr("your function", "你的函数"))
        want = mrope_axes(list(section), interleaved=interleaved)
        if tuple(got.shape) == tuple(want.shape) and torch.equal(got.long(), want):
            continue
        if got.numel() == 2 * want.numel():
            raise ExerciseError(tr(f"{got.numel()} entries for {list(section)}: mrope_section counts PAIRS (d/2 of "
                                   f"them, {want.numel()} here), not dims; transformers doubles it only for its [c, "
                                   "c] tables",
                                   f"{list(section)} 得到了 {got.numel()} 项：mrope_section 数的是对（共 d/2 对，"
                                   f"这里是 {want.numel()}），不是维度；transformers 只在构造 [c, c] 表时才把它翻倍"))
        if tuple(got.shape) != tuple(want.shape):
            raise ExerciseError(tr(f"expected {want.numel()} entries (one per pair) for {list(section)}, got shape "
                                   f"{tuple(got.shape)}",
                                   f"{list(section)} 应有 {want.numel()} 项（每对一项），"
                                   f"得到的形状是 {tuple(got.shape)}"))
        got = got.long()
        chunked = mrope_axes(list(section))
        if interleaved and torch.equal(got, chunked):
            raise ExerciseError(tr("that is the chunked layout (Qwen2-VL); interleaved=True asks for Qwen3-VL's t h w "
                                   "t h w ... with the leftover pairs going to t",
                                   "这是分块布局（Qwen2-VL）；interleaved=True 要的是 Qwen3-VL 的 "
                                   "t h w t h w ...，多出来的对归 t"))
        if not interleaved and torch.equal(got, _every_third(section)):
            raise ExerciseError(tr("interleaved=False is the chunked layout: s_t pairs of t, then s_h of h, then s_w "
                                   "of w",
                                   "interleaved=False 是分块布局：先 s_t 对 t，再 s_h 对 h，最后 s_w 对 w"))
        if interleaved and torch.equal(got, torch.arange(want.numel()) % 3):
            raise ExerciseError(tr(f"that is i % 3 for every pair: t h w repeats only while every axis has pairs left "
                                   f"(3 * s_h = {3 * section[1]} pairs for {list(section)}); the "
                                   f"{want.numel() - 3 * min(section[1:])} leftover pairs all go to t",
                                   f"这是对每一对都取 i % 3：t h w 只在每个轴都还有剩余的对时才循环"
                                   f"（{list(section)} 时是 3 * s_h = {3 * section[1]} 对）；"
                                   f"多出来的 {want.numel() - 3 * min(section[1:])} 对全都归 t"))
        swapped = torch.where(want == 1, 2, torch.where(want == 2, 1, want))
        if torch.equal(got, swapped):
            raise ExerciseError(tr("h and w are swapped: the order is t, h, w (pair 1 reads h, pair 2 reads w when "
                                   "interleaved)",
                                   "h 和 w 弄反了：顺序是 t、h、w（交错时第 1 对读 h，第 2 对读 w）"))
        raise ExerciseError(tr(f"for {list(section)}, interleaved={interleaved}: expected {want.tolist()}, got "
                               f"{got.tolist()}",
                               f"{list(section)}、interleaved={interleaved} 时应为 {want.tolist()}，"
                               f"得到的是 {got.tolist()}"))
    ok(tr("chunks for Qwen2-VL, t h w t h w ... for Qwen3-VL: each axis gets its section's number of pairs.",
          "Qwen2-VL 分块，Qwen3-VL 按 t h w t h w ... 交错：每个轴分到几对，就是它在 section 中对应的那个数。"))


def _every_third(section) -> torch.Tensor:
    """The interleaving rule applied whatever the section (transformers' Qwen3-VL code does not check it)."""
    i = torch.arange(sum(section))
    return torch.where((i % 3 == 1) & (i < 3 * section[1]), 1, torch.where((i % 3 == 2) & (i < 3 * section[2]), 2, 0))


# ------------------------------------------------------------------------------------ reference solutions

def _solution_patch_positions(height, width):
    rows, cols = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")   # (H, W) each
    return torch.stack((rows.flatten(), cols.flatten()))                                     # (2, H*W)


def _solution_axial_rope(x, rows, cols, base=10000.0):
    dim = x.shape[-1]
    phi = base ** (-torch.arange(0, dim // 2, 2, dtype=torch.float64) / (dim // 2))        # (d/4,) over d/2
    angles = torch.cat((rows[:, None] * phi, cols[:, None] * phi), dim=-1)                  # (T, d/2)
    cos, sin = torch.cat((angles.cos(), angles.cos()), -1), torch.cat((angles.sin(), angles.sin()), -1)
    half = dim // 2
    turned = torch.cat((-x[..., half:], x[..., :half]), dim=-1)                             # rotate_half
    return (x.double() * cos + turned.double() * sin).to(x.dtype)


def _solution_text_image_positions(text_before, height, width, text_after):
    first = torch.arange(text_before).expand(3, -1)                                         # t = h = w
    rows, cols = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    image = torch.stack((torch.zeros(height * width, dtype=torch.long), rows.flatten(), cols.flatten())) + text_before
    resume = int(image.max()) + 1                                                           # largest id + 1
    last = (torch.arange(text_after) + resume).expand(3, -1)
    return torch.cat((first, image, last), dim=1)


def _solution_mrope_axes(mrope_section, interleaved=False):
    s_t, s_h, s_w = mrope_section
    if not interleaved:
        return [0] * s_t + [1] * s_h + [2] * s_w
    axes = []
    for i in range(s_t + s_h + s_w):
        if i % 3 == 1 and i < 3 * s_h:
            axes.append(1)
        elif i % 3 == 2 and i < 3 * s_w:
            axes.append(2)
        else:
            axes.append(0)
    return axes


SOLUTIONS: dict = {  # exercise name -> a reference solution (kept out of the notebooks' visible cells)
    "patch_positions": _solution_patch_positions,
    "axial_rope": _solution_axial_rope,
    "text_image_positions": _solution_text_image_positions,
    "mrope_axes": _solution_mrope_axes,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}  # exercise name -> its checker
