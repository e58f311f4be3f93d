"""plots for notebooks 07-09."""

__all__: list = []
