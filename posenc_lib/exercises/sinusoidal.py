"""Exercises on the sinusoidal encoding: positions and wavelengths (notebook 00), the table and its dot
products (02), the offset matrix M_k and the relative part of a score (03).

Each check_<name>(answer) calls the learner's function on a few inputs, prints one line starting
with "✓" when it is right, and otherwise raises ExerciseError saying WHAT is wrong (a float
dtype for positions, the concatenated layout, the exponent i instead of 2i, an odd dimension, the
transpose ...).
`attempt(check, answer)` runs a check from a notebook cell without stopping the notebook.
SOLUTIONS[name] is a reference solution for check_<name>; CHECKS[name] is the checker.

Conventions (as in posenc_lib.absolute): pair index i, omega_i = base ** (-2i/dim); the paper's
"interleaved" layout puts sin(pos*omega_i) in column 2i and cos(pos*omega_i) in column 2i+1.
"""
from __future__ import annotations

import math

import torch

from ..absolute import offset_matrix, sinusoidal_frequencies, sinusoidal_table
from ..i18n import Text, tr
from ..relative import diagonal_spread
from ._common import (
    SIGNIFICANT_BITS,
    ExerciseError,
    as_tensor,
    attempt,
    call,
    float32_note,
    ignored,
    keep_dtype,
    name_the_mistake,
    number,
    ok,
    refuse_low_precision,
    same,
    tensor,
    your_line,
)

__all__ = [
    "attempt", "check_make_positions", "check_wavelength", "check_sinusoidal_table", "check_wavelengths",
    "check_pe_dot", "check_offset_matrix", "check_relative_part", "MISTAKES", "mistaken_table",
]


# ------------------------------------------------------------------- 00: positions and wavelengths

def check_make_positions(make_positions) -> None:
    """make_positions(n, device) -> the positions 0 .. n-1 as an integer tensor on `device`."""
    for n in (5, 1, 0, 300):
        what = f"make_positions({n}, 'cpu')"
        out = tensor(call(make_positions, n, "cpu", what=what), what)
        if out.is_floating_point() or out.is_complex() or out.dtype == torch.bool:
            raise ExerciseError(tr(f"got dtype {out.dtype}: positions count tokens, so use an integer dtype "
                                   f"(torch.arange(n) gives int64); bfloat16 cannot even tell 256 from 257",
                                   f"得到的 dtype 是 {out.dtype}：位置是在给 token 计数，应该用整数 dtype"
                                   f"（torch.arange(n) 给出的就是 int64）；bfloat16 连 256 和 257 都分不清"))
        if tuple(out.shape) == (n + 1,):
            raise ExerciseError(tr(f"make_positions({n}) has {n + 1} entries: off by one -- torch.arange(n) stops "
                                   "before n",
                                   f"make_positions({n}) 有 {n + 1} 个元素，多了一个：torch.arange(n) 到 n 之前就停了"))
        if n and tuple(out.shape) == (n - 1,):
            raise ExerciseError(tr(f"make_positions({n}) has {n - 1} entries: off by one -- n tokens have n positions, "
                                   f"0 .. n-1, and torch.arange(n) gives exactly those (torch.arange(n - 1) or "
                                   f"torch.arange(1, n) is one short)",
                                   f"make_positions({n}) 有 {n - 1} 个元素，少了一个：n 个 token 有 n 个位置 0 .. n-1，"
                                   "torch.arange(n) 给出的正是这些（torch.arange(n - 1) 或 torch.arange(1, n) "
                                   "少一个）"))
        if tuple(out.shape) != (n,):
            raise ExerciseError(tr(f"make_positions({n}) should have shape ({n},), got {tuple(out.shape)}",
                                   f"make_positions({n}) 的形状应为 ({n},)，实际是 {tuple(out.shape)}"))
        if n and int(out[0]) == 1:
            raise ExerciseError(tr("the first position is 0, not 1 (row 0 of a position table belongs to the first "
                                   "token)",
                                   "第一个位置是 0，不是 1（位置表的第 0 行属于第一个 token）"))
        if out.dtype in (torch.uint8, torch.int8) and not torch.equal(out.long(), torch.arange(n)):
            top = torch.iinfo(out.dtype).max
            raise ExerciseError(tr(f"got dtype {out.dtype}, which ends at {top}: position {top + 1} wrapped round to "
                                   f"{int(torch.tensor(top + 1).to(out.dtype))}, so two tokens share a position. "
                                   f"Positions need int64 (torch.arange(n)'s dtype): a context is longer than {top}",
                                   f"得到的 dtype 是 {out.dtype}，最大只到 {top}：位置 {top + 1} 绕回成了 "
                                   f"{int(torch.tensor(top + 1).to(out.dtype))}，两个 token 就共用了一个位置。位置要用 "
                                   f"int64（torch.arange(n) 的 dtype）：上下文比 {top} 长"))
        if not torch.equal(out.long(), torch.arange(n)):
            raise ExerciseError(tr(f"make_positions({n}) should be 0, 1, ..., {n - 1}, got {out.tolist()[:8]}...",
                                   f"make_positions({n}) 应为 0, 1, ..., {n - 1}，实际是 {out.tolist()[:8]}..."))
    out = tensor(call(make_positions, 4, "meta", what="make_positions(4, 'meta')"), "make_positions(4, 'meta')")
    if out.device.type != "meta":
        raise ExerciseError(tr(f"make_positions(4, 'meta') returned a tensor on {out.device}: create it with "
                               f"device=device, so it lives where the model runs",
                               f"make_positions(4, 'meta') 返回的张量在 {out.device} 上：创建时要传 device=device，"
                               f"让它和模型待在同一个设备上"))
    ok(tr("integer positions 0 .. n-1, created on the device asked for",
          "整数位置 0 .. n-1，且创建在指定的设备上"))


