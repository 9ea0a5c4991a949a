"""Scripts the Makefile runs (the matrix, the wheel smoke test, mutation testing); not in the wheel."""
