"""Fixed-point arrays and their bit-exact arithmetic.

A :class:`Fixed` is a numpy int64 array of raw two's-complement words plus a
:class:`~fixedqmc.numerics.qformat.QFormat`; the value of word ``w`` is ``w * 2**-frac_bits``.
An unsigned 64-bit word is stored as its bit pattern.

Every operation takes an explicit result format ``out``: operands of any formats are aligned
exactly, the exact result is formed (up to 192 bits, see :mod:`wideint`), then rounded and
overflow-handled once into ``out`` (see :mod:`modes`).  Overflow events are counted under the
result's variable ``name`` in an :class:`~fixedqmc.numerics.overflow.OverflowLog`.

Defaults: ``rounding="half_even"``, ``overflow="saturate"``.  Stochastic rounding draws its
bits from a hash of (``seed``, element index), so it is reproducible and thread-count free.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from fixedqmc.errors import FixedOverflowError, FixedQMCError, FormatError
from fixedqmc.numerics import quantize as Q
from fixedqmc.numerics.modes import RAISE, STOCHASTIC, overflow_code, rounding_code
from fixedqmc.numerics.overflow import OverflowLog, default_log
from fixedqmc.numerics.qformat import QFormat

_PAR = dict(parallel=True, cache=True, nogil=True)
_SER = dict(cache=True, nogil=True)

#: Arrays smaller than this run on one thread: waking the thread pool costs more.
PARALLEL_MIN_SIZE = 16384


class _Kernel:
    """A kernel compiled twice, parallel and serial; the call picks one by problem size.
    Both give identical results (element results never depend on the schedule)."""

    def __init__(self, fn):
        self.parallel = njit(**_PAR)(fn)
        self.serial = njit(**_SER)(fn)

    def __call__(self, size, *args):
        return (self.parallel if size >= PARALLEL_MIN_SIZE else self.serial)(*args)

_ADD, _SUB, _MUL = 0, 1, 2
_CAST, _NEG, _SHIFT = 0, 1, 2


# --------------------------------------------------------------------------- kernels --
@_Kernel
def _binary_kernel(op, ra, sa, fa, rb, sb, fb, so, wo, fo, rnd, ovf, seed, out, flags):
    events = 0
    for i in prange(ra.size):
        rbits = Q.random_bits(seed, i, 0) if rnd == STOCHASTIC else np.uint64(0)
        if op == _ADD:
            r, e = Q.add_raw(ra[i], sa, fa, rb[i], sb, fb, so, wo, fo, rnd, ovf, rbits)
        elif op == _SUB:
            r, e = Q.sub_raw(ra[i], sa, fa, rb[i], sb, fb, so, wo, fo, rnd, ovf, rbits)
        else:
            r, e = Q.mul_raw(ra[i], sa, fa, rb[i], sb, fb, so, wo, fo, rnd, ovf, rbits)
        out[i] = r
        events += e
        if flags.size:
            flags[i] = e
    return events


@_Kernel
def _unary_kernel(op, ra, sa, fa, n, so, wo, fo, rnd, ovf, seed, out, flags):
    events = 0
    for i in prange(ra.size):
        rbits = Q.random_bits(seed, i, 0) if rnd == STOCHASTIC else np.uint64(0)
        if op == _CAST:
            r, e = Q.cast_raw(ra[i], sa, fa, so, wo, fo, rnd, ovf, rbits)
        elif op == _NEG:
            r, e = Q.neg_raw(ra[i], sa, fa, so, wo, fo, rnd, ovf, rbits)
        else:
            r, e = Q.shift_raw(ra[i], sa, fa, n, so, wo, fo, rnd, ovf, rbits)
        out[i] = r
        events += e
        if flags.size:
            flags[i] = e
    return events


@_Kernel
def _from_float_kernel(x, so, wo, fo, rnd, ovf, seed, out, flags):
    events = 0
    for i in prange(x.size):
        rbits = Q.random_bits(seed, i, 0) if rnd == STOCHASTIC else np.uint64(0)
        r, e = Q.from_float_raw(x[i], so, wo, fo, rnd, ovf, rbits)
        out[i] = r
        events += e
        if flags.size:
            flags[i] = e
    return events


@_Kernel
def _compare_kernel(ra, sa, fa, rb, sb, fb, out):
    for i in prange(ra.size):
        out[i] = Q.compare_raw(ra[i], sa, fa, rb[i], sb, fb)


@_Kernel
def _to_float_kernel(ra, signed, frac, out):
    scale = 2.0 ** -frac
    for i in prange(ra.size):
        if signed:
            v = np.float64(ra[i])
        else:
            v = np.float64(np.uint64(ra[i]))
        out[i] = v * scale


@_Kernel
def _accumulate_kernel(ra, sa, fa, so, wo, fo, rnd, ovf, seed, init, running, out, flags):
    """Sequential accumulation along axis 1 of ``ra`` (rows in parallel): acc <- acc + a,
    rounded and overflow-handled into the accumulator format at every step."""
    rows, n = ra.shape
    events = 0
    for row in prange(rows):
        acc = init
        for j in range(n):
            idx = row * n + j
            rbits = Q.random_bits(seed, idx, 0) if rnd == STOCHASTIC else np.uint64(0)
            acc, e = Q.add_raw(acc, so, fo, ra[row, j], sa, fa, so, wo, fo, rnd, ovf, rbits)
            events += e
            if flags.size:
                flags[idx] = e
            if running:
                out[row, j] = acc
        if not running:
            out[row, 0] = acc
    return events


# ------------------------------------------------------------------------- the array --
class Fixed:
    """An array of fixed-point words in one :class:`QFormat`.

    Build one with :meth:`from_float` or :meth:`from_raw`; read it back with :attr:`raw`
    (int64 words) and :meth:`to_float`.
    """

    __slots__ = ("_raw", "fmt")
    __array_priority__ = 100
    __hash__ = None  # elementwise comparisons, like numpy arrays

    def __init__(self, raw: np.ndarray, fmt: QFormat):
        # internal: raw must already be int64 words valid for fmt
        self._raw = raw
        self._raw.flags.writeable = False
        self.fmt = fmt

    # -- construction -------------------------------------------------------------------
    @classmethod
    def from_float(cls, x, fmt, rounding="half_even", overflow="saturate", *,
                   name: str = "from_float", log: OverflowLog | None = None,
                   seed: int = 0) -> "Fixed":
        """Round real values (float64 or float32, any shape) into ``fmt``.

        NaN and infinities are rejected with a :class:`FixedQMCError`.
        """
        fmt = QFormat.parse(fmt)
        arr = np.asarray(x)
        if arr.dtype.kind not in "fiub":
            raise FixedQMCError(f"from_float needs real numbers, got dtype {arr.dtype}")
        if arr.dtype.kind in "iu" and arr.size and np.max(np.abs(arr.astype(np.float64))) >= 2**53:
            raise FixedQMCError("from_float: integers beyond 2**53 are not exact as floats; "
                                "use Fixed.from_raw for exact words")
        arr = arr.astype(np.float64)
        bad = ~np.isfinite(arr)
        if bad.any():
            first = np.argwhere(bad)[0]
            raise FixedQMCError(
                f"from_float: value {float(arr[tuple(first)])} at index "
                f"{tuple(int(i) for i in first)} is not finite; only finite numbers can be converted"
            )
        flat = np.ascontiguousarray(arr).ravel()
        rnd, ovf = rounding_code(rounding), overflow_code(overflow)
        out = np.empty(flat.size, np.int64)
        flags = np.zeros(flat.size if ovf == RAISE else 0, np.uint8)
        ev = _from_float_kernel(flat.size, flat, fmt.signed, fmt.word_bits, fmt.frac_bits, rnd, ovf,
                                np.uint64(seed), out, flags)
        _report(ev, flags, name, fmt, overflow, flat.size, log, lambda i: flat[i])
        return cls(out.reshape(arr.shape), fmt)

    @classmethod
    def from_raw(cls, raw, fmt) -> "Fixed":
        """Wrap integer words; each must lie in the format's raw range (an unsigned 64-bit
        word may be given as uint64 or as its int64 bit pattern)."""
        fmt = QFormat.parse(fmt)
        arr = np.asarray(raw)
        if arr.dtype == object:
            ints = arr.ravel().tolist()
            for i, v in enumerate(ints):
                if not isinstance(v, (int, np.integer)) or not fmt.min_raw <= int(v) <= fmt.max_raw:
                    raise FormatError(f"raw word {v!r} at flat index {i} is outside {fmt} "
                                      f"(allowed {fmt.min_raw}..{fmt.max_raw})")
            words = np.array([int(v) - (1 << 64) if int(v) > 2**63 - 1 else int(v)
                              for v in ints], np.int64).reshape(arr.shape)
            return cls(words, fmt)
        if arr.dtype.kind not in "iu":
            raise FormatError(f"raw words must be integers, got dtype {arr.dtype}")
        if arr.dtype == np.uint64:
            words = arr.view(np.int64) if arr.flags.c_contiguous else arr.astype(np.int64)
            check = arr
        else:
            words = arr.astype(np.int64)
            check = words
            if not fmt.signed and fmt.word_bits == 64:
                check = words.view(np.uint64)
        if check.size:
            lo, hi = int(check.min()), int(check.max())
            if lo < fmt.min_raw or hi > fmt.max_raw:
                bad = lo if lo < fmt.min_raw else hi
                raise FormatError(f"raw word {bad} is outside {fmt} "
                                  f"(allowed {fmt.min_raw}..{fmt.max_raw})")
        return cls(np.array(words, np.int64, copy=True), fmt)

    # -- access -------------------------------------------------------------------------
    @property
    def raw(self) -> np.ndarray:
        """The int64 words (read-only view)."""
        return self._raw

    @property
    def shape(self) -> tuple:
        return self._raw.shape

    @property
    def size(self) -> int:
        return self._raw.size

    def __len__(self) -> int:
        return len(self._raw)

    def __getitem__(self, key) -> "Fixed":
        return Fixed(np.array(self._raw[key], np.int64, copy=True).reshape(np.shape(self._raw[key])), self.fmt)

    def reshape(self, *shape) -> "Fixed":
        return Fixed(self._raw.reshape(*shape).copy(), self.fmt)

    def bits(self) -> np.ndarray:
        """Words as unsigned bit patterns of ``word_bits`` bits (uint64), e.g. for ROM files."""
        u = self._raw.astype(np.int64).view(np.uint64)
        if self.fmt.word_bits < 64:
            u = u & np.uint64((1 << self.fmt.word_bits) - 1)
        return u

    def to_ints(self) -> list:
        """Words as exact Python integers (flattened)."""
        if not self.fmt.signed and self.fmt.word_bits == 64:
            return [int(v) for v in self._raw.ravel().view(np.uint64)]
        return [int(v) for v in self._raw.ravel()]

    def to_float(self) -> np.ndarray:
        """Values as float64 (correctly rounded for words wider than 53 bits)."""
        flat = np.ascontiguousarray(self._raw).ravel()
        out = np.empty(flat.size, np.float64)
        _to_float_kernel(flat.size, flat, self.fmt.signed, self.fmt.frac_bits, out)
        return out.reshape(self.shape)

    def __array__(self, dtype=None, copy=None):
        v = self.to_float()
        return v if dtype is None else v.astype(dtype)

    def __repr__(self) -> str:
        return f"Fixed({np.array2string(self.to_float(), threshold=8)}, fmt={self.fmt})"

    # -- comparisons (exact) ------------------------------------------------------------
    def _cmp(self, other) -> np.ndarray:
        return compare(self, other)

    def __lt__(self, other):
        return self._cmp(other) < 0

    def __le__(self, other):
        return self._cmp(other) <= 0

    def __gt__(self, other):
        return self._cmp(other) > 0

    def __ge__(self, other):
        return self._cmp(other) >= 0

    def __eq__(self, other):
        return self._cmp(other) == 0

    def __ne__(self, other):
        return self._cmp(other) != 0


# ----------------------------------------------------------------------- operations --
def _report(events, flags, name, fmt, overflow, n, log, value_at) -> None:
    (default_log if log is None else log).record(name, events, n, str(fmt), overflow)
    if events and flags.size:
        i = int(np.argmax(flags))
        raise FixedOverflowError(
            f"{events} result(s) of {name!r} do not fit {fmt} (range {fmt.min}..{fmt.max}) "
            f"under overflow='raise'; first at flat index {i} (exact value {value_at(i)!r}). "
            "Widen the format or use overflow='saturate' or 'wrap'."
        )


def _as_fixed(x, what: str) -> Fixed:
    if not isinstance(x, Fixed):
        raise FixedQMCError(f"{what} must be a Fixed array, got {type(x).__name__}; "
                            "convert with Fixed.from_float(x, fmt)")
    return x


def _binary(op, opname, a, b, out, rounding, overflow, name, log, seed) -> Fixed:
    a, b = _as_fixed(a, "first operand"), _as_fixed(b, "second operand")
    fmt = QFormat.parse(out)
    rnd, ovf = rounding_code(rounding), overflow_code(overflow)
    ra, rb = np.broadcast_arrays(a.raw, b.raw)
    shape = ra.shape
    ra, rb = np.ascontiguousarray(ra).ravel(), np.ascontiguousarray(rb).ravel()
    res = np.empty(ra.size, np.int64)
    flags = np.zeros(ra.size if ovf == RAISE else 0, np.uint8)
    ev = _binary_kernel(ra.size, op, ra, a.fmt.signed, a.fmt.frac_bits, rb, b.fmt.signed, b.fmt.frac_bits,
                        fmt.signed, fmt.word_bits, fmt.frac_bits, rnd, ovf, np.uint64(seed), res, flags)
    sym = {"add": "+", "sub": "-", "mul": "*"}[opname]
    _report(ev, flags, name or opname, fmt, overflow, ra.size, log,
            lambda i: f"{Fixed.from_raw(ra[i:i+1], a.fmt).to_float()[0]!r} {sym} "
                      f"{Fixed.from_raw(rb[i:i+1], b.fmt).to_float()[0]!r}")
    return Fixed(res.reshape(shape), fmt)


def add(a: Fixed, b: Fixed, out, rounding="half_even", overflow="saturate", *,
        name: str | None = None, log: OverflowLog | None = None, seed: int = 0) -> Fixed:
    """Exact ``a + b`` (broadcast), rounded once into format ``out``."""
    return _binary(_ADD, "add", a, b, out, rounding, overflow, name, log, seed)


def sub(a: Fixed, b: Fixed, out, rounding="half_even", overflow="saturate", *,
        name: str | None = None, log: OverflowLog | None = None, seed: int = 0) -> Fixed:
    """Exact ``a - b`` (broadcast), rounded once into format ``out``."""
    return _binary(_SUB, "sub", a, b, out, rounding, overflow, name, log, seed)


def mul(a: Fixed, b: Fixed, out, rounding="half_even", overflow="saturate", *,
        name: str | None = None, log: OverflowLog | None = None, seed: int = 0) -> Fixed:
    """Exact ``a * b`` (up to a 128-bit product, broadcast), rounded once into ``out``."""
    return _binary(_MUL, "mul", a, b, out, rounding, overflow, name, log, seed)


def _unary(op, opname, a, n, out, rounding, overflow, name, log, seed) -> Fixed:
    a = _as_fixed(a, "operand")
    fmt = a.fmt if out is None else QFormat.parse(out)
    rnd, ovf = rounding_code(rounding), overflow_code(overflow)
    ra = np.ascontiguousarray(a.raw).ravel()
    res = np.empty(ra.size, np.int64)
    flags = np.zeros(ra.size if ovf == RAISE else 0, np.uint8)
    ev = _unary_kernel(ra.size, op, ra, a.fmt.signed, a.fmt.frac_bits, n, fmt.signed, fmt.word_bits,
                       fmt.frac_bits, rnd, ovf, np.uint64(seed), res, flags)
    _report(ev, flags, name or opname, fmt, overflow, ra.size, log,
            lambda i: Fixed.from_raw(ra[i:i+1], a.fmt).to_float()[0])
    return Fixed(res.reshape(a.shape), fmt)


def cast(a: Fixed, out, rounding="half_even", overflow="saturate", *,
         name: str | None = None, log: OverflowLog | None = None, seed: int = 0) -> Fixed:
    """Convert ``a`` to format ``out`` (one rounding, one overflow step)."""
    return _unary(_CAST, "cast", a, 0, out, rounding, overflow, name, log, seed)


def neg(a: Fixed, out=None, rounding="half_even", overflow="saturate", *,
        name: str | None = None, log: OverflowLog | None = None, seed: int = 0) -> Fixed:
    """Exact ``-a`` into ``out`` (default: a's format, where -min saturates or wraps)."""
    return _unary(_NEG, "neg", a, 0, out, rounding, overflow, name, log, seed)


def shift(a: Fixed, n: int, out=None, rounding="half_even", overflow="saturate", *,
          name: str | None = None, log: OverflowLog | None = None, seed: int = 0) -> Fixed:
    """Exact ``a * 2**n`` (n > 0 left, n < 0 right, |n| <= 64) into ``out`` (default a's
    format, so the word bits move and the low or high bits are rounded or overflow)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or abs(int(n)) > 64:
        raise FixedQMCError(f"shift amount must be an integer with |n| <= 64, got {n!r}")
    return _unary(_SHIFT, "shift", a, int(n), out, rounding, overflow, name, log, seed)


def compare(a: Fixed, b: Fixed) -> np.ndarray:
    """Exact elementwise sign of ``a - b`` (int8: -1, 0, 1), any formats, broadcast."""
    a, b = _as_fixed(a, "first operand"), _as_fixed(b, "second operand")
    ra, rb = np.broadcast_arrays(a.raw, b.raw)
    shape = ra.shape
    ra, rb = np.ascontiguousarray(ra).ravel(), np.ascontiguousarray(rb).ravel()
    res = np.empty(ra.size, np.int8)
    _compare_kernel(ra.size, ra, a.fmt.signed, a.fmt.frac_bits, rb, b.fmt.signed, b.fmt.frac_bits, res)
    return res.reshape(shape)


def _accumulate(a, acc, axis, running, initial, rounding, overflow, name, log, seed):
    a = _as_fixed(a, "operand")
    fmt = QFormat.parse(acc)
    rnd, ovf = rounding_code(rounding), overflow_code(overflow)
    if initial is None:
        init = 0
    else:
        init_fx = _as_fixed(initial, "initial")
        if init_fx.size != 1 or init_fx.fmt != fmt:
            raise FixedQMCError(f"initial must be a single value in the accumulator format {fmt}")
        init = int(init_fx.raw.ravel()[0])
    raw = a.raw
    if axis is None:
        raw = raw.reshape(1, -1)
        moved_shape = (raw.shape[1],)
    else:
        if not -raw.ndim <= axis < raw.ndim:
            raise FixedQMCError(f"axis {axis} is out of range for an array of {raw.ndim} dimension(s)")
        raw = np.moveaxis(raw, axis, -1)
        moved_shape = raw.shape
        raw = raw.reshape(-1, raw.shape[-1] if raw.ndim else 1)
    raw = np.ascontiguousarray(raw)
    rows, n = raw.shape
    res = np.empty((rows, n if running else 1), np.int64)
    if n == 0:
        res[:] = init
    flags = np.zeros(raw.size if ovf == RAISE else 0, np.uint8)
    ev = _accumulate_kernel(raw.size, raw, a.fmt.signed, a.fmt.frac_bits, fmt.signed, fmt.word_bits,
                            fmt.frac_bits, rnd, ovf, np.uint64(seed), np.int64(init), running,
                            res, flags)
    _report(ev, flags, name or ("accumulate" if running else "sum"), fmt, overflow, raw.size,
            log, lambda i: f"partial sum at element {i}")
    if running:
        out = res.reshape(moved_shape)
        if axis is not None:
            out = np.moveaxis(out, -1, axis)
        return Fixed(np.ascontiguousarray(out), fmt)
    out = res.reshape(moved_shape[:-1]) if axis is not None else res.reshape(())
    return Fixed(out.copy(order="C"), fmt)  # (ascontiguousarray would make 0-d arrays 1-d)


def fsum(a: Fixed, acc, axis: int | None = None, rounding="half_even", overflow="saturate", *,
         initial: Fixed | None = None, name: str | None = None,
         log: OverflowLog | None = None, seed: int = 0) -> Fixed:
    """Sum into an accumulator of format ``acc``, in index order along ``axis`` (all
    elements if None): ``acc <- acc + a[j]`` with rounding and overflow at every step, as a
    hardware accumulator does.  The result is exact whenever acc holds every partial sum."""
    return _accumulate(a, acc, axis, False, initial, rounding, overflow, name, log, seed)


def accumulate(a: Fixed, acc, axis: int | None = None, rounding="half_even", overflow="saturate",
               *, initial: Fixed | None = None, name: str | None = None,
               log: OverflowLog | None = None, seed: int = 0) -> Fixed:
    """Running sums (like ``np.cumsum``) in accumulator format ``acc``; see :func:`fsum`."""
    return _accumulate(a, acc, axis, True, initial, rounding, overflow, name, log, seed)
