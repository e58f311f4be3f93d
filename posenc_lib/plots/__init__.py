"""Pure figure functions: render_*(ax, ...) draws on the axes it is given and returns the data it
drew (so tests can check a figure without a browser). No widgets, no state of their own, no training: a
figure of trained models or experiments draws the results it is given. The one matplotlib setting the
package changes is documented in _style: on import it appends a CJK font to rcParams["font.family"] as a
fallback after your own families (Latin text keeps its font); `remove_cjk_font()` takes it out again.

One module per topic, with the same names in posenc_lib.widgets and posenc_lib.exercises:
permutation (01), sinusoidal (00, 02, 03), learned (04), relative (05: Shaw, T5, ALiBi),
rope (06), extension (07, 08: extrapolation and context extension), review (09), production (10),
multidim (11), inference (12), serving (13), generators, content, frequencies, flipflop (14);
arena (every method under 07's protocol: `make arena`).
_style holds the shared look (tick labels, panel spacing, one colour per encoding).
Every public name is also importable from here: `from posenc_lib.plots import render_pe_dot`.
"""
from ._style import remove_cjk_font  # noqa: F401  (the one setting the import changes, undone)
from .arena import *  # noqa: F401,F403
from .content import *  # noqa: F401,F403
from .extension import *  # noqa: F401,F403
from .flipflop import *  # noqa: F401,F403
from .frequencies import *  # noqa: F401,F403
from .generators import *  # noqa: F401,F403
from .inference import *  # noqa: F401,F403
from .learned import *  # noqa: F401,F403
from .multidim import *  # noqa: F401,F403
from .permutation import *  # noqa: F401,F403
from .production import *  # noqa: F401,F403
from .relative import *  # noqa: F401,F403
from .review import *  # noqa: F401,F403
from .rope import *  # noqa: F401,F403
from .serving import *  # noqa: F401,F403
from .sinusoidal import *  # noqa: F401,F403
