"""One builder per interactive figure; each returns an InteractiveFigure (see _base.py) whose controls
redraw through the matching render_* of posenc_lib.plots.

One module per topic, named as in posenc_lib.plots: permutation, sinusoidal, learned, relative, rope,
extension, production, multidim, serving, inference, generators. BUILDERS maps a name to a zero-argument builder;
tests and `make bench` walk it, so every builder a notebook uses is registered in its topic module's BUILDERS.
"""
from . import (
    content,
    extension,
    generators,
    inference,
    learned,
    multidim,
    permutation,
    production,
    relative,
    rope,
    serving,
    sinusoidal,
)
from ._base import InteractiveFigure as InteractiveFigure  # public: the class every builder returns
from .content import *  # noqa: F401,F403
from .extension import *  # noqa: F401,F403
from .generators import *  # noqa: F401,F403
from .inference import *  # noqa: F401,F403
from .learned import *  # noqa: F401,F403
from .multidim import *  # noqa: F401,F403
from .permutation import *  # noqa: F401,F403
from .production import *  # noqa: F401,F403
from .relative import *  # noqa: F401,F403
from .rope import *  # noqa: F401,F403
from .serving import *  # noqa: F401,F403
from .sinusoidal import *  # noqa: F401,F403

TOPICS = (permutation, sinusoidal, learned, relative, rope, extension, production, multidim, serving, inference,
          generators, content)
BUILDERS: dict = {name: builder for topic in TOPICS for name, builder in topic.BUILDERS.items()}
