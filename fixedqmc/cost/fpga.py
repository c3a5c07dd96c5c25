"""FPGA cost of a data path from its operation counts: DSP blocks, LUTs and memory blocks
of a fully pipelined data path (every counted operation its own operator, one result per
cycle; ``cycles`` > 1 shares an operator over that many cycles).

Per operator (``W``: result bits; ``wa``, ``wb``: operand bits; ``p = M + 1`` and ``E``
of a float result), the rules of ``docs/cost_models.md``:

============================  =========================================================
operation                     fixed point / float format
============================  =========================================================
mul                           tiled DSP blocks of ``wa x wb`` (or ``wa * wb`` LUTs with
                              LUT multipliers) + ``W`` LUTs to round; float: ``p x p``
                              unsigned significands + ``2 p + 2 E`` LUTs
add, sub, acc_add             ``W`` LUTs (carry chain); float: ``2 p ceil(log2 2p)``
                              (align and normalise shifters) + ``2 p + 2 E``
div, recip, sqrt, rsqrt       ``W**2`` LUTs (digit recurrence: a ``W``-bit adder per
                              result bit); float: ``p**2 + 2 E``
exp                           the LUT exponential of the emulation (seed 001 Appendix
                              B): five ``W x W`` multipliers (``x log2 e``, the three
                              table values, ``r ln 2``, their product) + ``2 W`` (an
                              adder and the final shift), and its own three tables
                              (4096, 2048 and 2048 words of ``W`` bits)
cos_turns, sin_turns          the emulation's quarter-wave table (1025 words of ``W``
                              bits) and angle addition: seven multipliers + ``5 W``
cos, sin                      the same after ``x / (2 pi)``: eight multipliers
floor, round_int, abs_,       ``W`` LUTs (float: ``bits``)
minimum, maximum, select,
convert, less, bins
load, store, const            0 (wires and registers)
============================  =========================================================

These are first-order estimates for comparing plans, not a synthesis result: they ignore
routing, registers, control and tool optimisations (constant multipliers, DSP pre-adders,
shared shifters), which ``docs/cost_models.md`` discusses with the seed's Table 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import ceil, log2

import pandas as pd

from fixedqmc.cost.blocks import (MEMORY_BLOCKS, MULTIPLIER_BLOCKS, MemoryBlock,
                                  MultiplierBlock, dsp_blocks, memory_blocks)
from fixedqmc.cost.formats import Operand, operand
from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics.transcendental import EXP_CHUNK_BITS

ADDS = ("add", "sub", "acc_add")
ROOTS = ("div", "recip", "sqrt", "rsqrt")
TRIG = ("cos", "sin", "cos_turns", "sin_turns")
#: per operator: (multipliers, adders, table entries) of the emulation's methods
_TABLE_METHODS = {"exp": (5, 2, tuple(1 << b for b in EXP_CHUNK_BITS)),
                  "cos_turns": (7, 5, (1025,)), "sin_turns": (7, 5, (1025,)),
                  "cos": (8, 5, (1025,)), "sin": (8, 5, (1025,))}
SIMPLE = ("floor", "round_int", "abs_", "minimum", "maximum", "select", "convert", "less",
          "uniform_bin", "log2_bin")
FREE = ("load", "store", "const")
OPERATIONS = ("mul",) + ADDS + ROOTS + ("exp",) + TRIG + SIMPLE + FREE


@dataclass(frozen=True)
class FpgaModel:
    """An FPGA family: its DSP multiplier, its memory block, and whether multipliers are
    built from LUTs instead of DSP blocks."""

    name: str
    multiplier: MultiplierBlock
    memory: MemoryBlock
    lut_multipliers: bool = False

    def multiply(self, a: Operand, b: Operand, out: Operand) -> tuple:
        """``(dsp blocks, luts)`` of one multiplier of a by b into out."""
        if out.kind == "float":
            p, e = out.man_bits + 1, out.exp_bits
            pa, pb = a.significand, b.significand
            extra = 2 * p + 2 * e
            signed = False
        else:
            pa, pb, extra, signed = a.bits, b.bits, out.bits, True
        sa, sb = (a.signed and signed), (b.signed and signed)
        if self.lut_multipliers:
            return 0.0, pa * pb + extra
        return dsp_blocks(pa, sa, pb, sb, self.multiplier), extra

    def operator(self, op: str, out: Operand, a: Operand, b: Operand) -> tuple:
        """``(dsp blocks, luts, memory blocks)`` of one operator ``op`` with result
        ``out`` and operands ``a``, ``b`` (:data:`OPERATIONS`; rules in the module
        docstring)."""
        floating = out.kind == "float"
        p, e, w = out.man_bits + 1, out.exp_bits, out.bits
        if op == "mul":
            return (*self.multiply(a, b, out), 0)
        if op in ADDS:
            return 0.0, (2 * p * ceil(log2(2 * p)) + 2 * p + 2 * e) if floating else w, 0
        if op in ROOTS:
            return 0.0, (p * p + 2 * e) if floating else w * w, 0
        if op in _TABLE_METHODS:
            muls, adds, tables = _TABLE_METHODS[op]
            d, lut = self.multiply(out, out, out)
            add = self.operator("add", out, out, out)[1]
            memory = sum(memory_blocks(n, w, self.memory) for n in tables)
            return muls * d, muls * lut + adds * add, memory
        if op in SIMPLE:
            return 0.0, w, 0
        if op in FREE:
            return 0.0, 0, 0
        raise FixedQMCError(f"operation {op!r} has no FPGA cost rule; known: "
                            f"{', '.join(OPERATIONS)}")

    def cost(self, ops: pd.DataFrame, arrays: pd.DataFrame | None = None, *,
             cycles: int = 1) -> pd.DataFrame:
        """Per row of ``ops`` (columns ``op``, ``count`` per evaluation, ``result``, ``a``,
        ``b``: formats, operands empty for unary operations) its operators
        ``ceil(count / cycles)`` and their ``dsp`` and ``luts``; per row of ``arrays``
        (``entries``, ``format``) its ``memory`` blocks.  The rows of both, one frame."""
        if int(cycles) < 1:
            raise FixedQMCError(f"cycles = {cycles!r}: an operator serves at least 1 cycle")
        rows = []
        for r in ops.itertuples(index=False):
            out = operand(r.result)
            a = operand(r.a) if _given(r.a) else out
            b = operand(r.b) if _given(r.b) else a
            n = ceil(float(r.count) / int(cycles))
            dsp, luts, memory = self.operator(r.op, out, a, b)
            rows.append({**r._asdict(), "operators": n, "dsp": n * dsp, "luts": n * luts,
                         "memory": n * memory})
        for r in ([] if arrays is None else arrays.itertuples(index=False)):
            blocks = memory_blocks(int(r.entries), operand(r.format).bits, self.memory)
            rows.append({**r._asdict(), "op": "array", "operators": 0, "dsp": 0.0,
                         "luts": 0, "memory": blocks})
        return pd.DataFrame(rows)


def _given(x) -> bool:
    """An operand column's entry holds a format (not empty, None or NaN)."""
    return not (x is None or (isinstance(x, float) and pd.isna(x)) or str(x) == "")


FPGA_MODELS = {
    "fpga-dsp48e2": FpgaModel("fpga-dsp48e2", MULTIPLIER_BLOCKS["dsp48e2"],
                              MEMORY_BLOCKS["bram18"]),
    "fpga-dsp58": FpgaModel("fpga-dsp58", MULTIPLIER_BLOCKS["dsp58"], MEMORY_BLOCKS["bram18"]),
    "fpga-intel27x27": FpgaModel("fpga-intel27x27", MULTIPLIER_BLOCKS["intel27x27"],
                                 MEMORY_BLOCKS["m20k"]),
    "fpga-intel18x19": FpgaModel("fpga-intel18x19", MULTIPLIER_BLOCKS["intel18x19"],
                                 MEMORY_BLOCKS["m20k"]),
    "fpga-virtex4": FpgaModel("fpga-virtex4", MULTIPLIER_BLOCKS["dsp48"],
                              MEMORY_BLOCKS["bram18"]),
    "fpga-lut": FpgaModel("fpga-lut", MULTIPLIER_BLOCKS["dsp48e2"], MEMORY_BLOCKS["bram18"],
                          lut_multipliers=True),
}
