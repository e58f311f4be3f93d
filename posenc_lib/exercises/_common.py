"""What every exercise checker shares: the error it raises, the success line it prints, `attempt` for
notebook cells, and the coercions of a learner's answer (tensor, number, closeness)."""
from __future__ import annotations

import torch

from ..i18n import tr


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
        print(tr(f"Not attempted yet: replace `raise NotImplementedError` with your code and run the cell again. "
                 f"(A reference solution: {check.__module__}.SOLUTIONS[{name!r}].)",
                 f"还没有作答：把 `raise NotImplementedError` 换成你的代码，再运行一次这个单元格。"
                 f"（参考解答见 {check.__module__}.SOLUTIONS[{name!r}]。）"))
    except ExerciseError as err:
        print(tr(f"Not yet right: {err}", f"还不对：{err}"))
    return False


def spaced(what: str) -> str:
    """A label followed by Chinese text: a space after Latin letters, digits or code ("rope(x) 应当是"),
    none after Chinese or full-width punctuation ("你的函数应当是"), as Chinese typesetting has it."""
    return f"{what} " if what[-1:].isascii() else what


def ok(message: str) -> None:
    """The one success line of every checker."""
    print(f"✓ {message}")


def call(fn, *args, what: str):
    """Run the learner's function; a crash becomes an ExerciseError naming its type and message
    (NotImplementedError and ExerciseError pass through: attempt() prints a hint for the first)."""
    try:
        return fn(*args)
    except (NotImplementedError, ExerciseError):
        raise
    except Exception as error:  # noqa: BLE001 -- any crash is reported with its type and message
        raise ExerciseError(tr(f"{what} raised {type(error).__name__}: {error}",
                                f"{spaced(what)}抛出了 {type(error).__name__}：{error}")) from error


def tensor(value, what: str) -> torch.Tensor:
    """The answer itself, which must be a torch.Tensor."""
    if not isinstance(value, torch.Tensor):
        raise ExerciseError(tr(f"{what} should be a torch.Tensor, got {type(value).__name__}",
                                f"{spaced(what)}应当是 torch.Tensor，实际是 {type(value).__name__}"))
    return value


def as_tensor(value, what: str) -> torch.Tensor:
    """A tensor, or a list of numbers made into one (an exercise that does not ask for a tensor accepts both)."""
    if isinstance(value, torch.Tensor):
        return value
    try:
        return torch.as_tensor(value)
    except Exception as error:  # noqa: BLE001
        raise ExerciseError(tr(f"{what} must return a tensor (or a list of numbers), got {type(value).__name__}",
                                f"{spaced(what)}必须返回张量（或数字列表），实际返回的是 {type(value).__name__}")) from error


def number(value, what: str) -> float:
    """A Python number or a one-element tensor, as a float (a bool is not a number here)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise ExerciseError(tr(f"{what} should be a number (or a one-element tensor), got {type(value).__name__}",
                            f"{spaced(what)}应当是一个数（或只含一个元素的张量），实际是 {type(value).__name__}"))


def same(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-6, rtol: float = 0.0) -> bool:
    """Same shape and equal within atol + rtol * |b|, compared in float64 (float32 answers pass too)."""
    return tuple(a.shape) == tuple(b.shape) and torch.allclose(a.double(), b.double(), atol=atol, rtol=rtol)
