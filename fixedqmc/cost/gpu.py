"""GPU cost of a data path from its operation counts: arithmetic per format class, bytes
moved, and the roofline time on a device profile (a lower bound on the time: every unit at
its peak rate, every byte at the memory's peak bandwidth).

A format runs in the narrowest hardware class that holds it (``fp8`` for E4M3 and E5M2,
then ``float16``, ``bfloat16``, ``tf32``, ``float32``, ``float64``; fixed point in ``int32``
or ``int64``); each arithmetic operation is one operation of its result's class; ``load``
and ``store`` move the result format's container bytes (:attr:`Operand.storage_bytes`).
Time ``= max(sum over classes of operations / peak rate, bytes / bandwidth)``.  Narrow
formats reach their peak only in tensor-core matrix products, which a device file states
(the H100 profile's peaks are those of NVIDIA's datasheet, tensor rates for the narrow
classes), so the time is optimistic for element-wise kernels: a bound, as a roofline is.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from fixedqmc.cost.formats import Operand, operand
from fixedqmc.errors import FixedQMCError

#: float classes, narrowest first: (name, exponent bits, stored mantissa bits)
FLOAT_CLASSES = (("fp8", 4, 3), ("fp8", 5, 2), ("float16", 5, 10), ("bfloat16", 8, 7),
                 ("tf32", 8, 10), ("float32", 8, 23), ("float64", 11, 52))
CLASSES = ("fp8", "float16", "bfloat16", "tf32", "float32", "float64", "int32", "int64")
MOVES = ("load", "store")
FREE = ("const",)


def format_class(x: Operand) -> str:
    """The narrowest hardware class holding format ``x``."""
    if x.kind == "fixed":
        return "int32" if x.bits <= 32 else "int64"
    for name, e, m in FLOAT_CLASSES:
        if x.exp_bits <= e and x.man_bits <= m:
            return name
    raise FixedQMCError(f"float format e{x.exp_bits}m{x.man_bits} is wider than float64: "
                        "no GPU class holds it")


@dataclass(frozen=True)
class Device:
    """A GPU: ``peak`` ``{class: operations per second}``, ``bandwidth`` in bytes per
    second."""

    name: str
    bandwidth: float
    peak: dict = field(default_factory=dict)
    source: str = ""

    def cost(self, ops: pd.DataFrame, arrays: pd.DataFrame | None = None) -> pd.DataFrame:
        """Per row of ``ops`` (``op``, ``count`` per evaluation, ``result``): its class,
        ``flops`` (arithmetic), ``bytes`` (load and store) and ``seconds`` (flops at the
        class's peak, or bytes at the bandwidth); ``arrays`` rows (``entries``, ``format``)
        count as bytes read once."""
        rows = []
        for r in ops.itertuples(index=False):
            out = operand(r.result)
            cls = format_class(out)
            moved = r.op in MOVES
            flops = 0.0 if moved or r.op in FREE else float(r.count)
            nbytes = float(r.count) * out.storage_bytes if moved else 0.0
            rows.append({**r._asdict(), "class": cls, "flops": flops, "bytes": nbytes,
                         "seconds": self._time(cls, flops) + nbytes / self.bandwidth})
        for r in ([] if arrays is None else arrays.itertuples(index=False)):
            out = operand(r.format)
            nbytes = float(r.entries) * out.storage_bytes
            rows.append({**r._asdict(), "op": "array", "class": format_class(out),
                         "flops": 0.0, "bytes": nbytes, "seconds": nbytes / self.bandwidth})
        return pd.DataFrame(rows)

    def _time(self, cls: str, flops: float) -> float:
        if not flops:
            return 0.0
        if cls not in self.peak:
            raise FixedQMCError(f"device {self.name!r} has no peak rate for {cls!r} (its "
                                f"rates: {', '.join(self.peak)}); add '{cls} = <TFLOP/s>' "
                                "under [peak_tflops] in its device file")
        return flops / self.peak[cls]

    def roofline(self, rows: pd.DataFrame) -> float:
        """Roofline seconds of :meth:`cost` rows: the larger of their compute and memory
        times."""
        compute = sum(self._time(c, f) for c, f in zip(rows["class"], rows["flops"]))
        return max(compute, float(rows["bytes"].sum()) / self.bandwidth)


#: NVIDIA H100 SXM, dense peaks (datasheet): float64 vector, float32, the tensor rates of
#: tf32, bf16/fp16 and fp8; HBM3 3.35 TB/s.  No integer rates: fixed point needs a device
#: file that states them.
H100 = Device("h100", 3.35e12, {"float64": 33.5e12, "float32": 66.9e12, "tf32": 494.7e12,
                                "bfloat16": 989.4e12, "float16": 989.4e12, "fp8": 1978.9e12},
              "NVIDIA H100 Tensor Core GPU datasheet (SXM, dense)")


def load_device(path) -> Device:
    """A device profile from a TOML file: ``name``, ``bandwidth_tb_s`` (TB/s) and a table
    ``[peak_tflops]`` of ``class = TFLOP/s`` (classes :data:`CLASSES`), ``source``
    optional."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as err:
        raise FixedQMCError(f"device file {str(path)!r} cannot be read: {err}") from None
    except tomllib.TOMLDecodeError as err:
        raise FixedQMCError(f"device file {str(path)!r} is not valid TOML: {err}") from None
    where = f"device file {str(path)!r}"
    unknown = set(data) - {"name", "bandwidth_tb_s", "peak_tflops", "source"}
    if unknown:
        raise FixedQMCError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; allowed: "
                            "name, bandwidth_tb_s, peak_tflops, source")
    for key in ("name", "bandwidth_tb_s", "peak_tflops"):
        if key not in data:
            raise FixedQMCError(f"{where}: missing key {key!r}")
    peak = data["peak_tflops"]
    if not isinstance(peak, dict) or not peak:
        raise FixedQMCError(f"{where}: 'peak_tflops' must be a table of class = TFLOP/s")
    rates = {}
    for cls, v in {"bandwidth_tb_s": data["bandwidth_tb_s"],
                   **{f"peak_tflops.{k}": x for k, x in peak.items()}}.items():
        if cls.startswith("peak_tflops.") and cls.split(".", 1)[1] not in CLASSES:
            raise FixedQMCError(f"{where}: unknown class {cls!r}; allowed: "
                                f"{', '.join(CLASSES)}")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise FixedQMCError(f"{where}: {cls} = {v!r}; must be a positive number")
        rates[cls] = float(v) * 1e12
    bw = rates.pop("bandwidth_tb_s")
    return Device(str(data["name"]), bw, {k.split(".", 1)[1]: v for k, v in rates.items()},
                  str(data.get("source", str(path))))
