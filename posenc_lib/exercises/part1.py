"""exercises for notebooks 00-03."""

__all__: list = []
SOLUTIONS: dict = {}  # exercise name -> reference solution (a function)