def check_wavelength(wavelength) -> None:
    """wavelength(omega) -> the number of positions after which sin(omega * pos) repeats: 2*pi / omega."""
    omegas = (0.1, 2.5, 1e-4, 1.0)
    got = [number(call(wavelength, omega, what=f"wavelength({omega})"), f"wavelength({omega})") for omega in omegas]

    def matches(formula):
        return all(math.isclose(g, formula(w), rel_tol=1e-6) for g, w in zip(got, omegas))

    if matches(lambda w: 2 * math.pi / w):
        ok(tr("wavelength = 2*pi / omega: omega = 1 repeats every 6.28 positions, omega = 1e-4 every 62832",
              "波长 = 2*pi / omega：omega = 1 时每 6.28 个位置重复一次，omega = 1e-4 时每 62832 个位置重复一次"))
        return
    hints = [(lambda w: w, tr("that is omega itself (radians per position), not a length",
                              "这是 omega 本身（每个位置转过的弧度），不是长度")),
             (lambda w: 1 / w, tr("missing the factor 2*pi: sin(omega*pos) repeats when omega*pos grows by 2*pi, not "
                                  "by 1",
                                  "少了因子 2*pi：omega*pos 每增加 2*pi（而不是 1），sin(omega*pos) 才重复一次")),
             (lambda w: w / (2 * math.pi), tr("that is the frequency in cycles per position, the inverse of the "
                                              "wavelength",
                                              "这是以“每个位置几周”计的频率，即波长的倒数")),
             (lambda w: 2 * math.pi * w, tr("multiplied by omega where you should divide",
                                            "该除以 omega 的地方，你乘了 omega")),
             (lambda w: 360 / w, tr("that is a full turn in degrees, 360 / omega: omega is in radians per position, "
                                    "and a full turn is 2*pi radians",
                                    "这是按角度制算的一整圈 360 / omega：omega 的单位是“弧度每位置”，"
                                    "一整圈是 2*pi 弧度")),
             (lambda w: math.pi / w, tr("that is half a turn, pi / omega: sin(omega*pos) changes sign there, but it "
                                        "repeats only after a full turn of 2*pi",
                                        "这是半圈 pi / omega：sin(omega*pos) 在那里变号，但要转满一圈 2*pi 才重复"))]
    if all(g == round(2 * math.pi / w) or g == math.floor(2 * math.pi / w) for g, w in zip(got, omegas)):
        raise ExerciseError(tr(f"wavelength({omegas[0]}) = {got[0]:.6g}: rounded to a whole number of positions; "
                               f"2*pi / omega is rarely whole (omega = 1 repeats every 6.28 positions), return it as "
                               f"it is (expected {2 * math.pi / omegas[0]:.6g})",
                               f"wavelength({omegas[0]}) = {got[0]:.6g}：你把它舍入成了整数个位置；2*pi / omega "
                               f"很少是整数（omega = 1 时每 6.28 个位置重复一次），原样返回即可"
                               f"（应为 {2 * math.pi / omegas[0]:.6g}）"))
    for formula, hint in hints:
        if matches(formula):
            raise ExerciseError(tr(f"wavelength({omegas[0]}) = {got[0]:.6g}: {hint} (expected "
                                   f"{2 * math.pi / omegas[0]:.6g})",
                                   f"wavelength({omegas[0]}) = {got[0]:.6g}："
                                   f"{hint}（应为 {2 * math.pi / omegas[0]:.6g}）"))
    raise ExerciseError(tr(f"wavelength({omegas[0]}) = {got[0]:.6g}, expected 2*pi/omega = "
                           f"{2 * math.pi / omegas[0]:.6g}",
                           f"wavelength({omegas[0]}) = {got[0]:.6g}，应为 2*pi/omega = {2 * math.pi / omegas[0]:.6g}"))


# ----------------------------------------------------------------------------------- 02: the table

MISTAKES = ("half", "swapped", "exponent_per_column", "exponent_i", "multiply", "fairseq", "fairseq_half",
            "from_one")


