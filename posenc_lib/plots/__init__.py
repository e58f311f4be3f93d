"""Pure figure functions: render_*(ax, ...) draws on the axes it is given and returns the data it
drew (so tests can check a figure without a browser). No widgets, no global state.
part1: notebooks 00-03, part2: 04-06, part3: 07-09."""
from .part1 import *  # noqa: F401,F403
from .part2 import *  # noqa: F401,F403
from .part3 import *  # noqa: F401,F403
