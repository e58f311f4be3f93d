"""plots for notebooks 04-06."""

__all__: list = []
