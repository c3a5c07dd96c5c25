"""fixedqmc: fixed-point numerics and precision exploration for quantum Monte Carlo."""
