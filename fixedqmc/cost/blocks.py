"""FPGA hard blocks: multipliers tiled onto DSP blocks, arrays packed into on-chip memory.

Both are exact counting problems with small search spaces, solved exactly here:

* :func:`multiplier_tiling` covers a ``wa x wb`` product with a grid of DSP multipliers
  (plain tiling: each operand cut into chunks, one block per pair of chunks, the partial
  products summed in the blocks' cascade).  Every block here multiplies two's-complement
  ports, so a chunk holding an operand's sign bit may use a port's full width and any other
  chunk one bit less (it is unsigned, and its top port bit must be 0).  Smarter tilings
  (Kumm et al., ARITH 2018; de Dinechin and Pasca, 2009) save blocks at some widths and are
  not modelled: counts here are those of the plain tiling, an upper bound on what a tool
  achieves.
* :func:`memory_blocks` packs ``entries x width`` bits into memory blocks, each used in one
  of its aspect ratios (depth x width), the width split into columns of possibly different
  ratios (as synthesis tools do): the least number of blocks over every such split.

Sources (``docs/cost_models.md``): AMD UG579 (DSP48E2, 27 x 18), AMD AM004 (DSP58, 27 x
24), Intel's variable-precision DSP user guides (one 27 x 27 or two 18 x 19 per block),
Xilinx UG073 (Virtex-4 DSP48, 18 x 18), AMD UG573 (RAMB18E2/RAMB36E2 ratios; Virtex-4's
18 Kb block RAM, UG070, has the same), Intel Stratix 10 memory user guide (M20K ratios).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import ceil

from fixedqmc.errors import FixedQMCError


@dataclass(frozen=True)
class MultiplierBlock:
    """A DSP multiplier: two's-complement ports of ``a`` and ``b`` bits; ``per_block``
    multipliers share one DSP block (two 18 x 19 in an Intel block)."""

    name: str
    a: int
    b: int
    per_block: int = 1
    source: str = ""


MULTIPLIER_BLOCKS = {
    "dsp48e2": MultiplierBlock("dsp48e2", 27, 18, 1, "AMD UG579 (UltraScale DSP48E2)"),
    "dsp58": MultiplierBlock("dsp58", 27, 24, 1, "AMD AM004 (Versal DSP58)"),
    "intel27x27": MultiplierBlock("intel27x27", 27, 27, 1,
                                  "Intel variable-precision DSP, 27 x 27 mode"),
    "intel18x19": MultiplierBlock("intel18x19", 18, 19, 2,
                                  "Intel variable-precision DSP, two 18 x 19 per block"),
    "dsp48": MultiplierBlock("dsp48", 18, 18, 1, "AMD/Xilinx UG073 (Virtex-4 DSP48)"),
}


def chunks(width: int, signed: bool, port: int) -> list:
    """The fewest chunks ``[(shift, bits, signed), ...]`` (least significant first) of a
    ``width``-bit operand on ``port``-bit two's-complement ports: the sign chunk takes
    ``port`` bits, every other chunk ``port - 1`` (its port's top bit is 0)."""
    if width < 1 or port < 2:
        raise FixedQMCError(f"an operand of {width} bits on a {port}-bit port: both must be "
                            "positive (a port at least 2 bits)")
    out, shift = [], 0
    while True:
        left = width - shift
        if signed and left <= port:
            return out + [(shift, left, True)]
        if not signed and left <= port - 1:
            return out + [(shift, left, False)]
        out.append((shift, port - 1, False))
        shift += port - 1


def multiplier_tiling(wa: int, sa: bool, wb: int, sb: bool, block: MultiplierBlock) -> tuple:
    """The plain tiling of a ``wa x wb`` product (``sa``, ``sb``: the operands are signed)
    with the fewest multipliers, over both ways of putting the operands on the ports:
    ``((chunks of a, a's port bits), (chunks of b, b's port bits))`` (:func:`chunks`); it
    uses ``len(chunks of a) * len(chunks of b)`` multipliers."""
    options = [((chunks(wa, sa, pa), pa), (chunks(wb, sb, pb), pb))
               for pa, pb in ((block.a, block.b), (block.b, block.a))]
    return min(options, key=lambda t: len(t[0][0]) * len(t[1][0]))


def dsp_blocks(wa: int, sa: bool, wb: int, sb: bool, block: MultiplierBlock) -> float:
    """DSP blocks of one ``wa x wb`` multiplier (:func:`multiplier_tiling`), a fraction
    where several multipliers share a block (0.5: half an Intel block)."""
    (ta, _), (tb, _) = multiplier_tiling(wa, sa, wb, sb, block)
    return len(ta) * len(tb) / block.per_block


@dataclass(frozen=True)
class MemoryBlock:
    """An on-chip memory block and its ``(depth, width)`` aspect ratios."""

    name: str
    bits: int
    ratios: tuple
    source: str = ""


MEMORY_BLOCKS = {
    "bram18": MemoryBlock("bram18", 18 * 1024, ((16384, 1), (8192, 2), (4096, 4), (2048, 9),
                                                (1024, 18), (512, 36)),
                          "AMD UG573 (RAMB18E2, simple dual port)"),
    "bram36": MemoryBlock("bram36", 36 * 1024, ((32768, 1), (16384, 2), (8192, 4), (4096, 9),
                                                (2048, 18), (1024, 36), (512, 72)),
                          "AMD UG573 (RAMB36E2, simple dual port)"),
    "m20k": MemoryBlock("m20k", 20 * 1024, ((16384, 1), (8192, 2), (4096, 5), (2048, 10),
                                            (1024, 20), (512, 40)),
                        "Intel Stratix 10 embedded memory user guide (M20K)"),
}


def memory_blocks(entries: int, width: int, block: MemoryBlock) -> int:
    """The fewest ``block``s that hold an array of ``entries`` words of ``width`` bits:
    the width split into columns, each column ``ceil(entries / depth)`` blocks of one
    aspect ratio ``(depth, column width)``."""
    if entries < 0 or width < 0:
        raise FixedQMCError(f"an array of {entries} entries of {width} bits: both must be "
                            ">= 0")
    if entries == 0 or width == 0:
        return 0
    return _columns(int(entries), int(width), block.ratios)


@lru_cache(maxsize=4096)
def _columns(entries: int, width: int, ratios: tuple) -> int:
    best = [0] + [0] * width  # best[w]: fewest blocks holding w bits of each entry
    for w in range(1, width + 1):
        best[w] = min(best[max(0, w - cw)] + ceil(entries / d) for d, cw in ratios)
    return best[width]
