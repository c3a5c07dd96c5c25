"""JSON that every strict parser reads: numpy scalars and arrays become plain numbers and
lists, and non-finite floats (NaN, +-inf) become ``null`` (the field's documentation says
what null means there, e.g. an error bar that could not be estimated)."""

from __future__ import annotations

import json
import math

import numpy as np


def strict(obj):
    """``obj`` with numpy values converted and non-finite floats replaced by None."""
    if isinstance(obj, dict):
        return {str(k): strict(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray)):
        return [strict(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    return obj


def dumps(obj, **kwargs) -> str:
    """``json.dumps`` of :func:`strict` (``allow_nan=False``: never writes NaN tokens)."""
    return json.dumps(strict(obj), allow_nan=False, **kwargs)
