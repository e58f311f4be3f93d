"""exercises for notebooks 04-06."""

__all__: list = []
SOLUTIONS: dict = {}  # exercise name -> reference solution (a function)
