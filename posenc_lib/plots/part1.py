"""plots for notebooks 00-03."""

__all__: list = []
