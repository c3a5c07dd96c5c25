"""Accumulator arrays (``acc_array``): each accumulator gets the words and overflow events of
a scalar accumulator (``acc_zero``/``acc_add``/``acc_value``) fed the same terms, in every
kind of context (float, fixed with formats compiled in or read at run time, quiet)."""

import numpy as np
import pytest
from numba import njit

from fixedqmc.numerics.kernel import (KernelSpec, Variable, acc_add, acc_array,
                                      acc_array_add, acc_array_clear, acc_array_value,
                                      acc_value, acc_zero, at, chunk, chunk_bounds, events,
                                      load, mul, n_chunks, quiet, store)

SPEC = KernelSpec("axpy", (
    Variable("c", -1.0, 1.0, "a coefficient"),
    Variable("x", -1.0, 1.0, "a term's factor"),
    Variable("term", -1.0, 1.0, "c x"),
    Variable("sum", -0.9, 0.9, "sum of the terms (narrow on purpose: some sums overflow)"),
))
C, X, TERM, SUM = range(4)


@njit
def _scalar_walker(e, c, xw, out, flags):
    for k in range(c.shape[1]):
        acc = acc_zero(e, SUM)
        for t in range(c.shape[0]):
            acc = acc_add(e, acc, mul(e, load(e, c[t, k], C), load(e, xw[t], X), TERM), SUM)
        s = acc_value(e, acc, SUM)
        out[k] = store(e, s)
        flags[k] = events(e, s)


@njit
def _array_walker(e, buf, c, xw, out, flags):
    acc_array_clear(e, buf)
    for t in range(c.shape[0]):
        xt = load(e, xw[t], X)
        for k in range(c.shape[1]):
            acc_array_add(e, buf, k, mul(e, load(e, c[t, k], C), xt, TERM), SUM)
    for k in range(c.shape[1]):
        s = acc_array_value(e, buf, k, SUM)
        out[k] = store(e, s)
        flags[k] = events(e, s)


@njit
def scalar_sums(cv, c, x, out, flags, quietly):
    """``out[w, k] = sum_t c[t, k] x[w, t]``: one scalar accumulator per k, terms in t."""
    for ch in range(n_chunks(cv, x.shape[0])):
        c0 = chunk(cv, ch)
        lo, hi = chunk_bounds(cv, x.shape[0], ch)
        for w in range(lo, hi):
            if quietly:
                _scalar_walker(quiet(at(c0, w)), c, x[w], out[w], flags[w])
            else:
                _scalar_walker(at(c0, w), c, x[w], out[w], flags[w])


@njit
def array_sums(cv, c, x, out, flags, quietly):
    """The same sums as :func:`scalar_sums` with the accumulators in one buffer: the loop
    over k is innermost (an axpy per term), the buffer allocated once per chunk and cleared
    per walker."""
    for ch in range(n_chunks(cv, x.shape[0])):
        c0 = chunk(cv, ch)
        lo, hi = chunk_bounds(cv, x.shape[0], ch)
        buf = acc_array(at(c0, lo), c.shape[1], SUM)
        qbuf = acc_array(quiet(at(c0, lo)), c.shape[1], SUM)
        for w in range(lo, hi):
            if quietly:
                _array_walker(quiet(at(c0, w)), qbuf, c, x[w], out[w], flags[w])
            else:
                _array_walker(at(c0, w), buf, c, x[w], out[w], flags[w])


def run(kernel, spec, runtime, quietly, seed=3):
    kp = SPEC.resolve(spec)
    kp = kp.at_runtime() if runtime else kp
    rng = np.random.default_rng(0)
    c = kp.encode("c", rng.uniform(-1, 1, (9, 7)), seed)
    x = kp.encode("x", rng.uniform(-1, 1, (70, 9)), seed)
    out = np.zeros((70, 7), c.dtype)
    flags = np.zeros((70, 7), np.int64)
    cv = kp.context(seed)
    kernel(cv, c, x, out, flags, quietly)
    return out, flags, kp.report(cv)


@pytest.mark.parametrize("spec, runtime, quietly", [
    pytest.param("fixed:16:half_even:saturate", False, False,  # modes: the run-time case
                 marks=pytest.mark.slow),
    ("fixed:16:stochastic:wrap", False, False),
    ("fixed:16:half_even:saturate", True, False),
    ("fixed:16:floor:saturate", False, True),
])
def test_fixed_accumulator_arrays_equal_scalar_accumulators(spec, runtime, quietly):
    want = run(scalar_sums, spec, runtime, quietly)
    got = run(array_sums, spec, runtime, quietly)
    assert np.array_equal(got[0], want[0])
    assert np.array_equal(got[1], want[1])
    assert got[2] == want[2]
    # the narrow sum format overflows somewhere, so the events are compared, not just zero
    assert (want[2]["sum"] > 0) or want[1].any()


@pytest.mark.parametrize("spec, dtype", [("float64", np.float64), ("float32", np.float32)])
def test_float_accumulator_arrays_sum_in_the_context_type(spec, dtype):
    got, _, _ = run(array_sums, spec, False, False)
    want, _, _ = run(scalar_sums, spec, False, False)
    assert got.dtype == dtype
    rng = np.random.default_rng(0)
    c, x = rng.uniform(-1, 1, (9, 7)), rng.uniform(-1, 1, (70, 9))
    exact = x @ c
    tol = 8 * 9 * np.finfo(dtype).eps
    assert np.abs(got - exact).max() < tol and np.abs(want - exact).max() < tol
    # in order, term by term, in the context's type
    seq = np.zeros((70, 7), dtype)
    for t in range(9):
        seq = seq + (c[t].astype(dtype) * x[:, t:t + 1].astype(dtype))
    assert np.array_equal(got, seq)
