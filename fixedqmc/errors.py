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
