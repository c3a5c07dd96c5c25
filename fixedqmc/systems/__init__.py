"""Physical systems: Hamiltonians and trial wave functions."""
