class ExerciseError(AssertionError):
    """An answer that is not right yet; the message says what to fix."""
