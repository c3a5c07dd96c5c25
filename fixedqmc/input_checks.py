"""Checks of input values that name the key and what is allowed (used by the run input and
by every system plugin's ``check``).  Each raises a :class:`FixedQMCError`."""

from __future__ import annotations

import math

import numpy as np

from fixedqmc.errors import FixedQMCError


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def check_choice(key: str, v, allowed) -> None:
    if v not in allowed:
        raise FixedQMCError(f"{key} = {v!r} is not allowed; choose one of "
                            f"{', '.join(map(str, allowed))}")


def check_int(key: str, v, low: int = 1) -> None:
    """An integer >= ``low``."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise FixedQMCError(f"{key} must be an integer >= {low}, got {v!r}")


def check_positive(key: str, v) -> None:
    """A finite number > 0."""
    if not _is_number(v) or not math.isfinite(v) or v <= 0:
        raise FixedQMCError(f"{key} must be a positive number, got {v!r}")


def check_number(key: str, v, low: float | None = None) -> None:
    """A finite number (>= ``low`` if given)."""
    if not _is_number(v) or not math.isfinite(v) or (low is not None and v < low):
        more = f" >= {low}" if low is not None else ""
        raise FixedQMCError(f"{key} must be a finite number{more}, got {v!r}")


def check_str(key: str, v) -> None:
    if not isinstance(v, str):
        raise FixedQMCError(f"{key} must be a string, got {v!r}")


def check_bool(key: str, v) -> None:
    if not isinstance(v, bool):
        raise FixedQMCError(f"{key} must be true or false, got {v!r}")


def check_numbers(key: str, v, max_len: int | None = None) -> None:
    """A list of finite numbers (at most ``max_len``)."""
    if not isinstance(v, list) or (max_len is not None and len(v) > max_len) or not all(
            _is_number(x) and math.isfinite(x) for x in v):
        most = f" of at most {max_len}" if max_len is not None else ""
        raise FixedQMCError(f"{key} must be a list{most} numbers, got {v!r}")
