"""Exercise checkers: check_*(answer) -> raises nothing and prints a success line when right, or
raises ExerciseError whose message says *what* is wrong (layout, exponent, sign ...), not just
"mismatch". Reference solutions live in `solutions` and are tested to pass their own checks."""


class ExerciseError(AssertionError):
    """An answer that is not right yet; the message says what to fix."""
