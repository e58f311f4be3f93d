"""exercises for notebooks 07-09."""

__all__: list = []
SOLUTIONS: dict = {}  # exercise name -> reference solution (a function)
