"""One builder per interactive figure; each returns an InteractiveFigure (see _base.py).

BUILDERS maps a name to a zero-argument builder; tests and `make bench` walk it, so every
builder a notebook uses is registered in its part's BUILDERS.
"""
from . import part1, part2, part3
from ._base import InteractiveFigure
from .part1 import *  # noqa: F401,F403
from .part2 import *  # noqa: F401,F403
from .part3 import *  # noqa: F401,F403

BUILDERS: dict = {**part1.BUILDERS, **part2.BUILDERS, **part3.BUILDERS}
