"""The compiled fixed-point data path of the LUT exponential (:class:`~fixedqmc.tables.lut_exp.FixedExpSpec`).

Steps 1-6 of ``FixedExpSpec`` as one compiled loop over the elements, on the exact scalar
operations of :mod:`fixedqmc.numerics.quantize`: the same operations, in the same order, with
the same operand and result formats, modes and stochastic bits as the Fixed-array operations
the steps are written in, so the words are the same bit for bit.  Two builds of it:

* :func:`run_time_kernels`: the formats are run-time arguments (``fm``), so one compilation
  (cached on disk) serves every ``FixedExpSpec``; every operation is the general one, with
  its tests on the operand values.
* :func:`specialised_kernels`: the formats, modes and table geometry are compile-time
  constants of a kernel built for one plan (kept in memory for the process).  Each
  operation is a narrow form of :mod:`fixedqmc.numerics.narrow` (int64, or two uint64
  limbs where the exact result needs up to 126 bits), the final shift by y_i is
  branch-free, and inputs and tables are read, results written, through intrinsics that
  put them in disjoint LLVM alias scopes: without that, the data-dependent table reads
  keep LLVM from proving them apart from the stores, and the loop stays scalar.  So the
  element loop vectorises (AVX-512, compiled under
  :func:`~fixedqmc.numerics.vectorise.vectorising_compile`): 2.4e8 evaluations/s against
  3.1e7 for the run-time kernel (``fixedqmc bench lutexp``).  Elements whose shift falls
  outside the int64 range are recomputed by the run-time kernel's steps.  Built when an
  evaluation is large enough to repay the compile (several seconds), for every mode but
  stochastic rounding.

Both write the same words and the same event counts (tested).  Elements are cut into
``N_CHUNKS`` fixed chunks, so neither results nor counts depend on the number of threads.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from fixedqmc.numerics import narrow
from fixedqmc.numerics import quantize as Q
from fixedqmc.numerics.modes import FLOOR, HALF_AWAY, HALF_UP, STOCHASTIC, ZERO

#: Chunks of the compiled fixed path: a fixed partition of the elements, so results and
#: event counts never depend on the number of threads.
N_CHUNKS = 64
#: Inputs smaller than this run on the calling thread (waking the thread pool costs more).
PARALLEL_MIN_SIZE = 16384
# Event counters per chunk, in data-path order (a raise-mode overflow is reported at the
# first stage that overflowed); the last column counts the result-stage operations.
(EV_X, EV_Y, EV_PRODUCT, EV_RESIDUAL, EV_CORRECTION, EV_PRODUCT_CORR, EV_RESULT,
 N_RESULT) = range(8)
# Entries of the int64 format vector of the kernel (see LutExp._fixed_plan).
(_XS, _XW, _XF, _YS, _YW, _YF, _TS, _TW, _TF, _PS, _PW, _PF, _RS, _RW, _RF, _RND, _OVF, _K, _B,
 _LINEAR, _YMIN) = range(21)
FM_SIZE = 21
#: Evaluations at least this large use the specialised kernels (their compile, about a
#: second, is then a small part of the time).
SPECIALISE_MIN_SIZE = 1 << 18
_U0 = np.uint64(0)
#: Elements per stage loop of the compiled fixed path.
_BLOCK = 256
# The unused input of the fixed kernel, typed like the used one (x words of a Fixed are
# read-only, float input is made writable), so that one compilation serves both.
NO_WORDS = np.empty(0, np.int64)
NO_WORDS.flags.writeable = False
NO_VALUES = np.empty(0, np.float64)


def reduced(raw: int, frac: int) -> tuple:
    """A non-negative constant word ``raw * 2**-frac`` with its trailing zero bits dropped:
    the same value, as an int64 word where possible (raw < 2**64)."""
    while frac > 0 and raw and raw % 2 == 0:
        raw //= 2
        frac -= 1
    return raw, frac


@njit(nogil=True, inline="always")
def _shift(a, sa, fa, n, so, wo, fo, rnd, ovf, rbits):
    """``Q.shift_raw`` (exact a 2**n, |n| <= 64, rounded once into the output format) with an
    int64 fast path: when |a| < 2**62 the exact value is ``a`` at scale ``fa - n``, rounded
    by ``Q.finish_i64`` (right shifts of 0..63 bits) or shifted left exactly (results below
    2**62); every other case is ``Q.shift_raw`` itself."""
    if (a >> 62) == 0 or (sa and (a >> 62) == -1):
        k = fa - n - fo
        if 0 <= k <= 63:
            return Q.finish_i64(a, k, so, wo, rnd, ovf, rbits)
        if -62 <= k < 0 and ((a << -k) >> -k) == a and ((a << -k) >> 62) in (0, -1):
            return Q.store_i64(a << -k, so, wo, ovf)
    return Q.shift_raw(a, sa, fa, n, so, wo, fo, rnd, ovf, rbits)


@njit(nogil=True, inline="always")
def _times_pow2(a, sa, fa, n, so, wo, fo, rnd, ovf, rbits):
    """Step 6: the word ``a`` times 2**n rounded into the result format, as
    (word, events, operations): shifts beyond 64 are chained (``a 2**64`` is an integer,
    so a chained step is exact and only the overflow mode acts), each an operation."""
    events = ops = 0
    while n > 64:
        a, e = _shift(a, sa, fa, 64, so, wo, fo, rnd, ovf, rbits)
        sa, fa = so, fo
        events += e
        ops += 1
        n -= 64
    a, e = _shift(a, sa, fa, n, so, wo, fo, rnd, ovf, rbits)
    return a, events + e, ops + 1


@njit(nogil=True, inline="always")
def _add_one(one, t, ts, tw, tf, rnd, ovf, rbits):
    """``Q.add_raw(one, ts, tf, t, False, 64, ts, tw, tf, ...)``: 1 (the word ``one`` of the
    table format) plus the UQ0.64 word t, rounded once into the table format.  Fast path
    (``tf`` in 1..61, 0 <= t < 2**62): 1 lies on the output grid and its word is even, so
    rounding 1 + t is 1 plus t rounded alone, in every mode (t >= 0: the same dropped
    fraction, the same sign, the same parity), then the sum is stored with the overflow
    mode; otherwise ``Q.add_raw`` itself."""
    if 1 <= tf <= 61 and (t >> 62) == 0:
        n, _ = Q.finish_i64(t, 64 - tf, False, 64, rnd, ovf, rbits)  # 0 <= n <= 2**tf
        return Q.store_i64(one + n, ts, tw, ovf)
    return Q.add_raw(one, ts, tf, t, False, 64, ts, tw, tf, rnd, ovf, rbits)


@njit(nogil=True, cache=True)
def _lut_fixed_chunk(c, xq, xv, fm, consts, tables, fields, seeds, out, events):
    """Chunk ``c`` of the compiled fixed path: steps 2-6 of :class:`FixedExpSpec` for the
    raw x words ``xq[lo:hi]`` (already in x's format), or steps 1-6 for the float64 values
    ``xv[lo:hi]`` if ``xq`` is empty (step 1 as ``Fixed.from_float`` performs it); events
    into ``events[c]``.

    ``fm``: formats and modes (the ``_XS`` .. ``_YMIN`` entries); ``consts``: log2(e) and
    ln(2) as (word, fractional bits) with their trailing zero bits dropped, and the word of
    1 in the table format; ``tables``: the K tables' words, one after the other;
    ``fields[k]`` = (shift, mask, offset) of field k; ``seeds[s]`` = seed + s (stage s draws
    the stochastic bits ``random_bits(seed + s, element index, 0)``, like the Fixed-array
    operations).  The steps run stage by stage over blocks of ``_BLOCK`` elements: each
    element is a chain of dependent multiplications, and a loop per stage lets the
    processor overlap independent elements.
    """
    convert = xq.size == 0
    n = xv.size if convert else xq.size
    lo = (n * c) // N_CHUNKS
    hi = (n * (c + 1)) // N_CHUNKS
    xs, xw, xf = fm[_XS] != 0, fm[_XW], fm[_XF]
    ys, yw, yf = fm[_YS] != 0, fm[_YW], fm[_YF]
    ts, tw, tf = fm[_TS] != 0, fm[_TW], fm[_TF]
    ps, pw, pf = fm[_PS] != 0, fm[_PW], fm[_PF]
    rs, rw, rf = fm[_RS] != 0, fm[_RW], fm[_RF]
    rnd, ovf = fm[_RND], fm[_OVF]
    n_k, linear, y_min = fm[_K], fm[_LINEAR] != 0, fm[_YMIN]
    stochastic = rnd == STOCHASTIC
    log2e, log2e_frac, ln2, ln2_frac, one = consts[0], consts[1], consts[2], consts[3], consts[4]
    frac_mask = np.uint64((np.int64(1) << yf) - 1)
    res_mask = np.uint64((np.int64(1) << (yf - fm[_B])) - 1)
    ev_x = ev_y = ev_p = ev_res = ev_corr = ev_pc = ev_out = n_out = 0
    yi = np.empty(_BLOCK, np.int64)
    frac = np.empty(_BLOCK, np.int64)
    p = np.empty(_BLOCK, np.int64)
    for b0 in range(lo, hi, _BLOCK):
        m = min(_BLOCK, hi - b0)
        # 1-3. (x rounded into its format,) y = x log2(e); y_i (floor), the bits y_f
        for j in range(m):
            if convert:
                rb = Q.random_bits(seeds[0], b0 + j, 0) if stochastic else _U0
                x, e = Q.from_float_raw(xv[b0 + j], xs, xw, xf, rnd, ovf, rb)
                ev_x += e
            else:
                x = xq[b0 + j]
            rb = Q.random_bits(seeds[1], b0 + j, 0) if stochastic else _U0
            y, e = Q.mul_raw(x, xs, xf, log2e, False, log2e_frac, ys, yw, yf, rnd, ovf, rb)
            ev_y += e
            if ys:
                yi[j] = y >> yf
            else:
                yi[j] = np.int64(np.uint64(y) >> np.uint64(yf))
            frac[j] = np.int64(np.uint64(y) & frac_mask)
        # 4. the product of the table entries (in the table format until the first product)
        for j in range(m):
            p[j] = tables[fields[0, 2] + ((frac[j] >> fields[0, 0]) & fields[0, 1])]
        p_s, p_f = ts, tf
        for k in range(1, n_k):
            sh, mask, offset = fields[k, 0], fields[k, 1], fields[k, 2]
            for j in range(m):
                entry = tables[offset + ((frac[j] >> sh) & mask)]
                rb = Q.random_bits(seeds[1 + k], b0 + j, 0) if stochastic else _U0
                p[j], e = Q.mul_raw(p[j], p_s, p_f, entry, ts, tf, ps, pw, pf, rnd, ovf, rb)
                ev_p += e
            p_s, p_f = ps, pf
        # 5. linear residual correction: p (1 + r ln2), r the bits of y_f below the fields
        if linear:
            for j in range(m):
                r = np.int64(np.uint64(frac[j]) & res_mask)  # a UQ0.F_y word
                rb = Q.random_bits(seeds[20], b0 + j, 0) if stochastic else _U0
                t, e = Q.mul_raw(r, False, yf, ln2, False, ln2_frac, False, 64, 64, rnd, ovf,
                                 rb)
                ev_res += e
                rb = Q.random_bits(seeds[21], b0 + j, 0) if stochastic else _U0
                corr, e = _add_one(one, t, ts, tw, tf, rnd, ovf, rb)
                ev_corr += e
                rb = Q.random_bits(seeds[22], b0 + j, 0) if stochastic else _U0
                p[j], e = Q.mul_raw(p[j], p_s, p_f, corr, ts, tf, ps, pw, pf, rnd, ovf, rb)
                ev_pc += e
            p_s, p_f = ps, pf
        # 6. result = p 2**y_i, or exactly 0 below the underflow exponent
        for j in range(m):
            if yi[j] < y_min:
                out[b0 + j] = 0
                continue
            rb = Q.random_bits(seeds[30], b0 + j, 0) if stochastic else _U0
            out[b0 + j], e, ops = _times_pow2(p[j], p_s, p_f, yi[j], rs, rw, rf, rnd, ovf, rb)
            ev_out += e
            n_out += ops
    events[c, EV_X] = ev_x
    events[c, EV_Y] = ev_y
    events[c, EV_PRODUCT] = ev_p
    events[c, EV_RESIDUAL] = ev_res
    events[c, EV_CORRECTION] = ev_corr
    events[c, EV_PRODUCT_CORR] = ev_pc
    events[c, EV_RESULT] = ev_out
    events[c, N_RESULT] = n_out


@njit(parallel=True, cache=True)
def _lut_fixed_parallel(xq, xv, fm, consts, tables, fields, seeds, out, events):
    """The compiled fixed path over all elements, one chunk per parallel iteration."""
    for c in prange(N_CHUNKS):
        _lut_fixed_chunk(np.int64(c), xq, xv, fm, consts, tables, fields, seeds, out, events)


@njit(nogil=True, cache=True)
def _lut_fixed_serial(xq, xv, fm, consts, tables, fields, seeds, out, events):
    """Its serial twin for small inputs (the same chunks, so the same results and counts)."""
    for c in range(N_CHUNKS):
        _lut_fixed_chunk(np.int64(c), xq, xv, fm, consts, tables, fields, seeds, out, events)



def format_vector(formats: dict, rnd: int, ovf: int, n_lookups: int, total_bits: int,
                  linear: bool, y_min: int) -> np.ndarray:
    """The int64 format vector ``fm`` of the kernels: ``formats`` maps "x", "y", "table",
    "product", "result" to QFormats; modes by code; table geometry; underflow exponent."""
    fm = np.zeros(FM_SIZE, np.int64)
    for (s_i, w_i, f_i), name in (((_XS, _XW, _XF), "x"), ((_YS, _YW, _YF), "y"),
                                  ((_TS, _TW, _TF), "table"), ((_PS, _PW, _PF), "product"),
                                  ((_RS, _RW, _RF), "result")):
        fmt = formats[name]
        fm[s_i], fm[w_i], fm[f_i] = int(fmt.signed), fmt.word_bits, fmt.frac_bits
    fm[_RND], fm[_OVF], fm[_K], fm[_B] = rnd, ovf, n_lookups, total_bits
    fm[_LINEAR], fm[_YMIN] = int(linear), y_min
    return fm


def kernels(fm: np.ndarray, consts: np.ndarray, fields: np.ndarray, n: int) -> tuple:
    """The (parallel, serial) kernels for ``n`` elements of the plan (fm, consts, fields):
    the specialised pair if ``n >= SPECIALISE_MIN_SIZE`` and the plan has one, else the
    run-time-format pair.  Both take the same arguments and write the same words."""
    if n >= SPECIALISE_MIN_SIZE:
        pair = specialised_kernels(tuple(int(v) for v in fm), tuple(int(v) for v in consts),
                                   tuple(tuple(int(v) for v in row) for row in fields))
        if pair is not None:
            return pair
    return _lut_fixed_parallel, _lut_fixed_serial


def _scopes(module):
    """Two alias scopes (reads, writes) of one domain: metadata lists that tell LLVM a read
    of the inputs or tables never aliases a write of the results."""
    dom = module.add_metadata([ir.MetaDataString(module, "fixedqmc.lut.domain")])
    reads = module.add_metadata([ir.MetaDataString(module, "fixedqmc.lut.reads"), dom])
    writes = module.add_metadata([ir.MetaDataString(module, "fixedqmc.lut.writes"), dom])
    return module.add_metadata([reads]), module.add_metadata([writes])


@intrinsic
def _peek(typingctx, address, index):
    """The int64 at ``address + 8 index``, a read in the reads scope."""
    def codegen(context, builder, signature, args):
        reads, writes = _scopes(builder.module)
        ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
        v = builder.load(builder.gep(ptr, [args[1]]))
        v.set_metadata("alias.scope", reads)
        v.set_metadata("noalias", writes)
        return v
    return types.int64(types.int64, types.int64), codegen


@intrinsic
def _poke(typingctx, address, index, value):
    """Store the int64 ``value`` at ``address + 8 index``, a write in the writes scope."""
    def codegen(context, builder, signature, args):
        reads, writes = _scopes(builder.module)
        ptr = builder.inttoptr(args[0], ir.IntType(64).as_pointer())
        st = builder.store(args[2], builder.gep(ptr, [args[1]]))
        st.set_metadata("alias.scope", writes)
        st.set_metadata("noalias", reads)
        return context.get_dummy_value()
    return types.void(types.int64, types.int64, types.int64), codegen


#: Stands for an operation a plan does not perform (no second table, no residual).
_NO_OP = njit(lambda ra, rb, rbits: (ra, np.int64(0)), nogil=True, inline="always")


def _variable_round_shift(rnd: int):
    """``(x, r) -> round(x 2**-r)`` for int64 x, |x| <= 2**60, 0 <= r <= 62 (r a run-time
    value), deterministic mode rnd: the bias rule of :func:`quantize.finish_i64`."""
    def impl(x, r):
        m = (np.int64(1) << r) - 1
        half = m - (m >> 1)  # 2**(r-1), 0 for r = 0
        if rnd == FLOOR:
            bias = np.int64(0)
        elif rnd == ZERO:
            bias = m if x < 0 else np.int64(0)
        elif rnd == HALF_UP:
            bias = half
        elif rnd == HALF_AWAY:
            bias = half - (x < 0) if r > 0 else np.int64(0)
        else:
            bias = half - 1 + ((x >> r) & 1) if r > 0 else np.int64(0)
        return (x + bias) >> r
    return njit(impl, nogil=True, inline="always")


@lru_cache(maxsize=16)
def specialised_kernels(fm: tuple, consts: tuple, fields: tuple):
    """The (parallel, serial) kernels with the plan's formats, modes and geometry compiled
    in (see the module docstring), or None for stochastic rounding or a plan some operation
    of which has no narrow form.  Arguments as those of the run-time kernels (which the
    specialised ones ignore but for the input, tables, seeds and outputs); tuples, so that
    the kernels are built once per plan."""
    (xs, xw, xf, ys, yw, yf, ts, tw, tf, ps, pw, pf, rs, rw, rf, rnd, ovf, n_k, n_bits,
     linear, y_min) = fm
    if rnd == STOCHASTIC:
        return None
    xs, ys, ts, ps, rs, linear = map(bool, (xs, ys, ts, ps, rs, linear))
    log2e, log2e_frac, ln2, ln2_frac, one = (v % 2**64 for v in consts)
    fx, ft, fp = (xs, xw, xf), (ts, tw, tf), (ps, pw, pf)
    out_p = (ps, pw, pf, rnd, ovf)
    unsigned_t64 = (False, 64, 64)
    def binary(*args):
        return narrow.binary(*args, vector=True)
    mul_y = binary(narrow.MUL, fx, (False, max(log2e.bit_length(), 1), log2e_frac),
                   (ys, yw, yf, rnd, ovf))
    mul_first = binary(narrow.MUL, ft, ft, out_p) if n_k > 1 else _NO_OP
    mul_next = binary(narrow.MUL, fp, ft, out_p) if n_k > 2 else _NO_OP
    f_last = fp if n_k > 1 else ft  # format of p before the correction
    if linear:
        mul_res = binary(narrow.MUL, (False, yf - n_bits, yf),
                         (False, max(ln2.bit_length(), 1), ln2_frac), (*unsigned_t64, rnd, ovf))
        add_one = binary(narrow.ADD, ft, unsigned_t64, (ts, tw, tf, rnd, ovf))
        mul_corr = binary(narrow.MUL, f_last, ft, out_p)
    else:
        mul_res = add_one = mul_corr = _NO_OP
    if any(op is None for op in (mul_y, mul_first, mul_next, mul_res, add_one, mul_corr)):
        return None
    p_fmt = fp if (n_k > 1 or linear) else ft  # the format of p in step 6
    p_s, p_f = p_fmt[0], p_fmt[2]
    # step 6 for |p| <= 2**e_p: a right shift by r <= e_p + 2 gives the rounding of every
    # larger shift too (0, or -1 for floor of p < 0), a left shift by up to 62 - e_p is exact
    e_p = narrow.magnitude_bits(p_s, p_fmt[1])
    shift0 = p_f - rf  # the right shift for y_i = 0
    right_max, left_max = e_p + 2, 62 - e_p
    fast_shift = e_p <= 60
    _round_right = _variable_round_shift(rnd)
    # the constants as int64 words (an unsigned word >= 2**63 by its bit pattern)
    L, LN2, ONE = (np.int64(v - (1 << 64) if v >> 63 else v) for v in (log2e, ln2, one))
    frac_mask = np.uint64((1 << yf) - 1)
    res_mask = np.uint64((1 << (yf - n_bits)) - 1)
    fld = np.array(fields, np.int64)
    (sh0, m0, o0), (sh1, m1, o1), (sh2, m2, o2) = (
        tuple(fld[k]) if k < n_k else (0, 0, 0) for k in range(3))
    u_yf = np.uint64(yf)
    zero = np.uint64(0)

    @njit(nogil=True, inline="always")
    def element(x, tp):
        """Steps 2-5 for one x word (tables at address tp): (y_i, p, events of y, products, residual, correction,
        corrected product)."""
        y, ev_y = mul_y(x, L, zero)
        yi = (y >> yf) if ys else np.int64(np.uint64(y) >> u_yf)
        f = np.int64(np.uint64(y) & frac_mask)
        p = _peek(tp, o0 + ((f >> sh0) & m0))
        ev_p = ev_res = ev_corr = ev_pc = np.int64(0)
        if n_k > 1:
            p, e = mul_first(p, _peek(tp, o1 + ((f >> sh1) & m1)), zero)
            ev_p += e
        if n_k > 2:
            p, e = mul_next(p, _peek(tp, o2 + ((f >> sh2) & m2)), zero)
            ev_p += e
        for k in range(3, n_k):
            p, e = mul_next(p, _peek(tp, fld[k, 2] + ((f >> fld[k, 0]) & fld[k, 1])), zero)
            ev_p += e
        if linear:
            t, ev_res = mul_res(np.int64(np.uint64(f) & res_mask), LN2, zero)
            corr, ev_corr = add_one(ONE, t, zero)
            p, ev_pc = mul_corr(p, corr, zero)
        return yi, p, ev_y, ev_p, ev_res, ev_corr, ev_pc

    @njit(nogil=True)
    def chunk(c, xq, xv, tables, out, events):
        convert = xq.size == 0
        n = xv.size if convert else xq.size
        lo = (n * c) // N_CHUNKS
        hi = (n * (c + 1)) // N_CHUNKS
        ev_x = ev_y = ev_p = ev_res = ev_corr = ev_pc = ev_out = n_out = 0
        xb = np.empty(_BLOCK, np.int64)
        tp, po = tables.ctypes.data, out.ctypes.data
        for b0 in range(lo, hi, _BLOCK):
            m = min(_BLOCK, hi - b0)
            if convert:
                for j in range(m):
                    xb[j], e = Q.from_float_raw(xv[b0 + j], xs, xw, xf, rnd, ovf, zero)
                    ev_x += e
                px, off = xb.ctypes.data, 0
            else:
                px, off = xq.ctypes.data, b0
            n_slow = 0
            for j in range(m):  # no branch, table reads and stores in disjoint scopes
                yi, p, e1, e2, e3, e4, e5 = element(_peek(px, off + j), tp)
                ev_y += e1
                ev_p += e2
                ev_res += e3
                ev_corr += e4
                ev_pc += e5
                live = yi >= y_min
                fast = fast_shift and yi <= 64 and yi <= left_max + shift0
                r = min(max(shift0 - yi, 0), right_max)
                ln = min(max(yi - shift0, 0), left_max)
                a, e = Q.store_i64(_round_right(p, r) << ln, rs, rw, ovf)
                _poke(po, b0 + j, a if live else np.int64(0))
                ev_out += e if (live and fast) else 0
                n_out += np.int64(live)
                n_slow += np.int64(live and not fast)
            if n_slow:
                for j in range(m):  # p 2**y_i beyond the int64 shift: recomputed
                    yi, p, _, _, _, _, _ = element(_peek(px, off + j), tp)
                    if yi < y_min or (fast_shift and yi <= 64 and yi <= left_max + shift0):
                        continue
                    out[b0 + j], e, ops = _times_pow2(p, p_s, p_f, yi, rs, rw, rf, rnd, ovf,
                                                      zero)
                    ev_out += e
                    n_out += ops - 1
        for col, v in ((EV_X, ev_x), (EV_Y, ev_y), (EV_PRODUCT, ev_p), (EV_RESIDUAL, ev_res),
                       (EV_CORRECTION, ev_corr), (EV_PRODUCT_CORR, ev_pc), (EV_RESULT, ev_out),
                       (N_RESULT, n_out)):
            events[c, col] = v

    @njit(parallel=True)
    def parallel(xq, xv, fm, consts, tables, fields, seeds, out, events):
        for c in prange(N_CHUNKS):
            chunk(np.int64(c), xq, xv, tables, out, events)

    @njit(nogil=True)
    def serial(xq, xv, fm, consts, tables, fields, seeds, out, events):
        for c in range(N_CHUNKS):
            chunk(np.int64(c), xq, xv, tables, out, events)
    return parallel, serial