def mistaken_table(kind: str, num_positions: int, dim: int, base: float = 10000.0) -> torch.Tensor:
    """A sinusoidal table (float64) made with one typical mistake, for figures and for diagnosing answers:

    "half"               [sin | cos] columns (Transformer-XL) instead of interleaved
    "swapped"              cos in the even columns, sin in the odd ones
    "exponent_per_column"  column j uses base**(-j/dim): the cos of a pair gets a different frequency than its sin
    "exponent_i"           pair i uses base**(-i/dim) (i where the formula has 2i)
    "multiply"             pos * base**(2i/dim): multiplied where the formula divides
    "fairseq"              base**(-i/(dim/2 - 1)) (tensor2tensor's and fairseq's denominator), interleaved;
                           "fairseq_half": that exponent with the [sin | cos] columns, as those libraries do
    "from_one"             positions 1 .. n instead of 0 .. n-1
    """
    if kind not in MISTAKES:
        raise ValueError(f"kind must be one of {list(MISTAKES)}, got {kind!r}")
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None] + (1 if kind == "from_one" else 0)
    i = torch.arange(dim // 2, dtype=torch.float64)
    omega = base ** (-2 * i / dim)
    if kind == "exponent_i":
        omega = base ** (-i / dim)
    elif kind == "multiply":
        omega = base ** (2 * i / dim)
    elif kind.startswith("fairseq"):
        omega = base ** (-i / max(dim // 2 - 1, 1))
    sin, cos = (pos * omega).sin(), (pos * omega).cos()
    if kind == "exponent_per_column":
        cos = (pos * base ** (-(2 * i + 1) / dim)).cos()
    if kind == "swapped":
        sin, cos = cos, sin
    if kind in ("half", "fairseq_half"):
        return torch.cat((sin, cos), dim=-1)
    return torch.stack((sin, cos), dim=-1).flatten(-2)


_TABLE_HINTS = {
    "half": Text("your table is the concatenated layout [sin | cos] (Transformer-XL, many blog heatmaps); the "
                   "paper interleaves: sin in column 2i, cos in column 2i+1. Same numbers, columns permuted by "
                   "layout_permutation(dim)",
                   "你的表是拼接布局 [sin | cos]（Transformer-XL 和许多博客里的热力图都是这样）；论文用的是交错布局："
                   "sin 在第 2i 列，cos 在第 2i+1 列。数值一样，只是列按 layout_permutation(dim) 重排了"),
    "swapped": Text("sin and cos are swapped: the paper puts sin in the even columns 2i and cos in the odd columns "
                    "2i+1",
                    "sin 和 cos 放反了：论文把 sin 放在偶数列 2i，cos 放在奇数列 2i+1"),
    "exponent_per_column": Text("wrong exponent: you used the column index j in base**(j/dim); the exponent is "
                                "2*floor(j/2)/dim, so the sin and the cos of a pair share one frequency",
                                "指数错了：你在 base**(j/dim) 里用的是列下标 j；指数应为 2*floor(j/2)/dim，"
                                "这样同一对的 sin 和 cos 才共用一个频率"),
    "exponent_i": Text("wrong exponent: you used base**(i/dim) for pair i; the formula has 2i/dim (omega_i = "
                       "base**(-2i/dim))",
                       "指数错了：第 i 对你用的是 base**(i/dim)；公式里是 2i/dim（omega_i = base**(-2i/dim)）"),
    "multiply": Text("you multiplied pos by base**(2i/dim); the formula divides: pos / base**(2i/dim)",
                     "你用 pos 乘了 base**(2i/dim)；公式里是除：pos / base**(2i/dim)"),
    "fairseq": Text("that is tensor2tensor's and fairseq's exponent: it divides by dim/2 - 1 instead of using 2i/dim",
                    "这是 tensor2tensor 和 fairseq 的指数：除以 dim/2 - 1，而不是用 2i/dim"),
    "fairseq_half": Text("that is tensor2tensor's and fairseq's table: [sin | cos] layout and the exponent divided "
                           "by dim/2 - 1; the paper interleaves and uses 2i/dim",
                           "这是 tensor2tensor 和 fairseq 的表：[sin | cos] 布局，指数除以 dim/2 - 1；"
                           "论文用的是交错布局和 2i/dim"),
    "from_one": Text("positions start at 0, not 1: row 0 must be [0, 1, 0, 1, ...]",
                     "位置从 0 开始，而不是 1：第 0 行必须是 [0, 1, 0, 1, ...]"),
}


def _unwritten_columns(got: torch.Tensor, right: torch.Tensor) -> None:
    """Name a table whose filled columns are right and whose other columns were never written (all zero):
    the seed note's labels read literally ("i even: column 2i = sin, i odd: column 2i+1 = cos", notebook 02)."""
    empty = [j for j in range(got.shape[1]) if bool((got[:, j] == 0).all()) and bool((right[:, j] != 0).any())]
    filled = [j for j in range(got.shape[1]) if j not in empty]
    if empty and same(got[:, filled], right[:, filled], 1e-4):
        raise ExerciseError(tr(f"columns {empty} were never written (all zero); the others are right. Both lines of "
                               "the formula hold for EVERY pair i, 0 <= i < dim/2: PE(pos, 2i) = sin and "
                               "PE(pos, 2i+1) = cos. Reading i as a dimension index and choosing sin or cos by the "
                               "parity of i (as a seed note's labels say) leaves these columns empty",
                               f"列 {empty} 从没被写入（全为 0）；其余列是对的。公式的两行对每一对 i（0 <= i < dim/2）"
                               "都成立：PE(pos, 2i) = sin，PE(pos, 2i+1) = cos。把 i 当成维度下标、按 i 的奇偶来选 "
                               "sin 或 cos（种子笔记的标注就是这么写的），这些列就会空着"))


def check_sinusoidal_table(make_table) -> None:
    """make_table(num_positions, dim, base) -> the (num_positions, dim) interleaved table in float64; odd dim ->
    ValueError. A float32 table (or float32 angles) passes with a note on what float32 costs at long positions."""
    gap = 0.0  # the largest difference of a right table from the float64 one: float32 angles get a note
    for n, d, base in ((40, 16, 10000.0), (12, 6, 100.0)):
        what = f"make_table({n}, {d}, {base})"
        got = tensor(call(make_table, n, d, base, what=what), what)
        if tuple(got.shape) == (d, n) and n != d:
            raise ExerciseError(tr(f"shape {tuple(got.shape)} is transposed: rows are positions, columns are "
                                   "dimensions",
                                   f"形状 {tuple(got.shape)} 转置了：行是位置，列是维度"))
        if tuple(got.shape) in ((n - 1, d), (n + 1, d)):
            raise ExerciseError(tr(f"make_table({n}, {d}, {base}) has {got.shape[0]} rows: off by one -- one row per "
                                   f"position 0 .. {n - 1}, so {n} rows (torch.arange({n}))",
                                   f"make_table({n}, {d}, {base}) 有 {got.shape[0]} 行，差了一个："
                                   f"每个位置 0 .. {n - 1} 一行，所以是 {n} 行（torch.arange({n})）"))
        if tuple(got.shape) != (n, d):
            raise ExerciseError(tr(f"make_table({n}, {d}, {base}) should have shape ({n}, {d}), got {tuple(got.shape)}",
                                   f"make_table({n}, {d}, {base}) 的形状应为 ({n}, {d})，实际是 {tuple(got.shape)}"))
        right = sinusoidal_table(n, d, base=base, dtype=torch.float64)
        if same(got, right, 1e-4):
            gap = max(gap, float((got.double() - right).abs().max()))
            continue
        if got.dtype in SIGNIFICANT_BITS:
            raise ExerciseError(tr(f"make_table({n}, {d}, {base}) is {got.dtype}, which keeps "
                                   f"{SIGNIFICANT_BITS[got.dtype]} significant bits: the angles pos / base**(2i/dim) "
                                   "and their sin and cos are off by up to "
                                   f"{float((got.double() - right).abs().max()):.2g} here, more at later positions. "
                                   "Build the table in float32 or float64",
                                   f"make_table({n}, {d}, {base}) 是 {got.dtype}，只有 {SIGNIFICANT_BITS[got.dtype]} "
                                   f"位有效二进制位：角度 pos / base**(2i/dim) 及其 sin、cos 在这里最多偏了 "
                                   f"{float((got.double() - right).abs().max()):.2g}，位置越靠后偏得越多。"
                                   f"表要用 float32 或 float64 来算"))
        close = lambda a, b: same(a, b, 1e-4)  # noqa: E731
        name_the_mistake(got, ((mistaken_table(kind, n, d, base), hint) for kind, hint in _TABLE_HINTS.items()), close)
        if base != 10000.0:
            default = sinusoidal_table(n, d, dtype=torch.float64)
            name_the_mistake(got, [(default, ignored("base", base, 10000.0))], close)
        _unwritten_columns(got, right)
        row, col = divmod(int((got.double() - right).abs().argmax()), d)
        raise ExerciseError(tr(f"make_table({n}, {d}, {base}) differs most at position {row}, column {col} "
                               f"({'sin' if col % 2 == 0 else 'cos'} of pair {col // 2}): got "
                               f"{float(got[row, col]):.6f}, expected {float(right[row, col]):.6f}",
                               f"make_table({n}, {d}, {base}) 在位置 {row}、第 {col} 列偏差最大"
                               f"（第 {col // 2} 对的 {'sin' if col % 2 == 0 else 'cos'}）："
                               f"得到 {float(got[row, col]):.6f}，应为 {float(right[row, col]):.6f}"))
    try:
        make_table(8, 5, 10000.0)
    except (NotImplementedError, ExerciseError):
        raise
    except ValueError as err:
        if "dim" not in str(err):
            raise ExerciseError(tr(f"for an odd dim=5 you raised a ValueError, good, but its message ({err!r}) does "
                                   "not name the parameter: say which one is wrong, e.g. 'dim must be even, got 5'",
                                   f"奇数 dim=5 时你抛出了 ValueError，这很好，但它的消息（{err!r}）没有点出参数名："
                                   f"要说明是哪个参数不对，例如 'dim must be even, got 5'")) from None
    except Exception as err:  # noqa: BLE001 -- the point is to name what went wrong
        raise ExerciseError(tr(f"for an odd dim=5 your function raised {type(err).__name__} ({err}){your_line(err)}: "
                               f"the naive `pe[:, 1::2] = cos(...)` crash. Check dim first and raise a ValueError "
                               f"saying dim must be even",
                               f"奇数 dim=5 时你的函数抛出了 {type(err).__name__}（{err}）{your_line(err)}：朴素写法 "
                               "`pe[:, 1::2] = cos(...)` 正是在这里崩溃的。先检查 dim，再抛出 ValueError，"
                               "说明 dim 必须是偶数"
                               )) from None
    else:
        raise ExerciseError(tr("for an odd dim=5 your function returned a table: the encoding needs (sin, cos) pairs, "
                               "so raise a ValueError naming dim",
                               "奇数 dim=5 时你的函数照样返回了一张表：这种编码需要成对的 (sin, cos)，"
                               "所以应抛出 ValueError 并点明 dim"))
    ok(tr("the interleaved sinusoidal table, and a clear ValueError for an odd dim.",
          "交错布局的正弦位置编码表；dim 为奇数时给出清楚的 ValueError。") + float32_note(gap, 39))


def check_wavelengths(wavelengths) -> None:
    """wavelengths(dim, base) -> (dim/2,) tensor, lambda_i = 2*pi * base**(2i/dim) for pair i."""
    for d, base in ((16, 10000.0), (8, 100.0)):
        what = f"wavelengths({d}, {base})"
        got = as_tensor(call(wavelengths, d, base, what=what), what)
        omega = sinusoidal_frequencies(d, base=base, dtype=torch.float64)
        right = 2 * math.pi / omega
        refuse_low_precision(got, right, what, lambda gap, got=got, right=right: tr(
            f"The longest wavelength is off by {float((got.double() - right).abs().max()):.3g} positions. Compute "
            f"them in float32 or float64",
            f"最长的波长偏了 {float((got.double() - right).abs().max()):.3g} 个位置。要用 float32 或 float64 来算"))
        got = got.double()
        if got.shape == right.shape and torch.allclose(got, right, rtol=1e-6):
            continue
        if got.numel() == d:
            raise ExerciseError(tr(f"wavelengths({d}) has {d} entries: there is one wavelength per (sin, cos) pair, "
                                   f"so dim/2 = {d // 2}",
                                   f"wavelengths({d}) 有 {d} 个元素：每对 (sin, cos) 只有一个波长，"
                                   f"所以应有 dim/2 = {d // 2} 个"))
        hints = [(omega, tr("those are the angular frequencies omega_i; the wavelength is 2*pi/omega_i",
                            "这些是角频率 omega_i；波长是 2*pi/omega_i")),
                 (1 / omega, tr("missing the factor 2*pi", "少了因子 2*pi")),
                 (2 * math.pi * base ** (torch.arange(d // 2, dtype=torch.float64) / d),
                  tr("wrong exponent: i/dim where the formula has 2i/dim",
                     "指数错了：公式里是 2i/dim，你用的是 i/dim")),
                 (right.flip(0), tr("reversed: pair 0 has the shortest wavelength, 2*pi",
                                    "顺序反了：第 0 对的波长最短，为 2*pi")),
                 (2 * math.pi * omega, tr("you multiplied by omega_i where the wavelength divides: 2*pi / omega_i",
                                          "波长是除以 omega_i（2*pi / omega_i），你却乘了 omega_i")),
                 (2 * math.pi * base ** (torch.arange(d // 2, dtype=torch.float64) / max(d // 2 - 1, 1)),
                  tr("that is tensor2tensor's and fairseq's exponent, i/(dim/2 - 1); the paper's is 2i/dim",
                     "这是 tensor2tensor 和 fairseq 的指数 i/(dim/2 - 1)；论文用的是 2i/dim")),
                 (2 * math.pi / sinusoidal_frequencies(d, dtype=torch.float64), ignored("base", base, 10000.0))]
        for wrong, hint in hints:
            if got.shape == wrong.shape and torch.allclose(got, wrong, rtol=1e-6):
                raise ExerciseError(tr(f"wavelengths({d}, {base}): {hint}", f"wavelengths({d}, {base}) 的结果：{hint}"))
        raise ExerciseError(tr(f"wavelengths({d}, {base}) = {got.tolist()}, expected {right.tolist()}",
                               f"wavelengths({d}, {base}) = {got.tolist()}，应为 {right.tolist()}"))
    ok(tr("wavelengths 2*pi ... 2*pi*base**(1 - 2/dim), a geometric sequence",
          "波长从 2*pi 到 2*pi*base**(1 - 2/dim)，构成等比数列"))


def check_pe_dot(pe_dot) -> None:
    """pe_dot(k, dim, base) -> PE(p) . PE(p + k) for any p (a closed form in k)."""
    for d, base in ((16, 10000.0), (8, 100.0)):
        table = sinusoidal_table(60, d, base=base, dtype=torch.float64)
        for k in range(-12, 13):
            p = 30
            right = float(table[p] @ table[p + k])
            what = f"pe_dot({k}, {d}, {base})"
            got = number(call(pe_dot, k, d, base, what=what), what)
            if math.isclose(got, right, abs_tol=1e-6):
                continue
            what = f"pe_dot({-k}, {d}, {base})"
            mirrored = number(call(pe_dot, -k, d, base, what=what), what)
            if not math.isclose(got, mirrored, abs_tol=1e-6):
                raise ExerciseError(tr(f"pe_dot({k}) = {got:.4f} but pe_dot({-k}) = {mirrored:.4f}: the dot product "
                                       "cannot depend on the direction -- sin a sin b + cos a cos b = cos(a - b), so "
                                       "it is sum_i cos(k*omega_i), even in k (did you use sin?)",
                                       f"pe_dot({k}) = {got:.4f}，pe_dot({-k}) 却是 {mirrored:.4f}："
                                       "点积不可能与方向有关。sin a sin b + cos a cos b = cos(a - b)，"
                                       "所以它等于 sum_i cos(k*omega_i)，是 k 的偶函数（你是不是用了 sin？）"))
            if math.isclose(got * (d // 2), right, abs_tol=1e-6):
                raise ExerciseError(tr(f"pe_dot({k}, {d}) is the mean over the pairs; the dot product is the sum "
                                       f"(pe_dot(0) = dim/2 = {d // 2})",
                                       f"pe_dot({k}, {d}) 算成了各对的平均；"
                                       f"点积是求和（pe_dot(0) = dim/2 = {d // 2}）"))
            pairs = torch.arange(d // 2, dtype=torch.float64)
            close = lambda a, b: math.isclose(a, b, abs_tol=1e-6)  # noqa: E731
            name_the_mistake(got, [
                (float(torch.cos(k * base ** (-pairs / d)).sum()),
                 tr(f"pe_dot({k}, {d}, {base}): wrong exponent, omega_i = base**(-2i/dim), you used base**(-i/dim)",
                    f"pe_dot({k}, {d}, {base})：指数错了，omega_i = base**(-2i/dim)，你用的是 base**(-i/dim)")),
                (float(torch.cos(k * base ** (2 * pairs / d)).sum()),
                 tr(f"pe_dot({k}, {d}, {base}): you multiplied k by base**(2i/dim); the formula divides, "
                    "k / base**(2i/dim)",
                    f"pe_dot({k}, {d}, {base})：你用 k 乘了 base**(2i/dim)；公式里是除，k / base**(2i/dim)")),
                (float(torch.cos(k * 10000.0 ** (-2 * pairs / d)).sum()), ignored("base", base, 10000.0)),
                (2 * right, tr(f"pe_dot({k}, {d}, {base}) is twice the dot product: each pair i contributes "
                               f"sin a sin b + cos a cos b = cos(k*omega_i) once, so pe_dot(0) = dim/2 = {d // 2}",
                               f"pe_dot({k}, {d}, {base}) 是点积的两倍：每对 i 只贡献一次 "
                               f"sin a sin b + cos a cos b = cos(k*omega_i)，所以 pe_dot(0) = dim/2 = {d // 2}")),
                (float(torch.cos(k * base ** (-2 * torch.arange(d, dtype=torch.float64) / d)).sum()),
                 tr(f"pe_dot({k}, {d}, {base}) sums {d} frequencies, one per column: there are dim/2 = {d // 2} "
                    f"pairs, i = 0 .. dim/2 - 1 (torch.arange(0, dim, 2) is 2i)",
                    f"pe_dot({k}, {d}, {base}) 对 {d} 个频率求和，每列一个：实际只有 dim/2 = {d // 2} 对，"
                    f"i = 0 .. dim/2 - 1（torch.arange(0, dim, 2) 就是 2i）"))], close)
            raise ExerciseError(tr(f"pe_dot({k}, {d}, {base}) = {got:.6f}, expected PE(p).PE(p+k) = {right:.6f}",
                                   f"pe_dot({k}, {d}, {base}) = {got:.6f}，应为 PE(p).PE(p+k) = {right:.6f}"))
    ok(tr("PE(p).PE(p+k) = sum_i cos(k*omega_i): a function of |k| only",
          "PE(p).PE(p+k) = sum_i cos(k*omega_i)：只取决于 |k|"))


# ------------------------------------------------------------------------- 03: the linearity proof

def _rotation_blocks(beta: torch.Tensor) -> torch.Tensor:
    """Block-diagonal [[cos b, sin b], [-sin b, cos b]] on columns (2i, 2i+1), one block per angle b."""
    return torch.block_diag(*[torch.stack((torch.stack((b.cos(), b.sin())), torch.stack((-b.sin(), b.cos()))))
                              for b in beta])


def check_offset_matrix(make_offset_matrix) -> None:
    """make_offset_matrix(k, dim, base) -> M_k (dim, dim) with PE(pos + k) = M_k @ PE(pos), interleaved layout."""
    for k, d, base in ((1, 8, 10000.0), (3, 8, 10000.0), (-2, 8, 10000.0), (5, 6, 100.0)):
        what = f"make_offset_matrix({k}, {d}, {base})"
        got = tensor(call(make_offset_matrix, k, d, base, what=what), what).double()
        if tuple(got.shape) != (d, d):
            raise ExerciseError(tr(f"M_k should be ({d}, {d}), got {tuple(got.shape)}",
                                   f"M_k 的形状应为 ({d}, {d})，实际是 {tuple(got.shape)}"))
        right = offset_matrix(k, d, base=base)
        table = sinusoidal_table(30, d, base=base, dtype=torch.float64)
        if same(got, right, 1e-6):
            continue
        if same(got, right.T, 1e-6):
            raise ExerciseError(tr(f"k={k}: your M_k is the transpose, RoPE's counter-clockwise "
                                   "[[cos, -sin], [sin, cos]]: it moves PE(pos) to PE(pos - k). On a (sin, cos) pair "
                                   "the angle-sum identities give sin(a+b) = sin a cos b + cos a sin b, i.e. the block "
                                   "[[cos b, sin b], [-sin b, cos b]]",
                                   f"k={k}：你的 M_k 转置了，成了 RoPE 的逆时针旋转 [[cos, -sin], [sin, cos]]，"
                                   f"它把 PE(pos) 变成 PE(pos - k)。对一对 (sin, cos)，和角公式给出 "
                                   "sin(a+b) = sin a cos b + cos a sin b，"
                                   "对应的块是 [[cos b, sin b], [-sin b, cos b]]"))
        if same(got, offset_matrix(k, d, base=base, layout="half"), 1e-6):
            raise ExerciseError(tr(f"k={k}: you built the blocks on columns (i, i + dim/2): that is M_k for the "
                                   f"concatenated layout [sin | cos]; the interleaved pairs are columns (2i, 2i+1)",
                                   f"k={k}：你把块放在了列 (i, i + dim/2) 上，那是拼接布局 [sin | cos] 的 M_k；"
                                   f"交错布局的一对是列 (2i, 2i+1)"))
        if same(got, _rotation_blocks(torch.full((d // 2,), float(k), dtype=torch.float64)), 1e-6):
            raise ExerciseError(tr(f"k={k}: every block turns by the angle k; pair i must turn by k*omega_i",
                                   f"k={k}：每个块都转了角度 k；第 i 对要转 k*omega_i"))
        if same(got, offset_matrix(k, d, base=math.sqrt(base)), 1e-6):
            raise ExerciseError(tr(f"k={k}: wrong exponent: you used omega_i = base**(-i/dim); it is base**(-2i/dim)",
                                   f"k={k}：指数错了，你用的是 omega_i = base**(-i/dim)，应为 base**(-2i/dim)"))
        if base != 10000.0:
            name_the_mistake(got, [(offset_matrix(k, d), ignored("base", base, 10000.0))])
        name_the_mistake(got, [(offset_matrix(k + 1, d, base=base),
                                tr(f"k={k}: off by one, your matrix shifts by {k + 1} positions: the block of pair i "
                                   f"turns by k*omega_i, with k = {k}",
                                   f"k={k}：差了一，你的矩阵平移了 {k + 1} 个位置：第 i 对的块要转 k*omega_i，"
                                   f"其中 k = {k}"))])
        shifted = table[: len(table) - max(k, 0)][max(-k, 0):] @ got.T
        target = table[max(k, 0):][: len(shifted)]
        error = float((shifted - target).abs().max())
        raise ExerciseError(tr(f"k={k}: M_k @ PE(pos) misses PE(pos + k) by up to {error:.3g}; each pair i needs the "
                               "block [[cos(k w_i), sin(k w_i)], [-sin(k w_i), cos(k w_i)]] on columns (2i, 2i+1), "
                               "zeros elsewhere",
                               f"k={k}：M_k @ PE(pos) 与 PE(pos + k) 最多相差 {error:.3g}；"
                               "每对 i 都要在列 (2i, 2i+1) 上放块 "
                               "[[cos(k w_i), sin(k w_i)], [-sin(k w_i), cos(k w_i)]]，其余位置为 0"))
    ok(tr("M_k @ PE(pos) = PE(pos + k): one 2x2 block per pair, depending on k and omega_i only",
          "M_k @ PE(pos) = PE(pos + k)：每对一个 2x2 块，只取决于 k 和 omega_i"))


def _relative_projection(w: torch.Tensor) -> torch.Tensor:
    """The reference answer, spelled out one 2x2 block at a time (`posenc_lib.absolute.relative_part` is the
    library's vectorised form; a test checks that the two agree)."""
    out = torch.zeros_like(w)
    for i in range(0, w.shape[0], 2):
        a, b, c, d = w[i, i], w[i, i + 1], w[i + 1, i], w[i + 1, i + 1]
        alpha, beta = (a + d) / 2, (b - c) / 2
        out[i, i] = out[i + 1, i + 1] = alpha
        out[i, i + 1], out[i + 1, i] = beta, -beta
    return out


def check_relative_part(relative_part) -> None:
    """relative_part(W) -> the matrix closest to W (dim, dim) for which PE(m) W PE(n)^T depends on n - m only
    (interleaved table): per 2x2 diagonal block keep alpha*I + beta*J (alpha = (a+d)/2, beta = (b-c)/2,
    J = [[0, 1], [-1, 0]]), zero outside the diagonal blocks."""
    gen = torch.Generator().manual_seed(7)
    for d in (8, 6):
        w = torch.randn(d, d, generator=gen, dtype=torch.float64)
        got = tensor(call(relative_part, w.clone(), what="relative_part(W)"), "relative_part(W)")
        result_dtype, got = got.dtype, got.double()
        if tuple(got.shape) != (d, d):
            raise ExerciseError(tr(f"relative_part(W) should be ({d}, {d}), got {tuple(got.shape)}",
                                   f"relative_part(W) 的形状应为 ({d}, {d})，实际是 {tuple(got.shape)}"))
        right = _relative_projection(w)
        if same(got, right, 1e-6):
            keep_dtype(got.to(result_dtype), w, "relative_part(W)", name="W")  # a float32 buffer filled
            continue
        table = sinusoidal_table(40, d, dtype=torch.float64)
        spread = diagonal_spread(table @ got @ table.T)
        block = torch.block_diag(*[torch.ones(2, 2, dtype=torch.float64)] * (d // 2)).bool()
        if spread > 1e-5:
            if got[~block].abs().max() > 1e-6:
                raise ExerciseError(tr(f"PE(m) W' PE(n) still depends on more than n - m (spread {spread:.3g}): you "
                                       "kept entries outside the 2x2 diagonal blocks; they couple pairs of different "
                                       f"frequencies (terms in m*w_i - n*w_j), set them to zero",
                                       f"PE(m) W' PE(n) 依赖的仍不只是 n - m（对角线极差 {spread:.3g}）："
                                       f"你保留了 2x2 对角块以外的元素，它们把频率不同的对耦合在一起"
                                       f"（产生 m*w_i - n*w_j 这样的项），应置为 0"))
            raise ExerciseError(tr(f"PE(m) W' PE(n) still depends on more than n - m (spread {spread:.3g}): inside "
                                   "each block [[a, b], [c, d]] keep only alpha*I + beta*J with alpha = (a+d)/2 and "
                                   f"beta = (b-c)/2; the rest gives terms in m + n",
                                   f"PE(m) W' PE(n) 依赖的仍不只是 n - m（对角线极差 {spread:.3g}）："
                                   f"每个块 [[a, b], [c, d]] 里只保留 alpha*I + beta*J，其中 alpha = (a+d)/2，"
                                   f"beta = (b-c)/2；其余部分会产生含 m + n 的项"))
        if same(got, 2 * right, 1e-6):
            raise ExerciseError(tr("relative, but twice the closest matrix: alpha = (a+d)/2 and beta = (b-c)/2 are "
                                   "averages; without the /2 every entry is doubled",
                                   "已经只依赖相对位置了，但是最近那个矩阵的两倍：alpha = (a+d)/2 和 beta = (b-c)/2 "
                                   "是平均值；少了 /2，每个元素都翻了一倍"))
        symmetric = right.clone()
        symmetric[~torch.eye(d, dtype=torch.bool)] = 0
        if same(got, symmetric, 1e-6):
            raise ExerciseError(tr("relative, but you dropped beta: the antisymmetric part beta*[[0, 1], [-1, 0]] "
                                   "gives beta*sin((m-n)w) terms, the only ones that tell +k from -k; keep it",
                                   "已经只依赖相对位置了，但你丢掉了 beta：反对称部分 beta*[[0, 1], [-1, 0]] 产生 "
                                   "beta*sin((m-n)w) 项，只有这些项能区分 +k 和 -k，要保留"))
        if same(got, right.T, 1e-6):
            raise ExerciseError(tr("relative, but beta has the wrong sign: the J = [[0, 1], [-1, 0]] component of "
                                   "[[a, b], [c, d]] is (b - c)/2",
                                   "已经只依赖相对位置了，但 beta 的符号反了：[[a, b], [c, d]] 在 "
                                   "J = [[0, 1], [-1, 0]] 上的分量是 (b - c)/2"))
        raise ExerciseError(tr("relative, but not the closest such matrix to W: per block keep alpha = (a+d)/2 on the "
                               "diagonal and beta = (b-c)/2, -beta off it",
                               "已经只依赖相对位置了，但不是这类矩阵里离 W 最近的那个：每个块的对角线上放 "
                               "alpha = (a+d)/2，对角线外放 beta = (b-c)/2 和 -beta"))
    ok(tr("W' = the part of W whose position-position score is a function of n - m alone",
          "W' = W 中“位置–位置”分数只取决于 n - m 的那一部分"))


# ------------------------------------------------------------------------------------ reference solutions

def _solution_make_positions(n, device):
    return torch.arange(n, device=device)


def _solution_wavelength(omega):
    return 2 * math.pi / omega


def _solution_sinusoidal_table(num_positions, dim, base=10000.0):
    if dim % 2:
        raise ValueError(f"dim must be even, got {dim}")
    pos = torch.arange(num_positions, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, dim, 2, dtype=torch.float64)
    angles = pos / base ** (two_i / dim)
    table = torch.empty(num_positions, dim, dtype=torch.float64)
    table[:, 0::2], table[:, 1::2] = angles.sin(), angles.cos()
    return table


def _solution_wavelengths(dim, base=10000.0):
    two_i = torch.arange(0, dim, 2, dtype=torch.float64)
    return 2 * math.pi * base ** (two_i / dim)


def _solution_pe_dot(k, dim, base=10000.0):
    two_i = torch.arange(0, dim, 2, dtype=torch.float64)
    return float(torch.cos(k / base ** (two_i / dim)).sum())


def _solution_offset_matrix(k, dim, base=10000.0):
    m = torch.zeros(dim, dim, dtype=torch.float64)
    for i in range(dim // 2):
        b = k / base ** (2 * i / dim)
        m[2 * i:2 * i + 2, 2 * i:2 * i + 2] = torch.tensor([[math.cos(b), math.sin(b)], [-math.sin(b), math.cos(b)]],
                                                            dtype=torch.float64)
    return m


SOLUTIONS: dict = {  # exercise name -> a reference solution (kept out of the notebooks' visible cells)
    "make_positions": _solution_make_positions,
    "wavelength": _solution_wavelength,
    "sinusoidal_table": _solution_sinusoidal_table,
    "wavelengths": _solution_wavelengths,
    "pe_dot": _solution_pe_dot,
    "offset_matrix": _solution_offset_matrix,
    "relative_part": _relative_projection,
}

CHECKS: dict = {name: globals()[f"check_{name}"] for name in SOLUTIONS}  # exercise name -> its checker
