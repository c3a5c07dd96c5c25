"""Rounding and overflow modes, with the integer codes the compiled kernels use.

Rounding (applied once, to the exact result of an operation):

========== =========================================================================
floor      drop the extra bits (round toward -inf); truncation in two's complement
zero       round toward zero
half_up    round to nearest, ties toward +inf
half_away  round to nearest, ties away from zero
half_even  round to nearest, ties to even (convergent rounding)
stochastic round up with probability equal to the dropped fraction; reproducible:
           the random bits are a hash of (seed, element index), so results do not
           depend on thread count.  The fraction is compared on its top 64 bits.
========== =========================================================================

Overflow (applied after rounding, when the result does not fit the output word):

========== =========================================================================
wrap       keep the low word bits (two's complement wrap-around); counted
saturate   clamp to the format's min or max; counted
raise      raise :class:`fixedqmc.errors.FixedOverflowError`
========== =========================================================================
"""

from __future__ import annotations

from fixedqmc.errors import ModeError

ROUNDING_MODES = ("floor", "zero", "half_up", "half_away", "half_even", "stochastic")
OVERFLOW_MODES = ("wrap", "saturate", "raise")

FLOOR, ZERO, HALF_UP, HALF_AWAY, HALF_EVEN, STOCHASTIC = range(6)
WRAP, SATURATE, RAISE = range(3)


def rounding_code(name: str) -> int:
    """Integer code of a rounding mode name (see module docstring)."""
    if name not in ROUNDING_MODES:
        raise ModeError(f"unknown rounding mode {name!r}; allowed: {', '.join(ROUNDING_MODES)}")
    return ROUNDING_MODES.index(name)


def overflow_code(name: str) -> int:
    """Integer code of an overflow mode name (see module docstring)."""
    if name not in OVERFLOW_MODES:
        raise ModeError(f"unknown overflow mode {name!r}; allowed: {', '.join(OVERFLOW_MODES)}")
    return OVERFLOW_MODES.index(name)
