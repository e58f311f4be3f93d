"""One builder per interactive figure; each returns an InteractiveFigure (see _base.py).

BUILDERS maps a name to a zero-argument builder; tests and `make bench` walk it, so every
builder a notebook uses is registered here.
"""
from ._base import InteractiveFigure

BUILDERS: dict = {}

__all__ = ["BUILDERS", "InteractiveFigure"]
