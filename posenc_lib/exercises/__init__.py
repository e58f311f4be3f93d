"""Exercise checkers: check_*(answer) prints a success line when the answer is right, or raises
ExerciseError whose message says *what* is wrong (layout, exponent, sign ...), not just "mismatch".
Reference solutions live in each part's SOLUTIONS (name -> function) and are tested to pass their
own checks. part1: notebooks 00-03, part2: 04-06, part3: 07-09."""
from ._errors import ExerciseError
from .part1 import *  # noqa: F401,F403
from .part2 import *  # noqa: F401,F403
from .part3 import *  # noqa: F401,F403
