"""DSP tilings and memory packing against brute force: tilings that compute the product,
with the fewest blocks any plain tiling can have; packings with the fewest blocks over every
split of the width into columns."""

import random
from itertools import product
from math import ceil

import numpy as np
import pytest

from fixedqmc.cost import MEMORY_BLOCKS, MULTIPLIER_BLOCKS, dsp_blocks, memory_blocks
from fixedqmc.cost.blocks import chunks, multiplier_tiling
from fixedqmc.errors import FixedQMCError

WIDTHS = range(1, 65)


def fewest_chunks(width: int, signed: bool, port: int) -> int:
    """Brute force: the fewest chunks over every cut of the operand (dynamic programming
    over the width of its low part; each chunk but a signed top one fits port - 1 bits)."""
    low = [0] + [10**9] * width  # low[w]: fewest unsigned chunks holding w low bits
    for w in range(1, width + 1):
        low[w] = min(low[w - c] + 1 for c in range(1, min(w, port - 1) + 1))
    top = port if signed else port - 1
    return min(low[width - t] + 1 for t in range(1, min(width, top) + 1))


@pytest.mark.parametrize("name", sorted(MULTIPLIER_BLOCKS))
def test_tiles_are_the_fewest_of_any_plain_tiling(name):
    block = MULTIPLIER_BLOCKS[name]
    for signed in (False, True):
        for w in WIDTHS:
            for port in (block.a, block.b):
                assert len(chunks(w, signed, port)) == fewest_chunks(w, signed, port)
        for wa, wb in product(WIDTHS, (1, 9, 17, 18, 19, 26, 27, 28, 40, 53, 64)):
            best = min(fewest_chunks(wa, signed, pa) * fewest_chunks(wb, signed, pb)
                       for pa, pb in ((block.a, block.b), (block.b, block.a)))
            assert dsp_blocks(wa, signed, wb, signed, block) * block.per_block == best


@pytest.mark.parametrize("name", sorted(MULTIPLIER_BLOCKS))
def test_dsp_blocks_never_fall_as_a_width_grows(name):
    block = MULTIPLIER_BLOCKS[name]
    for signed in (False, True):
        table = np.array([[dsp_blocks(a, signed, b, signed, block) for b in WIDTHS]
                          for a in WIDTHS])
        assert (np.diff(table, axis=0) >= 0).all() and (np.diff(table, axis=1) >= 0).all()
        assert np.array_equal(table, table.T)


def tile_product(x: int, y: int, wa: int, sa: bool, wb: int, sb: bool, block) -> int:
    """x * y computed tile by tile: each chunk's value checked to fit its two's-complement
    port, the partial products shifted and summed."""
    (ta, pa), (tb, pb) = multiplier_tiling(wa, sa, wb, sb, block)

    def parts(v, tiles, port):
        for shift, bits, signed in tiles:
            u = (v >> shift) & ((1 << bits) - 1)
            if signed and u >> (bits - 1):
                u -= 1 << bits
            assert -(1 << (port - 1)) <= u < (1 << (port - 1)), (v, shift, bits, port)
            yield shift, u

    return sum((u * w) << (s + t) for s, u in parts(x, ta, pa) for t, w in parts(y, tb, pb))


@pytest.mark.parametrize("name", sorted(MULTIPLIER_BLOCKS))
def test_a_tiling_computes_the_product(name):
    block = MULTIPLIER_BLOCKS[name]
    rng = random.Random(3)
    for wa, wb in [(1, 1), (17, 18), (18, 18), (26, 17), (27, 27), (38, 38), (40, 24),
                   (53, 53), (64, 64), (64, 7)]:
        for sa, sb in product((False, True), repeat=2):
            lo_a, hi_a = (-(1 << (wa - 1)), (1 << (wa - 1)) - 1) if sa else (0, (1 << wa) - 1)
            lo_b, hi_b = (-(1 << (wb - 1)), (1 << (wb - 1)) - 1) if sb else (0, (1 << wb) - 1)
            xs = [lo_a, hi_a] + [rng.randint(lo_a, hi_a) for _ in range(8)]
            ys = [lo_b, hi_b] + [rng.randint(lo_b, hi_b) for _ in range(8)]
            for x, y in product(xs, ys):
                assert tile_product(x, y, wa, sa, wb, sb, block) == x * y


def test_known_tilings():
    dsp48 = MULTIPLIER_BLOCKS["dsp48e2"]
    assert dsp_blocks(18, True, 27, True, dsp48) == 1     # the block itself
    assert dsp_blocks(18, False, 18, False, dsp48) == 2   # unsigned 18 needs 19 signed bits
    assert dsp_blocks(40, True, 40, True, dsp48) == 6     # 26 + 14 by 17 + 17 + 6
    assert dsp_blocks(18, True, 19, True, MULTIPLIER_BLOCKS["intel18x19"]) == 0.5
    virtex4 = MULTIPLIER_BLOCKS["dsp48"]
    assert dsp_blocks(32, True, 32, True, virtex4) == 4  # 18 + 14 by 18 + 14
    assert dsp_blocks(18, False, 18, True, virtex4) == 2  # unsigned 18 = 17 + 1 unsigned


def fewest_blocks_enumerated(entries: int, width: int, block) -> int:
    """Every multiset of column ratios whose widths cover ``width``."""
    ratios = block.ratios
    best = None
    for counts in product(*[range(ceil(width / w) + 1) for _, w in ratios]):
        if sum(n * w for n, (_, w) in zip(counts, ratios)) >= width:
            c = sum(n * ceil(entries / d) for n, (d, _) in zip(counts, ratios))
            best = c if best is None else min(best, c)
    return best


@pytest.mark.parametrize("name", sorted(MEMORY_BLOCKS))
def test_memory_packing_is_the_fewest_over_every_column_split(name):
    block = MEMORY_BLOCKS[name]
    for entries in (1, 300, 512, 513, 1024, 2500, 8192, 40000):
        for width in range(1, 15):
            n = memory_blocks(entries, width, block)
            assert n == fewest_blocks_enumerated(entries, width, block), (entries, width)
            assert n >= ceil(entries * width / max(d * w for d, w in block.ratios))
    assert memory_blocks(0, 40, block) == 0


def test_known_packings():
    # seed 001's LUT exponential: 8K words, here 40 bits wide
    assert memory_blocks(8192, 40, MEMORY_BLOCKS["m20k"]) == 16   # 512 x 40, 16 deep
    assert memory_blocks(1024, 36, MEMORY_BLOCKS["bram18"]) == 2
    assert memory_blocks(1024, 36, MEMORY_BLOCKS["bram36"]) == 1


def test_bad_widths_are_refused():
    with pytest.raises(FixedQMCError, match="operand of 0 bits"):
        dsp_blocks(0, True, 18, True, MULTIPLIER_BLOCKS["dsp48e2"])
    with pytest.raises(FixedQMCError, match="-1 entries"):
        memory_blocks(-1, 8, MEMORY_BLOCKS["m20k"])
