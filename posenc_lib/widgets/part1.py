"""widgets for notebooks 00-03."""

__all__: list = []
BUILDERS: dict = {}  # name -> zero-argument builder returning an InteractiveFigure
