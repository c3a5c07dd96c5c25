"""Compiled evaluation of two-region tables at float64, float32 or fixed point, one source.

The lookup of HAQMC (seed 002, Sec. 3; the kernels of its Fig. 9) for a
:class:`~fixedqmc.tables.two_region.TwoRegionTable` at squared distances ``s`` (the table's
s units, angstrom**2 for helium): the operation sequence of :mod:`fixedqmc.tables.lookup`
(region test, bin, Horner quadratic ``y = a[k] + u (b[k] + u c[k])``), compiled per
precision with this kernel's variable ids.

``y`` is the rescaled value ``g`` in [0, 1] (up to the fit error); the host undoes the
rescaling and transform in float64, ``f = unscale(region, g)``
(:meth:`TwoRegionTable.unscale`: ``F = offset + scale g``, ``f = F`` or ``log F``).

Kernel variables (kernel name ``"table"`` in precision specs; the ranges, from the table,
size the formats of width-only specs such as ``fixed:32``):

===== =================================== ===================================================
name  range                               meaning
===== =================================== ===================================================
s     [s_min, s_max]                      input squared distance (s units)
ds    [0, max(sigma-s_min, s_max-sigma)]  s - s_lo of the region (s units)
inv   [1/w_max, 1/w_min]                  1 / (region width w), per region (1 / s units)
t     [0, 1)                              position in the region, unsigned
u     [0, 1)                              position in the bin, unsigned
a,b,c coefficient ranges of the table     quadratic coefficients (rescaled units)
uc    per-bin extremes of u c             u c
buc   per-bin extremes of b + u c         b + u c
ubuc  per-bin extremes of u (b + u c)     u (b + u c)
y     per-bin extremes of the quadratic   the rescaled value g
===== =================================== ===================================================

Every range except the unsigned [0, ...) ones is widened by ``RANGE_PAD`` (relative) away
from zero, so that rounding at a range end cannot push a value just past a power of two.

Fixed-point semantics (bit exact; every arrow is one exact operation rounded once into the
output variable's format with its rounding and overflow modes, see
:mod:`fixedqmc.numerics.quantize`):

1. ``s`` is rounded into its format on the host (``Fixed.from_float``); the per-region
   constants are encoded once per call: ``s_lo`` (= s_min, sigma) in the format of ``s``,
   ``inv`` in the format of ``inv``, and the coefficients ``a, b, c`` in theirs (a table
   quantized to ``coef_format``: its words cast exactly once, so they are the table's own
   words when the formats agree; a float table: its values rounded once).  A constant that
   does not fit its format is an error (:class:`~fixedqmc.tables.two_region.TableError`).
2. Region: the exact comparison ``s < sigma`` of the two words in s's format.
3. ``ds = sub(s, s_lo)``, ``t = mul(ds, inv)``: t is rounded into its format, UQ0.F_t for
   width-only specs, and overflow-handled (saturate clamps it to [0, 1 - 2**-F_t]).  A t
   outside [0, 1 - lsb] (s at the top end of its region: s = s_max, or within half an LSB of
   t below sigma; or s outside the table) is an overflow event of t; with other t formats
   the bin step clamps it the same way and counts the event.  A negative ds (s < s_min) is
   an event of ds (unsigned).
4. Bin index by bit slicing of t's raw word ``T`` (``F_t`` fractional bits):

   * region I, ``n1 = 2**L``: ``k = T >> (F_t - L)``; the low ``F_t - L`` bits are u as a
     ``UQ0.(F_t - L)`` value;
   * region II: ``lz`` = leading zeros of the ``F_t``-bit word; segment ``j = min(lz,
     n_seg - 1)`` (``T = 0``: the last); for ``j < n_seg - 1`` the ``p = F_t - j - 1`` bits
     after the leading one, for the last segment the low ``p = F_t - n_seg + 1`` bits, are
     ``w``; ``m`` = top ``log2 n_bin`` bits of w, u = the remaining ``p - log2 n_bin`` bits;
     index ``j n_bin + m``.

   When t has fewer bits than an index needs the missing low index bits are 0 (and u = 0).
   u is then cast once into u's format: exact (no rounding) whenever u's format has at least
   as many fractional bits as t's, as for every width-only spec.
5. ``uc = mul(u, c)``, ``buc = add(b, uc)``, ``ubuc = mul(u, buc)``, ``y = add(a, ubuc)``.

Input conversion overflow (s outside its format) is counted as events of ``s``.

Float paths (``float64``, ``float32``): the same steps in that type: ``t = (s - s_lo) *
inv`` clamped to [0, 1 - ulp], ``k = floor(t n1)`` (region I), the segment from the binary
exponent of t as ``frexp`` gives it (region II; all index steps are exact), the Horner
steps.  float64 differs from :meth:`TwoRegionTable.evaluate`, which divides by the region
width instead of multiplying by its rounded inverse, by a rounding of t (a few ulp; see
``tests/tables/test_evaluate.py``).

Evaluation order: each chunk of the kernel works through blocks of 1024 elements, first
the region test of the whole block (which also lists the block's elements by region, without
branches), then the steps above for region I's elements and then for region II's, so that
no branch of the inner loops depends on the data (a shuffled mix of the two regions
otherwise mispredicts every other element).  Each element goes through exactly the
operations listed above, with its stochastic bits drawn by element index, so the results and
the overflow event counts are those of an element-by-element loop, bit for bit.  Figures of
``fixedqmc bench tables``: ``docs/benchmarks.md``.

Results do not depend on the number of threads (a fixed chunk partition, counter-based
stochastic rounding), like every kernel of :mod:`fixedqmc.numerics.kernel`.  Each new set
of fixed formats is a new compiled specialisation (about 20 s; numba caches it on disk).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fixedqmc.numerics import fixed as F
from fixedqmc.numerics.fixed import Fixed
from fixedqmc.numerics.float_format import FloatFormat
from fixedqmc.numerics.kernel import (KernelPrecision, KernelSpec, Variable, at, chunk,
                                      chunk_bounds, load, n_chunks, store)
from fixedqmc.errors import PrecisionSpecError
from fixedqmc.numerics.overflow import OverflowLog, default_log
from fixedqmc.numerics.policy import parse_precision
from fixedqmc.numerics.polynomial import KernelResult
from fixedqmc.numerics.qformat import QFormat
from fixedqmc.tables.two_region import TableError, TwoRegionTable
from fixedqmc.tables.lookup import (LOOKUP_VARIABLES, coefficient_rows, make_lookup,
                                    prepare_table)

__all__ = ["KERNEL_NAME", "RANGE_PAD", "TABLE_VARIABLES", "TableEvaluator", "evaluate_table",
           "table_kernel", "table_ranges", "table_spec", "unscale"]

KERNEL_NAME = "table"
#: Relative widening of the declared ranges (away from zero), see the module docstring.
RANGE_PAD = 2.0 ** -20

#: (name, meaning) of the kernel's variables, in id order: those of the lookup.
TABLE_VARIABLES = LOOKUP_VARIABLES
S, DS, INV, T, U, A, B, C, UC, BUC, UBUC, Y = range(len(TABLE_VARIABLES))
_ONE_BELOW = float(np.nextafter(1.0, 0.0))


# ------------------------------------------------------------------------ the kernel --
#: The lookup (fixedqmc.tables.lookup) with this kernel's variable ids; g is rescaled.
_region_two, _lookup_in, _ = make_lookup(S, unscale=False)
#: Elements per block of :func:`_table_chunk` (its index buffer stays in L1).
_BLOCK = 1024
_U0, _U1 = np.uint64(0), np.uint64(1)


@njit(cache=True, nogil=True)
def _table_chunk(ctx, k, s, src, out, region):
    """Chunk k of :func:`table_kernel`.

    Blocks of ``_BLOCK`` elements in two passes, so that no branch depends on the data: the
    region test of every element of the block, which writes ``region`` and lists the
    block's offsets by region (region I from the front of ``order``, region II from the
    back, without branches), then one loop per region over its list, with the region's
    constants and bin operation fixed.  Each element is computed by the same operations as
    if in index order (stochastic bits are drawn by element index), so the results and the
    event counts are those of an element-by-element loop.  Indices are unsigned, which
    spares numba's negative-index wraparound.

    A separate function compiled serially before the parallel loop that calls it
    (:meth:`TableEvaluator.run`): numba's parallel pipeline then only wraps a call, which
    cuts the compile time of a new format table several times over."""
    tab = prepare_table(src)
    cc = chunk(ctx, k)
    lo, hi = chunk_bounds(ctx, s.size, k)
    order = np.empty(_BLOCK, np.uint32)
    for b0 in range(lo, hi, _BLOCK):
        base = np.uint64(b0)
        first = _U0  # region I offsets fill order[:first]
        last = np.uint64(_BLOCK - 1)  # region II offsets fill order[last + 1:]
        for j in range(np.uint64(min(_BLOCK, hi - b0))):
            i = base + j
            e = at(cc, i)
            f = np.uint64(not _region_two(e, tab, load(e, s[i], S)))  # 1: region I
            order[first] = j
            order[last] = j
            first += f
            last -= _U1 - f
            region[i] = np.int8(2) - np.int8(f)
        for q in range(_U0, first):  # region I
            i = base + np.uint64(order[q])
            e = at(cc, i)
            out[i] = store(e, _lookup_in(e, tab, load(e, s[i], S), False))
        for q in range(last + _U1, np.uint64(_BLOCK)):  # region II
            i = base + np.uint64(order[q])
            e = at(cc, i)
            out[i] = store(e, _lookup_in(e, tab, load(e, s[i], S), True))


@njit(parallel=True, cache=True)
def table_kernel(ctx, s, src, out, region):
    """out[i] = g(s[i]) and region[i] (1 or 2), for every precision (module docstring).

    ``src`` is a table source without the rescaling (:mod:`fixedqmc.tables.lookup`):
    ``(s_lo, inv, abc, n1_bits, n_seg, bin_bits)``, the per-region constants
    ``s_lo = (s_min, sigma)`` and ``inv`` in the formats of s and inv, one row ``a, b, c,
    pad`` per bin (region I's ``n1`` bins then region II's) in the formats of a, b, c.
    Parallel over the fixed chunks of :mod:`fixedqmc.numerics.kernel`.
    """
    for k in prange(n_chunks(ctx, s.size)):
        _table_chunk(ctx, np.int64(k), s, src, out, region)


# -------------------------------------------------------------------- the variables --
def _pad(lo: float, hi: float) -> tuple[float, float]:
    m = max(abs(lo), abs(hi)) * RANGE_PAD
    return (lo - m if lo < 0 else lo), (hi + m if hi > 0 else hi)


def _quadratic_ranges(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> dict:
    """Exact extremes over all bins and u in [0, 1] of u c, b + u c, u (b + u c) and y."""
    zero = np.zeros_like(c)
    uc_lo, uc_hi = np.minimum(zero, c), np.maximum(zero, c)
    with np.errstate(divide="ignore", invalid="ignore"):
        vertex = np.where(c != 0, -b / (2 * np.where(c != 0, c, 1.0)), 0.0)
    vertex = np.clip(vertex, 0.0, 1.0)
    pts = np.stack([zero, zero + 1.0, vertex])  # u at the ends and the vertex
    ubuc = pts * (b + pts * c)
    return {"uc": (uc_lo.min(), uc_hi.max()), "buc": ((b + uc_lo).min(), (b + uc_hi).max()),
            "ubuc": (ubuc.min(), ubuc.max()), "y": ((a + ubuc).min(), (a + ubuc).max())}


def table_ranges(table: TwoRegionTable) -> dict:
    """Variable -> (lo, hi) of the table kernel for ``table`` (module docstring)."""
    w1, w2 = table.sigma - table.s_min, table.s_max - table.sigma
    a, b, c = (np.concatenate([x1, x2]) for x1, x2 in
               ((table.a1, table.a2), (table.b1, table.b2), (table.c1, table.c2)))
    ranges = {
        "s": (table.s_min, table.s_max),
        "ds": (0.0, max(w1, w2)),
        "inv": (min(1 / w1, 1 / w2), max(1 / w1, 1 / w2)),
        "a": (a.min(), a.max()), "b": (b.min(), b.max()), "c": (c.min(), c.max()),
        **_quadratic_ranges(a, b, c),
    }
    out = {k: _pad(float(lo), float(hi)) for k, (lo, hi) in ranges.items()}
    out["t"] = out["u"] = (0.0, _ONE_BELOW)
    return out


def table_spec(table: TwoRegionTable) -> KernelSpec:
    """The kernel spec (name ``"table"``) with ``table``'s variable ranges declared."""
    ranges = table_ranges(table)
    return KernelSpec(KERNEL_NAME, tuple(Variable(name, *ranges[name], doc)
                                         for name, doc in TABLE_VARIABLES))


