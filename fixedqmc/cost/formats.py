"""Formats as hardware sees them: a fixed-point word (bits, signed) or a float format
(exponent and stored mantissa bits), from a format object or its spec string."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.float_format import NAMED_FORMATS, FloatFormat
from fixedqmc.numerics.policy import parse_precision_item
from fixedqmc.numerics.qformat import QFormat


@dataclass(frozen=True)
class Operand:
    """A number format in hardware terms: fixed (``bits``-bit word, ``signed``) or float
    (``exp_bits``, ``man_bits`` stored mantissa bits, a sign bit)."""

    kind: str  # "fixed" or "float"
    bits: int  # storage bits: the word, or 1 + exp_bits + man_bits
    signed: bool = True
    exp_bits: int = 0
    man_bits: int = 0

    @property
    def significand(self) -> int:
        """Bits a multiplier sees: the word, or a float's significand ``man_bits + 1``."""
        return self.bits if self.kind == "fixed" else self.man_bits + 1

    @property
    def storage_bytes(self) -> int:
        """Bytes of the smallest power-of-two container holding it (tf32: 4)."""
        n = 1
        while 8 * n < self.bits:
            n *= 2
        return n


def operand(fmt) -> Operand:
    """The :class:`Operand` of a :class:`QFormat`, a :class:`FloatFormat` or a spec string
    (``Q3.36``, ``fixed:UQ0.24``, ``bfloat16``, ``float:e5m10``, ``float64``)."""
    if isinstance(fmt, str):
        return _parsed(fmt)
    return _operand(fmt)


@lru_cache(maxsize=1024)
def _parsed(text: str) -> Operand:
    """The :class:`Operand` of a spec string (parsed once per string)."""
    text = text.strip()
    if text in NAMED_FORMATS:
        return _operand(NAMED_FORMATS[text])
    try:
        fmt = parse_precision_item(text if ":" in text else f"fixed:{text}").fmt
    except FixedQMCError as err:
        raise FixedQMCError(f"format {text!r} is not a format: {err}") from None
    if fmt is None:
        raise FixedQMCError(f"format {text!r} has no fixed size (a width-only spec); give a "
                            "resolved format such as Q3.36 or bfloat16")
    return _operand(fmt)


def _operand(fmt) -> Operand:
    if isinstance(fmt, QFormat):
        return Operand("fixed", fmt.word_bits, fmt.signed)
    if isinstance(fmt, FloatFormat):
        return Operand("float", 1 + fmt.exp_bits + fmt.man_bits, True, fmt.exp_bits,
                       fmt.man_bits)
    raise FixedQMCError(f"format {fmt!r}: expected a QFormat, a FloatFormat or a spec string")
