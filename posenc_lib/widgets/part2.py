"""widgets for notebooks 04-06."""

__all__: list = []
BUILDERS: dict = {}  # name -> zero-argument builder returning an InteractiveFigure
