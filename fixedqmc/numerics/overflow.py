"""Counting of overflow events (wrap and saturate) per named variable.

No saturation is silent: every fixed-point operation reports how many of its elements
overflowed, under the name of the variable it produced, to an :class:`OverflowLog` (the
module-level default log unless one is given).  A variable in a floating-point format
reports its overflows (to infinity or saturated) the same way, and also its results that
underflowed to zero, came out subnormal, or are NaN (:data:`FLOAT_EVENT_KINDS`).
"""

from __future__ import annotations

from collections import defaultdict

import pandas as pd

#: the events of a float format's results besides overflow, counted per variable
FLOAT_EVENT_KINDS = ("underflow", "subnormal", "nan")


class OverflowLog:
    """Per-variable counts of overflow events and of values produced.

    ``events[name]`` is how many results of variable ``name`` did not fit their format (and
    were wrapped or saturated, or became infinite); ``values[name]`` how many results were
    produced in all; ``kinds[name]`` a float-format variable's counts of
    :data:`FLOAT_EVENT_KINDS`.
    """

    def __init__(self) -> None:
        self.events: dict[str, int] = defaultdict(int)
        self.values: dict[str, int] = defaultdict(int)
        self.modes: dict[str, str] = {}
        self.formats: dict[str, str] = {}
        self.kinds: dict[str, dict] = {}
        #: kernel name -> the precision whose formats and modes are recorded for it
        self.registered: dict = {}

    def record(self, name: str, events: int, values: int, fmt: str = "", mode: str = "",
               kinds: dict | None = None) -> None:
        self.events[name] += int(events)
        if kinds:
            mine = self.kinds.setdefault(name, dict.fromkeys(FLOAT_EVENT_KINDS, 0))
            for k, n in kinds.items():
                mine[k] += int(n)
        self.values[name] += int(values)
        if fmt:
            self.formats[name] = fmt
        if mode:
            self.modes[name] = mode

    def merge(self, other: "OverflowLog") -> None:
        for name in other.values:
            self.record(name, other.events[name], other.values[name],
                        other.formats.get(name, ""), other.modes.get(name, ""),
                        other.kinds.get(name))

    def reset(self) -> None:
        self.events.clear()
        self.values.clear()
        self.modes.clear()
        self.formats.clear()
        self.kinds.clear()
        self.registered.clear()

    @property
    def total_events(self) -> int:
        return sum(self.events.values())

    def to_frame(self) -> pd.DataFrame:
        """One row per variable: format, overflow mode, events, values and event rate, and
        (when any variable is in a float format) its underflow, subnormal and NaN counts."""
        names = sorted(self.values)
        df = pd.DataFrame(
            {
                "variable": names,
                "format": [self.formats.get(n, "") for n in names],
                "overflow": [self.modes.get(n, "") for n in names],
                "events": [self.events[n] for n in names],
                "values": [self.values[n] for n in names],
            }
        )
        df["rate"] = df["events"] / df["values"].where(df["values"] > 0, 1)
        if self.kinds:
            for k in FLOAT_EVENT_KINDS:
                df[k] = [self.kinds.get(n, {}).get(k, 0) for n in names]
        return df

    def __repr__(self) -> str:
        return f"OverflowLog({dict(self.events)} events in {dict(self.values)} values)"


default_log = OverflowLog()
