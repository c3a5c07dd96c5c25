"""Hypothesis strategies for the tests: the public ones of :mod:`fixedqmc.testing.strategies`
(re-exported here, so the tests exercise the public module), and random inputs shared by
tests."""

from fixedqmc.testing.strategies import (
    damaged_bytes,
    deterministic_rounding,
    fixed_operands,
    fixed_range,
    float_format_values,
    float_formats,
    float_op_operands,
    kernel_arrays,
    overflow_modes,
    precision_specs,
    precisions,
    qformats,
    qformats_scaled,
    raw_words,
    rounding_modes,
    values_in,
    walker_positions,
)

__all__ = [
    "damaged_bytes", "deterministic_rounding", "fixed_operands", "fixed_range",
    "float_format_values", "float_formats", "float_op_operands", "kernel_arrays",
    "overflow_modes", "precision_specs", "precisions", "qformats", "qformats_scaled",
    "random_charges", "raw_words", "rounding_modes", "values_in", "walker_positions",
]


def random_charges(rng, n, neutral):
    """``n`` point charges, an (n,) array drawn from -2, -1, 1, 3 by the numpy Generator
    ``rng``; the last one adjusted so that they sum to zero if ``neutral``, else so that
    their total is not zero."""
    q = rng.choice([-2.0, -1.0, 1.0, 3.0], size=n)
    if neutral:
        q[-1] -= q.sum()
    elif q.sum() == 0:
        q[-1] += 1.0
    return q
