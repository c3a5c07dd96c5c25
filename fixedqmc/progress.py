"""Progress of long work (run blocks, sweep points, the float64 reference) on stderr.

On a terminal: a tqdm bar.  Otherwise (a log file, CI, a pipe): plain lines such as
``fixedqmc: run: block 547/1010 (54%), 3m12s`` -- one each time another tenth of the work
is done or :data:`INTERVAL_S` seconds have passed since the last line, and one at the end
-- so a long job in a log is never silent and never fills it with carriage returns.
"""

from __future__ import annotations

import sys
import time

INTERVAL_S = 10.0  # the longest silence between two plain lines while work advances
TENTHS = 10  # a plain line each time another 1/TENTHS of the work is done


def say(show: bool | None, text: str) -> None:
    """A status line ``fixedqmc: text`` on stderr (unless ``show`` is False)."""
    if show is not False:
        print(f"fixedqmc: {text}", file=sys.stderr)


def progress(total: int, *, initial: int = 0, unit: str = "block", desc: str = "",
             show: bool | None = None):
    """A progress reporter with ``update(n=1)`` and ``close()``.  ``show``: None (default)
    a tqdm bar when stderr is a terminal, plain lines otherwise; True a bar; False
    nothing."""
    if show is False:
        return _Silent()
    if show or sys.stderr.isatty():
        from tqdm import tqdm
        return tqdm(total=total, initial=initial, unit=unit, desc=desc or None)
    return Lines(total, initial, unit, desc)


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class Lines:
    """Plain progress lines on ``stream`` (stderr): see the module docstring."""

    def __init__(self, total: int, initial: int = 0, unit: str = "block", desc: str = "",
                 stream=None):
        self.total, self.n, self.unit, self.desc = int(total), int(initial), unit, desc
        self.stream = stream if stream is not None else sys.stderr
        self.start = self.last_time = time.monotonic()
        self.last_n = self.n

    def _tenth(self, n: int) -> int:
        return n * TENTHS // self.total if self.total > 0 else 0

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if (self._tenth(self.n) > self._tenth(self.last_n) or self.n >= self.total
                or now - self.last_time >= INTERVAL_S):
            self._line(now)

    def close(self) -> None:
        if self.n != self.last_n:
            self._line(time.monotonic())

    def _line(self, now: float) -> None:
        done = f" ({100 * self.n // self.total}%)" if self.total > 0 else ""
        minutes, seconds = divmod(int(now - self.start), 60)
        what = f"{self.desc}: " if self.desc else ""
        print(f"fixedqmc: {what}{self.unit} {self.n}/{self.total}{done}, "
              f"{minutes}m{seconds:02d}s", file=self.stream, flush=True)
        self.last_time, self.last_n = now, self.n