# ------------------------------------------------------------------------ the driver --
class TableEvaluator:
    """A table prepared for the compiled kernel at one precision.

    The per-region constants and the coefficients are encoded once (module docstring,
    step 1); call the evaluator on arrays of s.

    Parameters
    ----------
    table : TwoRegionTable
    precision : str or PrecisionPolicy
        Precision spec (:mod:`fixedqmc.numerics.policy`), kernel name ``"table"``, e.g.
        ``"float32"``, ``"fixed:32"``, ``"table=fixed:40,table.u=fixed:UQ0.40"``.
    seed : int
        Seed of stochastic rounding (inputs, constants and kernel operations).
    ranges : dict, optional
        Variable -> (lo, hi) overriding :func:`table_ranges` (e.g. from a range profile)
        when width-only specs size the formats.
    runtime : bool
        Fixed formats read at run time: one compilation for every format (bit-identical,
        slower; :meth:`KernelPrecision.at_runtime`).
    """

    def __init__(self, table: TwoRegionTable, precision="float64", *, seed: int = 0,
                 ranges: dict | None = None, runtime: bool = False):
        if not isinstance(table, TwoRegionTable):
            raise TableError(f"table must be a TwoRegionTable, got {type(table).__name__}")
        self.table = table
        self.seed = int(seed)
        spec = table_spec(table)
        policy = parse_precision(precision)
        for kernel, var in policy.variables:
            if kernel == KERNEL_NAME and var not in spec.names:
                raise PrecisionSpecError(
                    f"precision spec names variable {kernel}.{var}; kernel {KERNEL_NAME!r} "
                    f"has: {', '.join(spec.names)}")
        self.precision: KernelPrecision = spec.resolve(policy, ranges)
        if runtime and self.precision.kind == "formats":
            self.precision = self.precision.at_runtime()
        self.layout = (np.int64(_log2(table.n1)), np.int64(table.n_seg),
                       np.int64(_log2(table.n_bin)))
        w = (table.sigma - table.s_min, table.s_max - table.sigma)
        self.s_lo = self._constant("s", [table.s_min, table.sigma], "s_lo (s_min, sigma)")
        self.inv = self._constant("inv", [1.0 / w[0], 1.0 / w[1]], "inv (1 / region width)")
        self.coefficients = tuple(self._coefficients(name) for name in "abc")
        #: the table source of the kernel (fixedqmc.tables.lookup)
        self.source = (self.s_lo, self.inv, coefficient_rows(*self.coefficients), *self.layout)

    # -- constants --------------------------------------------------------------------
    def _constant(self, var: str, values, what: str) -> np.ndarray:
        kp = self.precision
        values = np.asarray(values, np.float64)
        if kp.kind != "formats":
            return np.ascontiguousarray(values, dtype=kp.dtype)
        i = kp.spec.index(var)
        log = OverflowLog()
        if isinstance(kp.formats[i], FloatFormat):
            words = kp.encode(var, values, self.seed, log)
            self._check_fit(log, var, what, values)
            return words
        fx = Fixed.from_float(values, kp.formats[i], kp.roundings[i], "saturate", log=log,
                              seed=self.seed)
        self._check_fit(log, var, what, values)
        return np.ascontiguousarray(fx.raw)

    def _coefficients(self, name: str) -> np.ndarray:
        kp, table = self.precision, self.table
        k1, k2 = f"{name}1", f"{name}2"
        if kp.kind != "formats":
            values = np.concatenate([getattr(table, k1), getattr(table, k2)])
            return np.ascontiguousarray(values, dtype=kp.dtype)
        i = kp.spec.index(name)
        fmt, rnd = kp.formats[i], kp.roundings[i]
        log = OverflowLog()
        if isinstance(fmt, FloatFormat):  # the table's values (exact words), rounded once
            src = table.quantized
            values = (np.concatenate([src[k1].to_float(), src[k2].to_float()]) if src is not None
                      else np.concatenate([getattr(table, k1), getattr(table, k2)]))
            return self._constant(name, values, f"coefficients {name}")
        if table.quantized is not None:  # the exact words, cast once (identity if same format)
            src = table.quantized
            words = Fixed.from_raw(np.concatenate([src[k1].raw, src[k2].raw]),
                                   QFormat.parse(table.coef_format))
            fx = words if words.fmt == fmt else F.cast(words, fmt, rnd, "saturate", log=log,
                                                       seed=self.seed)
            values = words.to_float()
        else:
            values = np.concatenate([getattr(table, k1), getattr(table, k2)])
            fx = Fixed.from_float(values, fmt, rnd, "saturate", log=log, seed=self.seed)
        self._check_fit(log, name, f"coefficients {name}", values)
        return np.ascontiguousarray(fx.raw)

    def _check_fit(self, log: OverflowLog, var: str, what: str, values: np.ndarray) -> None:
        if log.total_events:
            fmt = self.precision.format_of(var)
            lo, hi = ((-fmt.max_finite, fmt.max_finite) if isinstance(fmt, FloatFormat)
                      else (fmt.min, fmt.max))
            raise TableError(
                f"{KERNEL_NAME}.{var}: the table's {what} in [{values.min():g}, "
                f"{values.max():g}] do not fit {fmt} (range {lo:g}..{hi:g}); give "
                f"{KERNEL_NAME}.{var} a format that holds them, or a width-only spec such as "
                f"fixed:32 that sizes it from the table")

    # -- evaluation -------------------------------------------------------------------
    def encode(self, s, log: OverflowLog | None = None) -> np.ndarray:
        """Kernel input for s (flattened): floats of the kernel's type or raw words of s's
        format (conversion overflow counted under ``table.s``)."""
        s = np.asarray(s, np.float64).ravel()
        if not np.isfinite(s).all():
            i = int(np.argmin(np.isfinite(s)))
            raise TableError(f"s must be finite; got {s[i]!r} at flat index {i}")
        return self.precision.encode("s", s, self.seed, log)

    def run(self, s_in: np.ndarray, out: np.ndarray, region: np.ndarray):
        """Run the compiled kernel on encoded ``s_in`` into ``out`` (rescaled g, kernel
        type) and ``region`` (int8); returns the context (holding the overflow events)."""
        ctx = self.precision.context(self.seed)
        # compile (or load) the serial chunk body first, on no elements: see _table_chunk
        _table_chunk(ctx, np.int64(0), s_in[:0], self.source, out[:0], region[:0])
        table_kernel(ctx, s_in, self.source, out, region)
        return ctx

    def __call__(self, s, *, log: OverflowLog | None = None) -> KernelResult:
        """Interpolated f at ``s`` (any shape): a :class:`KernelResult` with float64 f values
        (f's units), the rescaled g as :class:`Fixed` in y's format (fixed runs) and the
        overflow events per variable (``s`` includes the conversion of the input; all are
        also recorded in ``log``, the default log if None)."""
        shape = np.shape(s)
        kp = self.precision
        log = default_log if log is None else log
        conversion = OverflowLog()
        s_in = self.encode(s, conversion)
        log.merge(conversion)
        out = np.empty(s_in.size, kp.dtype)
        region = np.empty(s_in.size, np.int8)
        ctx = self.run(s_in, out, region)
        events = kp.report(ctx, log)
        if events:  # conversion overflow of the input counts as events of s
            events["s"] += conversion.events.get(f"{KERNEL_NAME}.s", 0)
        g = kp.decode("y", out)
        values = unscale(self.table, region, g).reshape(shape)
        fixed = (Fixed(out.reshape(shape), kp.format_of("y"))
             if kp.kind == "formats" and isinstance(kp.format_of("y"), QFormat) else None)
        return KernelResult(values, fixed, events)


