"""The language the library speaks to a learner: English ("en", the default) or Chinese ("zh").

It covers what a learner reads while working through a notebook: the exercise checkers' verdicts, the
titles, axis labels and legends of the figures, the sliders' labels. Errors raised for bad arguments
(ValueError, TypeError) stay in English, as torch's own do.

A notebook sets the language once, in its first code cell: `posenc_lib.set_language("en")` in
notebooks/, `posenc_lib.set_language("zh")` in notebooks/zh/ (the Chinese edition). That is the
process's default, seen by every thread and by the kernel's widget callbacks. `with language("zh"):`
speaks Chinese inside the block only (a contextvars.ContextVar: scoped to this thread or asyncio task,
undone on leaving the block), which is how tests and one-off cells switch without leaking.

Every such text is written as `tr(english, chinese)`, the two side by side at the place that uses
them, so whoever changes one sees the other; a table of texts made at import time holds
`Text(english, chinese)`, which picks its language when it is shown. tests/test_i18n.py checks that
both are there, that the Chinese one is Chinese, and that both interpolate the same values.
"""
from __future__ import annotations

import contextlib
import contextvars
import traceback
import unicodedata
from pathlib import Path
from typing import Callable, Iterator

LANGUAGES = ("en", "zh")
_LIBRARY = str(Path(__file__).resolve().parent)  # posenc_lib/: frames there are the library's, not the learner's

_default = "en"  # set_language's choice for the whole process
_scoped: contextvars.ContextVar[str | None] = contextvars.ContextVar("posenc_language", default=None)
_listeners: list[Callable[[str], None]] = []


def _checked(language) -> str:
    if not isinstance(language, str):
        raise TypeError(f"language must be a str, one of {LANGUAGES}, got {type(language).__name__}")
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    return language


def set_language(language: str) -> None:
    """Make the library speak `language` ("en" or "zh") from now on, in this Python process (outside any
    `with language(...)` block, which wins where it applies)."""
    global _default
    _default = _checked(language)
    for listener in _listeners:
        listener(language)


@contextlib.contextmanager
def language(name: str) -> Iterator[str]:
    """`with language("zh"): ...`: the library speaks `name` inside the block, in this thread or task
    only, and what was in force before comes back afterwards (also when the block raises)."""
    token = _scoped.set(_checked(name))
    try:
        for listener in _listeners:
            listener(name)
        yield name
    finally:
        _scoped.reset(token)


def get_language() -> str:
    """The language in force here: the innermost `with language(...)`, else set_language's ("en" until then)."""
    return _scoped.get() or _default


def on_language_change(listener: Callable[[str], None]) -> None:
    """Call listener(language) on every set_language (the plots use it to warn once when Chinese is
    asked for and no font can draw it)."""
    _listeners.append(listener)


def tr(en: str, zh: str) -> str:
    """The text in the current language: `en` in English, `zh` in Chinese."""
    return zh if get_language() == "zh" else en


def display_width(text: str) -> int:
    """Columns `text` takes in a monospaced font: a CJK character (or full-width punctuation) takes two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


_WIDE = "WF"


def wrap(text: str, width: int = 100) -> str:
    """`text` broken into lines of at most `width` display columns, between words (at a space) or between two
    Chinese characters, never inside a Latin word or a number: JupyterLab's output area breaks a long line
    anywhere (CSS word-break: break-all), "+90 degree / s." included. Existing line breaks stay; a word
    longer than the width keeps its own line."""
    out = []
    for paragraph in text.split("\n"):
        lines, line = [], ""
        for token in _tokens(paragraph):
            if line and display_width(line + token.rstrip()) > width:
                lines.append(line.rstrip())
                line = token.lstrip() if token.isspace() is False else ""
            else:
                line += token
        lines.append(line.rstrip())
        out.append("\n".join(lines))
    return "\n".join(out)


def _tokens(text: str) -> list[str]:
    """Breakable pieces: a Latin word with the spaces after it, or one wide (Chinese) character with what
    punctuation closes it."""
    pieces, current = [], ""
    for ch in text:
        wide = unicodedata.east_asian_width(ch) in _WIDE
        closing = unicodedata.category(ch) in ("Pe", "Pf", "Po") and wide
        if current and not closing and (wide or (current[-1].isspace() and not ch.isspace())
                                       or unicodedata.east_asian_width(current[-1]) in _WIDE):
            pieces.append(current)
            current = ""
        current += ch
    return pieces + ([current] if current else [])


def ljust(text: str, width: int) -> str:
    """`text` padded with spaces to `width` display columns (str.ljust counts a CJK character as one)."""
    return text + " " * (width - display_width(text))


class Text:
    """An English text and its Chinese twin, chosen when used (str(), an f-string, .format) rather than
    when made: for tables of messages built at import time, before a notebook sets its language.
    It compares equal to, hashes like and is searched like the string it shows now (Text("a", "甲") == "a"
    in English), so a table entry still reads like the plain string it stands for; as a dict key or in a
    set it is therefore found only under the language it was put there in."""

    __slots__ = ("en", "zh")

    def __init__(self, en: str, zh: str):
        self.en, self.zh = en, zh

    def __str__(self) -> str:
        return tr(self.en, self.zh)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def format(self, *args, **kwargs) -> str:
        return str(self).format(*args, **kwargs)

    def __eq__(self, other):
        if isinstance(other, Text):
            return (self.en, self.zh) == (other.en, other.zh)
        return str(self) == other if isinstance(other, str) else NotImplemented

    def __hash__(self) -> int:  # a == b must imply hash(a) == hash(b), also for Text == str
        return hash(str(self))

    def __contains__(self, part: str) -> bool:
        return part in str(self)

    def __repr__(self) -> str:
        return f"Text({self.en!r}, {self.zh!r})"


def your_line(error: BaseException) -> str:
    """' (your line N: code)' for the innermost frame of the learner's code in error's traceback (a frame
    outside posenc_lib and outside the libraries it calls), in the learner's language, or '' when there is
    none: what an exercise checker and notebook 07's rules of your own encoding add to a crash of the
    learner's code."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not f.filename.startswith(_LIBRARY) and "site-packages" not in f.filename
              and "/lib/python" not in f.filename]
    if not frames:
        return ""
    frame = frames[-1]
    code = f": {frame.line.strip()}" if frame.line else ""
    return tr(f" (your line {frame.lineno}{code})", f"（你的第 {frame.lineno} 行{code}）")
