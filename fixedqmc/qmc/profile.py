"""Range profiles: the dynamic range of every kernel variable, and formats derived from it.

The method of seed 001 (Sec. 3): run in double precision, record for every named variable
its minimum, maximum, largest magnitude and smallest nonzero magnitude (each measured over
every value the variable holds: operation results and kernel inputs such as positions and
table constants, never derived from the range), give each variable
the integer bits its range needs (plus a safety margin), and use one common word width W for
all, so that a width fixes a complete per-variable format assignment (``fixed:W`` in the
precision spec sizes formats from the profiled ranges).  Floating-point formats are sized
the same way: ``float:m<M>`` gives each variable M mantissa bits and the fewest exponent bits
E (2..11) whose range holds the variable's largest magnitude and smallest nonzero magnitude
(:func:`fixedqmc.numerics.policy.float_format_for_range`); :meth:`RangeProfile.frame` with
``float_mantissa=M`` lists every variable's format and the variables no E holds.

Safety margin: the profiled range is widened by ``2**margin_bits`` (default 1 bit: twice
the largest magnitude seen, and half the smallest nonzero magnitude), because a profile of
finite samples cannot see the extremes of a longer run; values beyond the widened range
saturate (fixed point) or overflow (float formats) and are counted as events in every run.
The table positions t and u keep their bound [0, 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.kernel_set import merge_stats
from fixedqmc.numerics.policy import (Precision, float_format_for_range, format_for_range,
                                      int_bits_for, parse_precision_item)

DEFAULT_MARGIN_BITS = 1
#: table-lookup variables in [0, 1) by construction (t, u; g_t, l_u, ...): never widened
#: (only when their profiled range lies in [0, 1]: other kernels have signed ``u``s)
UNIT_INTERVAL = ("t", "u")
_ONE_BELOW = float(np.nextafter(1.0, 0.0))


@dataclass(frozen=True)
class RangeProfile:
    """Per kernel variable ``(min, max, max |x|, min nonzero |x|)`` (the variable's units)."""

    stats: dict  # {kernel: {variable: (min, max, maxabs, minabs)}}

    @classmethod
    def from_system(cls, system, batches) -> "RangeProfile":
        """Profile ``system`` (any system: its ``profile`` method) on configuration batches
        (each (n_walkers, N, 3)): the union of the ranges over all batches."""
        merged: dict = {}
        for b, batch in enumerate(batches):
            for k, vars_ in system.profile(batch, step=b).items():
                dst = merged.setdefault(k, {})
                for v, st in vars_.items():
                    dst[v] = merge_stats(dst.get(v), tuple(st))
        return cls(merged)

    def ranges(self, margin_bits: int = DEFAULT_MARGIN_BITS) -> dict:
        """``{kernel: {variable: (lo, hi, min_nonzero)}}`` widened by the margin (``lo``,
        ``hi`` away from zero by ``2**margin_bits``, the smallest nonzero magnitude toward
        it), for the system's ``ranges=`` argument: ``(lo, hi)`` size width-only specs such
        as ``fixed:32``, all three the exponent bits of ``float:m<M>``."""
        f = 2.0 ** margin_bits

        def widen(v, lo, hi, mn):
            # positions in a table's bin or region, [0, 1) by construction; a variable of
            # the same name with values outside [0, 1] is something else (a signed u)
            if v.split("_")[-1] in UNIT_INTERVAL and 0.0 <= lo and hi <= 1.0:
                return 0.0, _ONE_BELOW, mn / f
            return (lo * f if lo < 0 else lo), (hi * f if hi > 0 else hi), mn / f
        return {k: {v: widen(v, lo, hi, mn) for v, (lo, hi, _, mn) in vs.items()}
                for k, vs in self.stats.items()}

    def frame(self, width: int | None = None, margin_bits: int = DEFAULT_MARGIN_BITS, *,
              float_mantissa: int | str | None = None) -> pd.DataFrame:
        """One row per variable: range (``min``, ``max``), largest and smallest nonzero
        magnitude (``max_abs``, ``min_nonzero_abs``; inf if always zero), integer bits
        needed (with the margin) and, for a width W, the ``format`` (or why none fits).

        ``float_mantissa`` (M, or a spec ``float:m<M>[:rounding][:options]``): also the
        float format ``float:m<M>`` gives each variable (``float_format``, its
        ``float_exp_bits``) and ``float_range``: ``""`` if the format holds the variable's
        range (with the margin), else what its values would do in the widest exponent,
        ``"overflow"``, ``"subnormal"`` or ``"overflow, subnormal"`` (the variables of a
        :class:`~fixedqmc.errors.FloatRangeWarning`; :meth:`float_problems`)."""
        prec = None if float_mantissa is None else mantissa_precision(float_mantissa)
        rows = []
        for k, vs in self.ranges(margin_bits).items():
            for v, (lo, hi, mn) in vs.items():
                raw = self.stats[k][v]
                signed = lo < 0
                row = {"kernel": k, "variable": v, "min": raw[0], "max": raw[1],
                       "max_abs": raw[2], "min_nonzero_abs": raw[3], "signed": signed,
                       "int_bits": int_bits_for(lo, hi, signed)}
                if width is not None:
                    try:
                        row["format"] = str(format_for_range(lo, hi, width, f"{k}.{v}"))
                    except ValueError as exc:
                        row["format"] = f"none ({exc})"
                if prec is not None:
                    fmt, problem = float_format_for_range(max(abs(lo), abs(hi)), mn, prec,
                                                          f"{k}.{v}")
                    row.update(float_format=fmt.spec, float_exp_bits=fmt.exp_bits,
                               float_range=problem)
                rows.append(row)
        return pd.DataFrame(rows)

    def float_problems(self, float_mantissa: int | str,
                       margin_bits: int = DEFAULT_MARGIN_BITS) -> dict:
        """``{"kernel.variable": "overflow" | "subnormal" | "overflow, subnormal"}``: the
        variables whose range (with the margin) no exponent width holds at ``float:m<M>``
        (``float_mantissa``: M or such a spec); empty if every variable fits."""
        f = self.frame(margin_bits=margin_bits, float_mantissa=float_mantissa)
        if f.empty:
            return {}
        bad = f[f.float_range != ""]
        return {f"{k}.{v}": p for k, v, p in zip(bad.kernel, bad.variable, bad.float_range)}

    def to_json(self) -> dict:
        return {k: {v: list(map(float, s)) for v, s in vs.items()} for k, vs in self.stats.items()}

    @classmethod
    def from_json(cls, data: dict) -> "RangeProfile":
        """Inverse of :meth:`to_json`; a null (strict JSON of a non-finite value, e.g. the
        smallest nonzero magnitude of a variable that was always zero) reads as inf."""
        return cls({k: {v: tuple(np.inf if x is None else x for x in s)
                        for v, s in vs.items()} for k, vs in data.items()})


def mantissa_precision(m) -> Precision:
    """The ``float:m<M>`` precision of a mantissa width M or such a spec string."""
    if isinstance(m, Precision) and m.sized_float:
        return m
    if isinstance(m, bool):
        raise FixedQMCError(f"float_mantissa={m!r}: expected a mantissa width M (1..52) or "
                            "a spec float:m<M>[:rounding][:options]")
    text = f"float:m{m}" if isinstance(m, (int, np.integer)) else str(m)
    if not text.startswith("float:m"):
        raise FixedQMCError(f"float_mantissa={m!r}: expected a mantissa width M (1..52) or "
                            "a spec float:m<M>[:rounding][:options]")
    return parse_precision_item(text)
