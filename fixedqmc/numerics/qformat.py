"""Q formats: signedness, integer bits and fractional bits of a fixed-point word.

A value with raw integer word ``w`` in format ``Q<I>.<F>`` is ``w * 2**-F``.  The word
holds ``sign + I + F`` bits (at most 64): ``Q1.36`` is signed with one integer bit not
counting the sign and 36 fractional bits, a 38-bit word (the seed 001 paper's widest
format); ``UQ8.24`` is an unsigned 32-bit word.  fxpmath-style strings ``fxp-s38/36``
(signed, 38-bit word, 36 fractional bits) and ``fxp-u32/24`` are accepted too.

Values far below 1 (Gaussian tails, reciprocal-space terms) take *negative* integer bits:
the word's leading bits are then below the binary point, ``UQ-10.26`` (``fxp-u16/26``) is a
16-bit unsigned word with 26 fractional bits, range [0, 2**-10 - 2**-26].  A format has at
most 64 fractional bits (so ``frac - word <= 64 - word``), which keeps every exact
intermediate of the operations within the 192-bit core.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fixedqmc.errors import FormatError

MAX_WORD_BITS = 64
#: Most fractional bits of a format (also with negative integer bits).
MAX_FRAC_BITS = 64

_Q_RE = re.compile(r"^(U?)Q(-?\d+)\.(\d+)$")
_FXP_RE = re.compile(r"^fxp-([su])(\d+)/(\d+)$")


@dataclass(frozen=True, order=True)
class QFormat:
    """A fixed-point format.

    Parameters
    ----------
    signed : bool
        Two's-complement signed word if True, unsigned otherwise.
    int_bits : int
        Integer bits, not counting the sign bit; negative for a word whose most significant
        bit lies below the binary point (``UQ-10.26``: values below 2**-10).
    frac_bits : int
        Fractional bits (0 to 64).
    """

    signed: bool
    int_bits: int
    frac_bits: int

    def __post_init__(self) -> None:
        for name in ("int_bits", "frac_bits"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise FormatError(f"{name} must be an integer, got {value!r}")
        if not 0 <= self.frac_bits <= MAX_FRAC_BITS:
            raise FormatError(f"frac_bits must be >= 0 and at most {MAX_FRAC_BITS}, got {self.frac_bits}")
        if not isinstance(self.signed, bool):
            raise FormatError(f"signed must be True or False, got {self.signed!r}")
        if self.word_bits > MAX_WORD_BITS:
            raise FormatError(
                f"word of {self}: sign {int(self.signed)} + int {self.int_bits} + frac "
                f"{self.frac_bits} = {self.word_bits} bits; at most {MAX_WORD_BITS} allowed"
            )
        if self.word_bits < 1:
            raise FormatError(f"a format needs at least one bit (got {self}: sign "
                              f"{int(self.signed)} + int {self.int_bits} + frac {self.frac_bits})")

    # -- construction -------------------------------------------------------------------
    @classmethod
    def parse(cls, text: "str | QFormat") -> "QFormat":
        """Parse ``Q1.36``, ``UQ8.24``, ``UQ-10.26``, ``fxp-s38/36`` or ``fxp-u16/26``."""
        if isinstance(text, QFormat):
            return text
        if not isinstance(text, str):
            raise FormatError(f"a format must be a string such as 'Q1.36', got {text!r}")
        s = text.strip()
        m = _Q_RE.match(s)
        if m:
            return cls(m.group(1) != "U", int(m.group(2)), int(m.group(3)))
        m = _FXP_RE.match(s)
        if m:
            signed = m.group(1) == "s"
            word, frac = int(m.group(2)), int(m.group(3))
            if word < 1 or (signed and word < 2):
                raise FormatError(f"format {text!r}: a {'signed' if signed else 'unsigned'} "
                                  f"word needs at least {1 + int(signed)} bit(s)")
            return cls(signed, word - frac - int(signed), frac)
        raise FormatError(
            f"malformed format {text!r}; allowed forms: 'Q<int>.<frac>' (signed, e.g. Q1.36), "
            "'UQ<int>.<frac>' (unsigned, e.g. UQ8.24; int may be negative, e.g. UQ-10.26), "
            "'fxp-s<word>/<frac>', 'fxp-u<word>/<frac>'"
        )

    @classmethod
    def from_word(cls, word_bits: int, int_bits: int, signed: bool = True) -> "QFormat":
        """Format with a given word width and integer bits (negative: the word lies below
        2**int_bits); the rest are fractional."""
        frac = word_bits - int_bits - int(signed)
        if frac < 0:
            raise FormatError(
                f"{int_bits} integer bits do not fit a {word_bits}-bit "
                f"{'signed' if signed else 'unsigned'} word"
            )
        return cls(signed, int_bits, frac)

    # -- properties ---------------------------------------------------------------------
    @property
    def word_bits(self) -> int:
        """Total bits in the word: sign + integer + fraction."""
        return int(self.signed) + self.int_bits + self.frac_bits

    @property
    def resolution(self) -> float:
        """Value of one least-significant bit, 2**-frac_bits."""
        return 2.0 ** -self.frac_bits

    @property
    def min_raw(self) -> int:
        """Smallest raw word as an exact Python integer."""
        return -(1 << (self.word_bits - 1)) if self.signed else 0

    @property
    def max_raw(self) -> int:
        """Largest raw word as an exact Python integer."""
        return (1 << (self.word_bits - 1)) - 1 if self.signed else (1 << self.word_bits) - 1

    @property
    def min(self) -> float:
        """Smallest representable value."""
        return self.min_raw * self.resolution

    @property
    def max(self) -> float:
        """Largest representable value."""
        return self.max_raw * self.resolution

    def __str__(self) -> str:
        return f"{'' if self.signed else 'U'}Q{self.int_bits}.{self.frac_bits}"

    def __repr__(self) -> str:
        return f"QFormat('{self}')"

    def to_fxp(self) -> str:
        """fxpmath-style dtype string, e.g. ``fxp-s38/36``."""
        return f"fxp-{'s' if self.signed else 'u'}{self.word_bits}/{self.frac_bits}"
