"""What every exercise checker shares: the error it raises, the success line it prints, `attempt` for
notebook cells; `call`, through which every checker runs the learner's function (None, a string or a crash
becomes one message, with the learner's line); the coercions of a learner's answer (tensor, as_tensor,
number: a NaN is called NaN); the table of known mistakes (`name_the_mistake`, `ignored` for an
argument the answer did not use); and the dtype rules: `keep_dtype` (a result in another dtype than its input is a
mistake), `refuse_low_precision` (bf16/fp16 values named) and `float32_note` (float32 angles where a task asks for
float64 pass, with what float32 costs at long positions)."""
from __future__ import annotations

import math

import torch

from ..i18n import tr, wrap, your_line


class ExerciseError(AssertionError):
    """An answer that is not right yet; the message says what to fix."""


def attempt(check, answer) -> bool:
    """Run check(answer) and print the outcome instead of raising: for exercise cells that must run
    clean before they are solved. Works for every topic's checker (the hint names the checker's module,
    where SOLUTIONS holds a reference solution). Returns True when the answer passed."""
    name = check.__name__.removeprefix("check_")
    try:
        check(answer)
        return True
    except NotImplementedError:
        print(wrap(tr(f"Not attempted yet: replace `raise NotImplementedError` with your code and run the cell again. "
                 f"(A reference solution: {check.__module__}.SOLUTIONS[{name!r}].)",
                 f"还没有作答：把 `raise NotImplementedError` 换成你的代码，再运行一次这个单元格。"
                 f"（参考解答见 {check.__module__}.SOLUTIONS[{name!r}]。）")))
    except ExerciseError as err:
        print(not_yet_right(err))
    return False


def not_yet_right(err: ExerciseError) -> str:
    """What attempt() prints for a wrong answer: the checker's message, broken between words (`wrap`)."""
    return wrap(tr(f"Not yet right: {err}", f"还不对：{err}"))


def spaced(what: str) -> str:
    """A label followed by Chinese text: a space after Latin letters, digits or code ("rope(x) 应当是"),
    none after Chinese or full-width punctuation ("你的函数应当是"), as Chinese typesetting has it."""
    return f"{what} " if what[-1:].isascii() else what


def ok(message: str) -> None:
    """The one success line of every checker (wrapped between words: see `wrap`)."""
    print(wrap(f"✓ {message}"))


def call(fn, *args, what: str, **kwargs):
    """Run the learner's function; a crash becomes an ExerciseError naming its type, its message and the
    line of the learner's code that raised; something that is not a function (None, a string: an
    unfinished cell) is named too (NotImplementedError and ExerciseError pass through: attempt() prints
    a hint for the first)."""
    if not callable(fn):
        raise ExerciseError(tr(f"pass your function itself (def ...), got {type(fn).__name__} ({fn!r:.40})",
                               f"请把你的函数本身传进来（def ...），实际传入的是 {type(fn).__name__}（{fn!r:.40}）"))
    try:
        return fn(*args, **kwargs)
    except (NotImplementedError, ExerciseError):
        raise
    except Exception as error:  # noqa: BLE001 -- any crash is reported with its type and message
        raise ExerciseError(tr(f"{what} raised {type(error).__name__}: {error}",
                               f"{spaced(what)}抛出了 {type(error).__name__}：{error}") + your_line(error)) from error


def name_the_mistake(got, mistakes, close=None) -> None:
    """The table of known mistakes: raise ExerciseError with the message of the first (what that mistake
    returns, message) in `mistakes` that `got` matches (close(got, wrong); default `same` within 1e-6 for
    tensors, math.isclose for numbers, == otherwise), or return when none does. `mistakes` may be a
    generator, so each mistake is computed only when the ones before it did not match."""
    for wrong, message in mistakes:
        if (close or _close)(got, wrong):
            raise ExerciseError(str(message))