@njit(parallel=True, cache=True)
def _unscale_kernel(region, g, offset, scale, is_exp, out):
    for i in prange(g.size):
        r = region[i] - 1
        big_f = offset[r] + scale[r] * g[i]
        out[i] = np.log(big_f) if is_exp[r] else big_f  # log: NaN for F < 0, -inf at 0


def unscale(table: TwoRegionTable, region: np.ndarray, g: np.ndarray) -> np.ndarray:
    """f from rescaled g per region (1 or 2): the arithmetic of
    :meth:`TwoRegionTable.unscale` (``F = offset + scale g``; ``f = F`` or ``log F``),
    compiled and parallel (numpy's and the C library's ``log`` may differ in the last bit)."""
    g = np.ascontiguousarray(g, np.float64)
    region = np.ascontiguousarray(region, np.int8)
    out = np.empty_like(g)
    _unscale_kernel(region.ravel(), g.ravel(), np.array(table.offset), np.array(table.scale),
                    np.array([t == "exp" for t in table.transform]), out.ravel())
    return out


def _log2(n: int) -> int:
    return int(n).bit_length() - 1


def evaluate_table(table: TwoRegionTable, s, precision="float64", *, seed: int = 0,
                   log: OverflowLog | None = None, runtime: bool = False) -> KernelResult:
    """Evaluate a two-region table at squared distances ``s`` with the compiled kernel.

    Parameters
    ----------
    table : TwoRegionTable
    s : array_like, any shape
        Squared distances in the table's s units (finite; values outside
        ``[s_min, s_max]`` are clamped to the table ends, counted as overflow events of
        t (and ds) in fixed runs).
    precision : str or PrecisionPolicy
        ``"float64"``, ``"float32"`` or a fixed spec for kernel ``"table"`` (module
        docstring and :mod:`fixedqmc.numerics.policy`).
    seed : int
        Seed of stochastic rounding.
    log : OverflowLog, optional
        Where overflow events are recorded (default log if None).
    runtime : bool
        Fixed formats read at run time (see :class:`TableEvaluator`).

    Returns
    -------
    KernelResult
        ``values``: f (float64, shape of s); ``fixed``: the rescaled g as a :class:`Fixed`
        in y's format (fixed runs, else None); ``events``: overflow events per variable.

    Use :class:`TableEvaluator` to encode the coefficients once for many calls.
    """
    return TableEvaluator(table, precision, seed=seed, runtime=runtime)(s, log=log)
