"""Range profiles: the dynamic range of every kernel variable, and formats derived from it.

The method of seed 001 (Sec. 3): run in double precision, record for every named variable
its minimum, maximum, largest magnitude and smallest nonzero magnitude (each measured over
every value the variable holds: operation results and kernel inputs such as positions and
table constants, never derived from the range), give each variable
the integer bits its range needs (plus a safety margin), and use one common word width W for
all, so that a width fixes a complete per-variable format assignment (``fixed:W`` in the
precision spec sizes formats from the profiled ranges).

Safety margin: the profiled range is widened by ``2**margin_bits`` (default 1 bit: twice
the largest magnitude seen), because a profile of finite samples cannot see the extremes of
a longer run; values beyond the widened range saturate and are counted as overflow events
in every run.  The table positions t and u keep their bound [0, 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fixedqmc.numerics.kernel_set import merge_stats
from fixedqmc.numerics.policy import format_for_range, int_bits_for

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
        """``{kernel: {variable: (lo, hi)}}`` widened by the margin, for the system's
        ``ranges=`` argument (sizing width-only specs such as ``fixed:32``)."""
        f = 2.0 ** margin_bits

        def widen(v, lo, hi):
            # positions in a table's bin or region, [0, 1) by construction; a variable of
            # the same name with values outside [0, 1] is something else (a signed u)
            if v.split("_")[-1] in UNIT_INTERVAL and 0.0 <= lo and hi <= 1.0:
                return 0.0, _ONE_BELOW
            return (lo * f if lo < 0 else lo), (hi * f if hi > 0 else hi)
        return {k: {v: widen(v, lo, hi) for v, (lo, hi, _, _) in vs.items()}
                for k, vs in self.stats.items()}

    def frame(self, width: int | None = None, margin_bits: int = DEFAULT_MARGIN_BITS
              ) -> pd.DataFrame:
        """One row per variable: range, integer bits needed (with the margin) and, for a
        width W, the format (or why none fits)."""
        rows = []
        for k, vs in self.ranges(margin_bits).items():
            for v, (lo, hi) in vs.items():
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
                rows.append(row)
        return pd.DataFrame(rows)

    def to_json(self) -> dict:
        return {k: {v: list(map(float, s)) for v, s in vs.items()} for k, vs in self.stats.items()}

    @classmethod
    def from_json(cls, data: dict) -> "RangeProfile":
        """Inverse of :meth:`to_json`; a null (strict JSON of a non-finite value, e.g. the
        smallest nonzero magnitude of a variable that was always zero) reads as inf."""
        return cls({k: {v: tuple(np.inf if x is None else x for x in s)
                        for v, s in vs.items()} for k, vs in data.items()})
