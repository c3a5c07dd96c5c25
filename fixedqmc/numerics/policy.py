"""Precision policy: one spec string sets the number format of every kernel variable.

Grammar (whitespace ignored)::

    spec      := item ("," item)*
    item      := [target "="] precision
    target    := "default" | kernel | kernel "." variable
    precision := "float64" | "float32"
               | "fixed:" (qformat | word_bits) [":" rounding [":" overflow]]
               | float_format
               | "float:m" M [":" rounding] [":" options]

``float_format`` is a floating-point format of any width (the grammar of
:mod:`fixedqmc.numerics.float_format`): ``float:e<E>m<M>[:rounding][:options]`` or a name,
``bfloat16``, ``float16``, ``tf32``, ``fp8e4m3``, ``fp8e5m2`` (``float32`` and ``float64``
with a rounding or options, e.g. ``float32:toward_zero``, are emulated formats too; plain
``float32`` and ``float64`` are the machine's own arithmetic).

``float:m<M>`` (mantissa bits only, M in 1..52; rounding and options as for a float format)
sizes each variable's exponent bits E from its profiled range, as ``fixed:W`` sizes integer
bits (:func:`float_format_for_range`): the smallest E in 2..11 (2..10 with ``fn``) such that
the variable's largest magnitude, widened by the profile's safety margin, is at most the
format's largest finite value and its smallest nonzero magnitude, divided by the margin, is at
least the smallest normal.  It needs a range profile (``fixedqmc run --profile PROFILE.json``,
or a sweep, which profiles its samples): declared ranges have no smallest magnitude.  When no
E fits, the variable gets the widest E and a :class:`~fixedqmc.errors.FloatRangeWarning`
names it (and whether it would overflow or go subnormal).

Examples: ``float64``; ``float32``; ``fixed:Q1.36``; ``fixed:fxp-s38/36``; ``fixed:38``
(38-bit words everywhere, each variable's integer bits from its declared or profiled range);
``default=float64,potential=fixed:32,wavefunction=float32``;
``potential=fixed:40:floor:wrap,potential.u=fixed:UQ0.32``; ``bfloat16``;
``orbitals=bfloat16,orbitals.value=float32`` (products in bfloat16, the MO sums in float32);
``default=float:e6m9:stochastic``; ``potential=float:m10`` (10 mantissa bits, exponent bits
from the profile).  An item without a target sets the default; a variable may
be given any precision (a kernel with some variables in formats runs every other variable
in its kernel's precision, float64 or float32 emulated bit for bit).  Fixed-point rounding
defaults to ``half_even`` and overflow to ``saturate``; float formats round to nearest even.

The same string works on the command line (``--precision``), in TOML input files and in the
Python API (:func:`parse_precision`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from fixedqmc.errors import FixedQMCError, FormatError, PrecisionSpecError
from fixedqmc.numerics.float_format import (NAMED_FORMATS, FloatFormat, parse_float_format,
                                            parse_format_parts)
from fixedqmc.numerics.float_format import OPTIONS as FLOAT_OPTIONS
from fixedqmc.numerics.modes import overflow_code, rounding_code
from fixedqmc.numerics.qformat import MAX_FRAC_BITS, MAX_WORD_BITS, QFormat

_TARGET_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")


@dataclass(frozen=True)
class Precision:
    """How one kernel or variable computes: ``kind`` is float64, float32 (the machine's
    arithmetic), fixed or float (a :class:`FloatFormat` in ``fmt``, emulated); a fixed
    precision has either an explicit ``fmt`` or a ``word_bits`` width; a float precision
    either an explicit ``fmt`` or only ``man_bits`` (``float:m<M>``: the exponent bits are
    sized from a range profile, :meth:`float_format`), with its rounding, ``overflow``,
    ``subnormals`` and ``fn`` options."""

    kind: str
    fmt: QFormat | FloatFormat | None = None
    word_bits: int | None = None
    rounding: str = "half_even"
    overflow: str = "saturate"
    man_bits: int | None = None
    subnormals: bool = True
    fn: bool = False

    @property
    def sized_float(self) -> bool:
        """A float precision whose exponent bits come from a range profile (``float:m<M>``)."""
        return self.kind == "float" and self.fmt is None

    def float_format(self, exp_bits: int) -> FloatFormat:
        """The format of a ``float:m<M>`` precision with ``exp_bits`` exponent bits."""
        return FloatFormat(exp_bits, self.man_bits, self.subnormals, self.overflow, self.fn,
                           self.rounding)

    def __str__(self) -> str:
        if self.sized_float:
            opts = ["subnormals" if self.subnormals else "nosubnormals", self.overflow]
            opts += ["fn"] if self.fn else []
            return f"float:m{self.man_bits}:{self.rounding}:{','.join(opts)}"
        if self.kind == "float":
            return self.fmt.spec
        if self.kind != "fixed":
            return self.kind
        core = str(self.fmt) if self.fmt is not None else str(self.word_bits)
        return f"fixed:{core}:{self.rounding}:{self.overflow}"


def parse_precision_item(text: str) -> Precision:
    """Parse one precision such as ``float32`` or ``fixed:Q1.36:floor``."""
    t = text.strip()
    if t in ("float64", "float32"):
        return Precision(t)
    if t.startswith("float:m"):
        return parse_sized_float(t)
    if not t.startswith("fixed:"):
        try:
            return Precision("float", fmt=parse_float_format(t))
        except PrecisionSpecError as exc:
            if t.startswith("float:") or t.split(":")[0] in NAMED_FORMATS:
                raise PrecisionSpecError(f"in precision {t!r}: {exc}") from None
        raise PrecisionSpecError(
            f"unknown precision {t!r}; allowed: 'float64', 'float32', 'fixed:<format>' "
            "(e.g. fixed:Q1.36, fixed:fxp-s38/36) or 'fixed:<word bits>' (e.g. fixed:38), "
            "optionally followed by ':<rounding>[:<overflow>]', or a float format "
            f"'float:e<E>m<M>[:<rounding>][:<options>]' or one of {', '.join(NAMED_FORMATS)}"
        )
    parts = t[len("fixed:"):].split(":")
    if len(parts) > 3 or not parts[0]:
        raise PrecisionSpecError(
            f"malformed fixed precision {t!r}; expected fixed:<format|bits>[:<rounding>[:<overflow>]]"
        )
    rounding = parts[1] if len(parts) > 1 else "half_even"
    overflow = parts[2] if len(parts) > 2 else "saturate"
    rounding_code(rounding)
    overflow_code(overflow)
    core = parts[0]
    if core.isdigit():
        bits = int(core)
        if not 1 <= bits <= MAX_WORD_BITS:
            raise PrecisionSpecError(
                f"word width {bits} in {t!r} is out of range; allowed 1..{MAX_WORD_BITS} bits"
            )
        return Precision("fixed", word_bits=bits, rounding=rounding, overflow=overflow)
    try:
        fmt = QFormat.parse(core)
    except FormatError as exc:
        raise PrecisionSpecError(f"in precision {t!r}: {exc}") from None
    return Precision("fixed", fmt=fmt, rounding=rounding, overflow=overflow)


def parse_sized_float(text: str) -> Precision:
    """Parse ``float:m<M>[:rounding][:options]`` (exponent bits sized from a profile)."""
    parts = text.strip().split(":")
    body = parts[1][1:]
    if not body.isdigit():
        raise PrecisionSpecError(
            f"bad mantissa width {parts[1]!r} in {text!r}; expected float:m<M> with M in 1..52 "
            "mantissa bits (exponent bits sized from a range profile), e.g. float:m10")
    m = int(body)
    if not 1 <= m <= 52:
        raise PrecisionSpecError(
            f"mantissa bits M={m} in {text!r} out of range; allowed: 1..52")
    return sized_float(m, parts[2:], text)


def sized_float(man_bits: int, rest: list, text: str) -> Precision:
    """The precision ``float:m<man_bits>`` with the ``[:rounding][:options]`` parts
    ``rest`` of ``text`` (named in the errors; default nearest even, subnormals, inf)."""
    f = parse_format_parts(rest, text, {"rounding": "nearest_even", "overflow": "inf",
                                        "subnormals": True, "fn": False})
    return Precision("float", man_bits=man_bits, rounding=f["rounding"],
                     overflow=f["overflow"], subnormals=f["subnormals"], fn=f["fn"])


@dataclass(frozen=True)
class PrecisionPolicy:
    """A parsed precision spec: a default plus per-kernel and per-variable overrides."""

    default: Precision = Precision("float64")
    kernels: dict = field(default_factory=dict)
    variables: dict = field(default_factory=dict)  # (kernel, variable) -> Precision

    def for_kernel(self, kernel: str) -> Precision:
        """The precision of a kernel (its override, else the default)."""
        return self.kernels.get(kernel, self.default)

    def for_variable(self, kernel: str, variable: str) -> Precision:
        return self.variables.get((kernel, variable), self.for_kernel(kernel))

    def check_kernels(self, known: dict) -> None:
        """Raise if the spec names a kernel or variable the system does not have.

        ``known`` maps kernel name -> iterable of variable names.
        """
        for k in self.kernels:
            if k not in known:
                raise PrecisionSpecError(
                    f"precision spec names kernel {k!r}; this system has: {', '.join(sorted(known))}"
                )
        for k, v in self.variables:
            if k not in known:
                raise PrecisionSpecError(
                    f"precision spec names kernel {k!r}; this system has: {', '.join(sorted(known))}"
                )
            if v not in known[k]:
                raise PrecisionSpecError(
                    f"precision spec names variable {k}.{v}; kernel {k!r} has: "
                    f"{', '.join(known[k])}"
                )

    def sized_floats(self) -> dict:
        """``{target: precision}`` of the targets (``default``, ``kernel``,
        ``kernel.variable``) whose precision is a ``float:m<M>``, which needs a range
        profile."""
        out = {"default": self.default} if self.default.sized_float else {}
        out.update((k, p) for k, p in sorted(self.kernels.items()) if p.sized_float)
        out.update((f"{k}.{v}", p) for (k, v), p in sorted(self.variables.items())
                   if p.sized_float)
        return out

    def __str__(self) -> str:
        items = [f"default={self.default}"]
        items += [f"{k}={p}" for k, p in sorted(self.kernels.items())]
        items += [f"{k}.{v}={p}" for (k, v), p in sorted(self.variables.items())]
        return ",".join(items)


def spec_items(spec: str) -> list:
    """The items of a spec: its comma-separated pieces, where a piece that is a float
    format's option (``saturate``, ...) belongs to the item before it
    (``bfloat16:nosubnormals,saturate`` is one item)."""
    items: list = []
    for raw in spec.split(","):
        piece = raw.strip()
        if piece in FLOAT_OPTIONS and items and ":" in items[-1]:
            items[-1] += "," + piece
        else:
            items.append(piece)
    return items


def parse_precision(spec: "str | PrecisionPolicy") -> PrecisionPolicy:
    """Parse a precision spec string (see module docstring)."""
    if isinstance(spec, PrecisionPolicy):
        return spec
    if not isinstance(spec, str) or not spec.strip():
        raise PrecisionSpecError(f"a precision spec must be a non-empty string, got {spec!r}")
    default = None
    kernels: dict = {}
    variables: dict = {}
    for item in spec_items(spec):
        if not item:
            raise PrecisionSpecError(f"empty item in precision spec {spec!r}")
        if "=" in item:
            target, _, prec_text = item.partition("=")
            target = target.strip()
            if not _TARGET_RE.match(target):
                raise PrecisionSpecError(
                    f"bad target {target!r} in precision spec; expected 'default', a kernel "
                    "name or 'kernel.variable'"
                )
        else:
            target, prec_text = "default", item
        prec = parse_precision_item(prec_text)
        if target == "default":
            if default is not None:
                raise PrecisionSpecError(f"precision spec {spec!r} sets the default twice")
            default = prec
        elif "." in target:
            k, v = target.split(".")
            if (k, v) in variables:
                raise PrecisionSpecError(f"precision spec {spec!r} sets variable {target} twice")
            variables[(k, v)] = prec
        else:
            if target in kernels:
                raise PrecisionSpecError(f"precision spec {spec!r} sets kernel {target!r} twice")
            kernels[target] = prec
    return PrecisionPolicy(default or Precision("float64"), kernels, variables)


def int_bits_for(lo: float, hi: float, signed: bool) -> int:
    """Integer bits (sign not counted) so that [lo, hi] fits: max |x| < 2**int_bits.

    Negative for ranges below 1/2 (max |x| < 2**-10 needs -10); 0 for the range [0, 0]."""
    m = max(abs(lo), abs(hi))
    if not math.isfinite(m):
        raise FixedQMCError(f"range [{lo}, {hi}] is not finite; cannot size a fixed format")
    if m == 0.0:
        return 0
    return math.frexp(m)[1]  # m = f 2**E, 1/2 <= f < 1: exactly 2**(E-1) <= m < 2**E


def format_for_range(lo: float, hi: float, word_bits: int, name: str = "variable") -> QFormat:
    """The format of ``word_bits`` bits with the fewest integer bits that holds [lo, hi]
    (unsigned if lo >= 0), so all remaining bits are fractional.

    A range below 1/2 gets negative integer bits (``format_for_range(0, 2**-10 - 2**-30, 16)``
    is ``UQ-10.26``), down to the 64 fractional bits a format may have."""
    signed = bool(lo < 0)
    ib = max(int_bits_for(lo, hi, signed), word_bits - int(signed) - MAX_FRAC_BITS)
    if ib + int(signed) > word_bits:
        raise FormatError(
            f"{name}: range [{lo:g}, {hi:g}] needs {ib + int(signed)} integer/sign bits, more "
            f"than the {word_bits}-bit word"
        )
    return QFormat.from_word(word_bits, ib, signed)


#: exponent bits a ``float:m<M>`` variable may get (``fn`` formats: at most 10)
SIZED_EXP_BITS = (2, 11)


def float_format_for_range(max_abs: float, min_nonzero: float, prec: Precision,
                           name: str = "variable") -> tuple[FloatFormat, str]:
    """The format of ``prec`` (a ``float:m<M>`` precision) with the fewest exponent bits E
    (2..11; 2..10 with ``fn``) whose largest finite value is at least ``max_abs`` and whose
    smallest normal is at most ``min_nonzero`` (the variable's largest and smallest nonzero
    magnitudes, margins applied; ``min_nonzero`` inf or ``max_abs`` 0: no such bound), and
    ``""``; if no E does, the widest format and what its values would do: ``"overflow"``,
    ``"subnormal"`` or ``"overflow, subnormal"``."""
    if not (math.isfinite(max_abs) and max_abs >= 0):
        raise FixedQMCError(f"{name}: largest magnitude {max_abs!r} is not a finite number "
                            ">= 0; cannot size a float format")
    if not min_nonzero > 0:  # NaN, zero or negative
        raise FixedQMCError(f"{name}: smallest nonzero magnitude {min_nonzero!r} is not > 0 "
                            "(inf if the variable is always zero); cannot size a float format")
    lo, hi = SIZED_EXP_BITS
    hi = min(hi, 10) if prec.fn else hi
    for e in range(lo, hi + 1):
        fmt = prec.float_format(e)
        if max_abs <= fmt.max_finite and min_nonzero >= fmt.min_normal:
            return fmt, ""
    fmt = prec.float_format(hi)
    problems = (["overflow"] if max_abs > fmt.max_finite else []) + (
        ["subnormal"] if min_nonzero < fmt.min_normal else [])
    return fmt, ", ".join(problems)


#: where a ``float:m<M>`` precision gets its range profile (the end of its errors)
PROFILE_SOURCES = ("fixedqmc run --profile PROFILE.json (written by fixedqmc profile; in "
                   "Python run(..., profile=...)), or a sweep (fixedqmc sweep --mantissas "
                   "...), which profiles its own samples")


def sized_float_format(prec: Precision, ranges: dict | None, variable,
                       name: str = "variable") -> tuple[FloatFormat, str]:
    """:func:`float_format_for_range` of a kernel variable (a
    :class:`~fixedqmc.numerics.kernel_spec.Variable`) under a ``float:m<M>`` precision, from
    its entry ``(lo, hi, min nonzero |x|)`` in ``ranges`` (a range profile's, margins
    applied).  A variable the profile lacks (no value of it was seen) is sized from its
    declared range (largest magnitude only).  Without a profile (``ranges`` None) or with a
    ``(lo, hi)`` pair there is no smallest magnitude: a :class:`PrecisionSpecError` names
    the variable and says a range profile is needed."""
    if ranges is None or len(tuple(ranges.get(variable.name, (0, 0, 0)))) < 3:
        reason = ("no range profile of its kernel was given" if ranges is None else
                  "its range is a (lo, hi) pair, without the smallest nonzero magnitude")
        raise PrecisionSpecError(
            f"{name}: precision {prec} sizes the exponent bits from the variable's profiled "
            f"largest and smallest nonzero magnitudes, but {reason}; a range profile is "
            f"needed: {PROFILE_SOURCES}")
    if variable.name not in ranges:
        return float_format_for_range(max(abs(variable.lo), abs(variable.hi)), math.inf,
                                      prec, name)
    lo, hi, min_nonzero = tuple(ranges[variable.name])[:3]
    return float_format_for_range(max(abs(lo), abs(hi)), min_nonzero, prec, name)


_WOULD = {"overflow": "would overflow", "subnormal": "would go subnormal",
          "overflow, subnormal": "would overflow and go subnormal"}


def float_range_message(kernel: str, problems: dict) -> str:
    """The text of a :class:`~fixedqmc.errors.FloatRangeWarning` for ``problems``
    (``{"kernel.variable": "overflow" | "subnormal" | "overflow, subnormal"}``)."""
    names = "; ".join(f"{k} ({_WOULD[w]})" for k, w in problems.items())
    return (f"kernel {kernel!r}: no exponent width of 2..11 bits holds the profiled range "
            f"of {names}: they get the widest exponent (11 bits; 10 with fn); the list: "
            "RangeProfile.frame(float_mantissa=M), or fixedqmc profile --mantissa M")
