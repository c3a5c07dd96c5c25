"""Exception types raised by fixedqmc.

Every error raised for bad user input derives from ``ValueError`` so that a caller can catch
it generically, and its message names the offending key or value and what is allowed.
"""


class FixedQMCError(ValueError):
    """Base class for invalid input to fixedqmc."""


class FormatError(FixedQMCError):
    """A Q-format string or bit count is malformed or out of range."""


class ModeError(FixedQMCError):
    """An unknown rounding or overflow mode name."""


class PrecisionSpecError(FixedQMCError):
    """A precision spec string (``--precision``) is malformed."""


class FixedOverflowError(FixedQMCError, OverflowError):
    """A value does not fit its format and the overflow mode is ``raise``."""


class FloatRangeWarning(UserWarning):
    """Variables of a ``float:m<M>`` precision whose profiled range no exponent width
    (2..11 bits) holds: they get the widest format, in which their largest values would
    overflow or their smallest go subnormal.  ``variables`` maps ``"kernel.variable"`` to
    ``"overflow"``, ``"subnormal"`` or ``"overflow, subnormal"``."""

    def __init__(self, message: str, variables: dict | None = None):
        super().__init__(message)
        self.variables = dict(variables or {})