def _close(got, wrong) -> bool:
    if isinstance(got, torch.Tensor) and isinstance(wrong, torch.Tensor):
        return same(got, wrong)
    if isinstance(got, float) and isinstance(wrong, float):
        return math.isclose(got, wrong, rel_tol=1e-6, abs_tol=1e-9)
    return got == wrong


def ignored(parameter: str, passed, used) -> str:
    """The message for an answer that ignored one of its arguments and used another value (a default, a
    hard-coded size): "you ignored the `base` argument: ..."."""
    return tr(f"you ignored the argument `{parameter}`: your result is the one for `{parameter}` = {used}, and the "
              f"check passed {passed}. Use the argument (a value fixed in the code is right for one input only)",
              f"你没有用参数 `{parameter}`：你的结果对应的是 `{parameter}` = {used}，而检查器传入的是 "
              f"{passed}。要用传进来的参数（写死在代码里的值只对一个输入成立）")


def tensor(value, what: str) -> torch.Tensor:
    """The answer itself, which must be a torch.Tensor."""
    if not isinstance(value, torch.Tensor):
        raise ExerciseError(tr(f"{what} should be a torch.Tensor, got {type(value).__name__}",
                                f"{spaced(what)}应当是 torch.Tensor，实际是 {type(value).__name__}"))
    return _no_nan(value, what)


def _no_nan(value: torch.Tensor, what: str) -> torch.Tensor:
    """A floating answer with a NaN in it is called NaN, not measured against some other rule."""
    if value.is_floating_point() and value.device.type != "meta" and bool(torch.isnan(value).any()):
        raise ExerciseError(tr(f"{what} contains NaN ({int(torch.isnan(value).sum())} of {value.numel()} values): "
                               "look for 0/0, inf - inf or a log/sqrt of a negative number",
                               f"{spaced(what)}含有 NaN（{value.numel()} 个值中有 "
                               f"{int(torch.isnan(value).sum())} 个）：检查一下有没有 0/0、inf - inf，"
                               "或对负数取 log/sqrt"))
    return value


def as_tensor(value, what: str) -> torch.Tensor:
    """A tensor, or a list of numbers made into one (an exercise that does not ask for a tensor accepts both)."""
    if isinstance(value, torch.Tensor):
        return _no_nan(value, what)
    try:
        return _no_nan(torch.as_tensor(value), what)
    except ExerciseError:
        raise
    except Exception as error:  # noqa: BLE001
        raise ExerciseError(tr(f"{what} must return a tensor (or a list of numbers), got {type(value).__name__}",
                                f"{spaced(what)}必须返回张量（或数字列表），"
                                f"实际返回的是 {type(value).__name__}")) from error


def integers(value, what: str, *, flat: bool = False) -> torch.Tensor:
    """An answer made of positions or counts: a tensor (or list) of integers, as int64, to be compared exactly.
    Floats, bools and complex numbers are named, never rounded (int(0.5) is 0: a wrong answer would pass);
    flat=True: one flat list, anything else named by its shape."""
    got = as_tensor(value, what)
    if got.is_floating_point() or got.is_complex() or got.dtype == torch.bool:
        shown = got.flatten()[:8].tolist()
        raise ExerciseError(tr(f"{what} should hold integers (positions count tokens), got {got.dtype} {shown}",
                               f"{spaced(what)}应当是整数（位置是在数 token），实际是 {got.dtype} {shown}"))
    if flat and got.dim() != 1:
        raise ExerciseError(tr(f"{what} should be one flat list, got shape {tuple(got.shape)}",
                               f"{spaced(what)}应当是一个一维列表，实际的形状是 {tuple(got.shape)}"))
    return got.long()


