"""Exercise checkers: check_*(answer) prints a success line when the answer is right, or raises
ExerciseError whose message says *what* is wrong (layout, exponent, sign ...), not just "mismatch".

One module per topic, named as in posenc_lib.plots: permutation, sinusoidal, learned, relative, rope,
extension, review, production, multidim, inference, serving, generators, content, frequencies. Each holds its
checkers and, out of the notebooks' sight, SOLUTIONS (name -> reference solution, tested to pass its own check)
and CHECKS (name -> checker). _common holds what they share: ExerciseError, attempt, call (the learner's
function, a crash named with its line), the success line, the coercions of an answer (a NaN named) and
name_the_mistake (a wrong answer compared with the exercise's table of known mistakes).
"""
from . import (
    content,
    extension,
    frequencies,
    generators,
    inference,
    learned,
    multidim,
    permutation,
    production,
    relative,
    review,
    rope,
    serving,
    sinusoidal,
)
from ._common import ExerciseError as ExerciseError, attempt as attempt  # re-exported: the notebooks import them
from .content import *  # noqa: F401,F403
from .extension import *  # noqa: F401,F403
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

TOPICS = (permutation, sinusoidal, learned, relative, rope, extension, review, production, multidim, inference,
          serving, generators, content, frequencies)
