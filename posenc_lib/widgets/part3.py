"""widgets for notebooks 07-09."""

__all__: list = []
BUILDERS: dict = {}  # name -> zero-argument builder returning an InteractiveFigure