def number(value, what: str) -> float:
    """A Python number or a one-element tensor, as a float (a bool is not a number here)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = float(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if math.isnan(value):
            raise ExerciseError(tr(f"{what} is NaN: look for 0/0, inf - inf or a log/sqrt of a negative number",
                                   f"{spaced(what)}是 NaN：检查一下有没有 0/0、inf - inf，或对负数取 log/sqrt"))
        return float(value)
    raise ExerciseError(tr(f"{what} should be a number (or a one-element tensor), got {type(value).__name__}",
                            f"{spaced(what)}应当是一个数（或只含一个元素的张量），实际是 {type(value).__name__}"))


SIGNIFICANT_BITS = {torch.bfloat16: 8, torch.float16: 11}  # the low-precision float dtypes -> their significant bits


def refuse_low_precision(got: torch.Tensor, right: torch.Tensor, what: str, cost) -> None:
    """An answer of the right shape in bf16 or fp16 is named, with its largest error relative to the right
    value and cost(gap) (a sentence: what that error does, what to compute in instead); any other returns, as
    does one whose values happen to be exact in that dtype (powers of two: a later input shows the error)."""
    if got.dtype not in SIGNIFICANT_BITS or tuple(got.shape) != tuple(right.shape):
        return
    gap = float(((got.double() - right) / right).abs().max())
    if gap == 0:
        return
    bits = SIGNIFICANT_BITS[got.dtype]
    raise ExerciseError(tr(f"{what} is {got.dtype}, which keeps {bits} significant bits: off by up to {gap:.2%} of "
                           f"the right values. {cost(gap)}",
                           f"{what} 是 {got.dtype}，只有 {bits} 位有效二进制位：与正确值最多相差 {gap:.2%}。"
                           f"{cost(gap)}"))


def same(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-6, rtol: float = 0.0) -> bool:
    """Same shape and equal within atol + rtol * |b|, compared in float64 (float32 answers pass too)."""
    return tuple(a.shape) == tuple(b.shape) and torch.allclose(a.double(), b.double(), atol=atol, rtol=rtol)


def keep_dtype(got: torch.Tensor, x: torch.Tensor, what: str, name: str = "x") -> None:
    """A result whose dtype is not that of the input `name` (x) is named: a float32 result for a float64 x, a
    float32 buffer filled for a bf16 one. A function on activations or weights returns their own dtype."""
    if got.dtype != x.dtype:
        raise ExerciseError(tr(f"{what} returned {got.dtype} for {name} in {x.dtype}: return {name}'s dtype "
                               f"(compute in float64 if you like, then .to({name}.dtype); a buffer from "
                               f"torch.zeros(shape) is float32 whatever {name} is, torch.zeros_like({name}) is not)",
                               f"{name} 是 {x.dtype}，{spaced(what)}返回的却是 {got.dtype}：结果要用 {name} 的 dtype"
                               f"（中间可以用 float64 算，最后 .to({name}.dtype)；torch.zeros(shape) 建的缓冲区不管 "
                               f"{name} 是什么都是 float32，torch.zeros_like({name}) 则不是）"))


FAR_POSITION = 100_000  # where float32_note says what a float32 angle costs


def float32_note(gap: float, reached: int) -> str:
    """The note of a right answer whose angles were float32 where the task asks float64 (`gap`: its largest
    difference from the float64 reference at the checked positions, up to `reached`): what float32 costs at
    position FAR_POSITION. Empty for float64 angles (equal to the reference to about 1e-13)."""
    if gap <= 1e-9:
        return ""
    half_ulp = torch.finfo(torch.float32).eps * 2.0 ** math.floor(math.log2(FAR_POSITION)) / 2
    return tr(f" Note: your angles look float32 (off by up to {gap:.1g} here, at positions up to {reached}). Right "
              f"at these positions; at position {FAR_POSITION:,} a float32 angle is off by up to {half_ulp:.1g} rad, "
              "and the error grows with the position: the task asks for float64 angles.",
              f"注意：你的角度看来是 float32（在这些位置上（最大 {reached}）最多偏 {gap:.1g}）。在这些位置上没问题；"
              f"但在位置 {FAR_POSITION:,} 处，float32 的角度最多偏 {half_ulp:.1g} 弧度，而且误差随位置增大："
              "题目要求角度用 float64。")
