"""What a data path costs in hardware, from its operation counts and formats.

A cost model turns ``ops`` (a DataFrame: ``op``, ``count`` per evaluation, ``result``,
``a``, ``b`` formats; any further columns, e.g. ``kernel`` and ``variable``, are kept) and
``arrays`` (``entries``, ``format``: tables and stored coefficients) into one row of
resources per input row (:func:`cost`) and their totals.  Built-in models: the FPGA
families of :mod:`~fixedqmc.cost.fpga` (``fpga-dsp48e2``, the default, ``fpga-dsp58``,
``fpga-intel27x27``, ``fpga-intel18x19``, ``fpga-virtex4``, ``fpga-lut``) and the GPU
roofline of :mod:`~fixedqmc.cost.gpu` (``gpu-h100``, or ``gpu:<device.toml>``).  A user's model is any
callable ``model(ops, arrays) -> DataFrame`` registered with :func:`register_cost_model` or
declared in the ``fixedqmc.cost_models`` entry-point group (``name = "module:MODEL"``), as
systems are.
"""

from __future__ import annotations

import inspect
from importlib import metadata
from typing import Callable

import numpy as np
import pandas as pd

from fixedqmc.cost.blocks import (MEMORY_BLOCKS, MULTIPLIER_BLOCKS, dsp_blocks,
                                  memory_blocks, multiplier_tiling)
from fixedqmc.cost.formats import Operand, operand
from fixedqmc.cost.fpga import FPGA_MODELS, FpgaModel
from fixedqmc.cost.gpu import H100, Device, load_device
from fixedqmc.errors import FixedQMCError

ENTRY_POINT_GROUP = "fixedqmc.cost_models"
DEFAULT_MODEL = "fpga-dsp48e2"
#: the resources each kind of model reports, summed by :func:`totals`
RESOURCES = ("operators", "dsp", "luts", "memory", "flops", "bytes", "seconds")

_MODELS: dict[str, Callable] = {**{k: m.cost for k, m in FPGA_MODELS.items()},
                                "gpu-h100": H100.cost}


def register_cost_model(name: str, model: Callable, *, replace: bool = False) -> None:
    """Register ``model(ops, arrays) -> DataFrame`` (one row per input row, numeric
    resource columns) under ``name``."""
    if not isinstance(name, str) or not name or ":" in name:
        raise FixedQMCError(f"cost model name {name!r}: a non-empty name without ':'")
    if not callable(model):
        raise FixedQMCError(f"cost model {name!r} must be callable (ops, arrays) -> DataFrame")
    if name in _MODELS and _MODELS[name] is not model and not replace:
        raise FixedQMCError(f"cost model {name!r} is already registered")
    _MODELS[name] = model


def cost_models() -> list:
    """Names of every model: built in, registered, and installed as entry points."""
    return sorted(set(_MODELS) | {ep.name for ep in _entry_points()})


def _entry_points():
    return metadata.entry_points(group=ENTRY_POINT_GROUP)


def cost_model(name: str) -> Callable:
    """The model ``name`` (``gpu:<path>``: the roofline of a device file)."""
    if isinstance(name, str) and name.startswith("gpu:"):
        return load_device(name[4:]).cost
    if name in _MODELS:
        return _MODELS[name]
    for ep in _entry_points():
        if ep.name == name:
            model = ep.load()
            register_cost_model(name, model)
            return model
    raise FixedQMCError(f"unknown cost model {name!r}; known: {', '.join(cost_models())}, "
                        "or gpu:<device.toml>")


def check_cycles(model: str, cycles: int) -> Callable:
    """The model ``model``, after checking it can share operators over ``cycles``: a whole
    number >= 1, and > 1 only for a model with a ``cycles`` parameter."""
    if isinstance(cycles, bool) or not isinstance(cycles, (int, np.integer)) or cycles < 1:
        raise FixedQMCError(f"cycles = {cycles!r}: a whole number of clock cycles >= 1 per "
                            "evaluation")
    priced_by = cost_model(model)
    if cycles != 1 and "cycles" not in inspect.signature(priced_by).parameters:
        raise FixedQMCError(f"cost model {model!r} does not share operators over cycles "
                            f"(cycles = {cycles}); the FPGA models do")
    return priced_by


def cost(ops: pd.DataFrame, arrays: pd.DataFrame | None = None,
         model: str = DEFAULT_MODEL, *, cycles: int = 1) -> pd.DataFrame:
    """The rows of ``ops`` and ``arrays`` with the resources of ``model``.  ``cycles`` > 1:
    the data path finishes one evaluation (the counts' unit) every ``cycles`` clock
    cycles, each operator shared over them (a streaming pipeline, e.g. one particle pair
    or one electron-orbital pair per cycle); only models with a ``cycles`` parameter (the
    FPGA models) price that."""
    priced_by = check_cycles(model, cycles)
    missing = {"op", "count", "result"} - set(ops.columns)
    if missing:
        raise FixedQMCError(f"ops needs the columns op, count, result (and a, b for "
                            f"operands); missing: {', '.join(sorted(missing))}")
    ops = ops.assign(**{c: ops.get(c, "") for c in ("a", "b")})
    if arrays is not None and {"entries", "format"} - set(arrays.columns):
        raise FixedQMCError("arrays needs the columns entries and format")
    return (priced_by(ops, arrays, cycles=int(cycles)) if cycles != 1
            else priced_by(ops, arrays))


def with_formats(counts: pd.DataFrame, formats: dict) -> pd.DataFrame:
    """``counts`` (columns ``kernel``, ``variable``, ``op``, ``count``, ``a``, ``b``: the
    operands' variables, ``|``-joined where several) with the formats of ``formats``
    ``{"kernel.variable": format}``: ``result`` the variable's, ``a`` and ``b`` the widest
    of their variables' (storage bits; empty where none is named).  The input of
    :func:`cost`."""
    def fmt(kernel, variable):
        key = f"{kernel}.{variable}"
        if key not in formats:
            raise FixedQMCError(f"no format for {key} among the {len(formats)} given")
        return formats[key]

    def widest(kernel, names):
        picked = [fmt(kernel, v) for v in str(names).split("|") if v]
        return max(picked, key=lambda f: operand(f).bits) if picked else ""

    out = counts.copy()
    out["result"] = [fmt(k, v) for k, v in zip(counts["kernel"], counts["variable"])]
    for side in ("a", "b"):
        out[side] = [widest(k, v) for k, v in zip(counts["kernel"], counts[side])]
    return out


def totals(rows: pd.DataFrame) -> dict:
    """``{resource: total}`` of :func:`cost` rows (the resources the model reported)."""
    return {c: float(rows[c].sum()) for c in RESOURCES if c in rows.columns}


__all__ = ["MEMORY_BLOCKS", "MULTIPLIER_BLOCKS", "Device", "FpgaModel", "H100", "Operand",
           "check_cycles", "cost", "cost_model", "cost_models", "dsp_blocks", "load_device",
           "memory_blocks", "multiplier_tiling", "operand", "register_cost_model", "totals",
           "with_formats"]
