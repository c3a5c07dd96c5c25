"""The shared Slater-determinant kernels (fixedqmc.systems.determinants).

float64: ratio, gradient, Sherman-Morrison update and contractions against numpy linear
algebra.  Fixed point: bit for bit against an exact oracle on Python Fractions
(``tests/reference.py``) that re-does the documented operation sequence: every product
rounded once into its variable, accumulators (each term rounded once into the sum's
format, added exactly, overflow-handled once), quotients correctly rounded, stochastic
bits ``random_bits(step seed, walker, variable id)``.
"""

from fractions import Fraction

import numpy as np
import pytest

import reference as R
from fixedqmc.numerics.kernel import N_CHUNKS
from fixedqmc.numerics.kernel_set import KernelSet, step_seed
from fixedqmc.systems import determinants as D

NW, N, J = 5, 6, 2  # N = 6: four columns at a time, then two one by one
RANGES = {v: (-64.0, 64.0) for v, _ in D.DETERMINANT_VARIABLES}


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(NW, N, N))
    row = rng.normal(size=(NW, N))
    grow = rng.normal(size=(NW, 3, N))
    return M, row, grow


def _run(precision, M, row, grow, mask, seed=3, step=5, runtime=True):
    ks = KernelSet({"determinant": D.determinant_spec(RANGES)}, precision, seed=seed,
                   runtime=runtime)
    _, _, B = D.fresh_inverse(M)
    enc = lambda v, x: ks.encode("determinant", v, np.array(x), step)  # noqa: E731
    dt = ks["determinant"].dtype
    inv, rows, grows = enc("inv", B), enc("row", row), enc("grow", grow)
    dec = lambda v, x: ks.decode("determinant", v, x)  # noqa: E731
    inputs = (dec("inv", inv), dec("row", rows), dec("grow", grows))
    ct = ks.context("determinant", step)
    out_r, out_g = np.zeros(NW, dt), np.zeros((NW, 3), dt)
    D.ratio_kernel(ct, rows, inv, J, grows, out_r, out_g)
    D.update_kernel(ct, rows, inv, J, mask, out_r, np.zeros((N_CHUNKS, 3, N), dt))
    events = ks.report("determinant", ct)
    return ks, dec("ratio", out_r), dec("grad", out_g), dec("inv", inv), events, inputs


def test_float64_against_linear_algebra():
    M, row, grow = _problem()
    mask = np.array([True, False, True, True, False])
    _, ratio, grad, inv, _, _ = _run("float64", M, row, grow, mask)
    M2 = M.copy()
    M2[:, J, :] = row
    B2 = np.linalg.inv(M2)
    np.testing.assert_allclose(ratio, np.linalg.det(M2) / np.linalg.det(M), rtol=1e-12)
    np.testing.assert_allclose(grad, np.einsum("wdk,wk->wd", grow, B2[:, :, J]), rtol=1e-10,
                               atol=1e-12)
    expect = np.where(mask[:, None, None], B2, np.linalg.inv(M))
    np.testing.assert_allclose(inv, expect, rtol=1e-10, atol=1e-12)
    # contraction: sum_k G[w, i, d, k] B[k, i]
    G = np.random.default_rng(1).normal(size=(NW, N, 4, N))
    out = np.zeros((NW, N, 4))
    _, _, B = D.fresh_inverse(M)
    D.contract_kernel(np.float64(0), G, B, out)
    np.testing.assert_allclose(out, np.einsum("widk,wki->wid", G, B), rtol=1e-12)


def test_singular_matrix_is_flagged_not_nan():
    M = np.ones((2, 3, 3))
    M[1] = np.eye(3)
    sign, ln_det, B = D.fresh_inverse(M)
    assert sign[0] == 0 and ln_det[0] == -np.inf and np.isfinite(B).all()
    assert D.inverse_error(M[1:], B[1:]) < 1e-15


class Oracle:
    """The determinant kernel's arithmetic on exact Fractions at its resolved formats."""

    def __init__(self, ks, seed, step):
        kp = ks["determinant"]
        self.vid = {v: i for i, v in enumerate(kp.spec.names)}
        self.mode = {v: (kp.format_of(v), kp.roundings[i], kp.overflows[i])
                     for v, i in self.vid.items()}
        self.seed = step_seed(seed, step)
        self.w = 0
        self.events = {v: 0 for v in self.vid}

    def bits(self, v):
        return R.random_bits(self.seed, self.w, self.vid[v]) if self.mode[v][1] == "stochastic" else 0

    def round(self, x, v):
        fmt, rnd, ovf = self.mode[v]
        raw, over = R.quantize(Fraction(x), fmt, rnd, ovf, self.bits(v))
        self.events[v] += over
        return R.value(raw, fmt)

    def div(self, x, y, v):
        fmt, rnd, ovf = self.mode[v]
        raw, over = R.div(x, y, fmt, rnd, ovf, self.bits(v))
        self.events[v] += over
        return R.value(raw, fmt)

    def dot(self, row, col, v_in, v_prod, v_sum):
        total = sum(self.round(self.round(a * b, v_prod), v_sum) for a, b in zip(row, col))
        return self.round(total, v_sum)  # exact sum, overflow-handled once

    @staticmethod
    def exact(x):
        """Kernel inputs (words already encoded, exact as float64) as Fractions."""
        return [Fraction(float(t)) for t in np.ravel(x)]


@pytest.mark.parametrize("spec, runtime", [
    ("fixed:24", True), ("fixed:20:floor:wrap", True), ("fixed:22:zero", True),
    ("fixed:30:stochastic", True), ("fixed:18:half_up:saturate", True),
    # formats compiled in: the update's quiet passes (split products of 40-bit words), and
    # their recounts where they overflow
    pytest.param("fixed:40:stochastic:wrap,determinant.u=fixed:Q0.38,"
                 "determinant.corr=fixed:Q0.38", False, marks=pytest.mark.heavy)])
def test_fixed_point_matches_exact_oracle(spec, runtime):
    M, row, grow = _problem(2)
    mask = np.array([True, True, False, True, True])
    seed, step = 3, 5
    ks, ratio, grad, inv, events, (B, row, grow) = _run(spec, M, row, grow, mask, seed, step,
                                                        runtime)
    o = Oracle(ks, seed, step)
    for w in range(NW):
        o.w = w
        b = np.array(o.exact(B[w]), dtype=object).reshape(N, N)
        r_in = o.exact(row[w])
        g_in = [o.exact(grow[w, d]) for d in range(3)]
        r = o.dot(r_in, b[:, J], "row", "prod", "ratio")
        assert Fraction(ratio[w]) == r
        for d in range(3):
            g = o.dot(g_in[d], b[:, J], "grow", "gprod", "gsum")
            assert Fraction(grad[w, d]) == o.div(g, r, "grad")
        if mask[w]:
            col = list(b[:, J])
            u = []
            for m in range(N):
                s = o.dot(r_in, b[:, m], "row", "prod", "u")
                if m == J:
                    s = o.round(s - o.round(1, "u"), "u")
                u.append(o.div(s, r, "uq"))
            for k in range(N):
                for m in range(N):
                    b[k, m] = o.round(b[k, m] - o.round(col[k] * u[m], "corr"), "inv")
        assert [Fraction(x) for x in inv[w].ravel()] == list(b.ravel()), w
    assert events == o.events
    if "corr" in spec:  # narrow enough that the update overflows
        assert events["u"] > 0 and events["corr"] > 0, events


@pytest.mark.parametrize("n", [2, 3])
def test_one_sherman_morrison_update_counts_its_hand_count(n):
    """Counted by a profiling run: the ratio of a move (n products into one sum), and the
    update of an n x n inverse (n**2 products into n column sums, the -1 of the moved
    column, n quotients, n**2 products and differences of the corrected rows)."""
    rng = np.random.default_rng(n)
    M, row = rng.normal(size=(1, n, n)), rng.normal(size=(1, n))
    ks = KernelSet({"determinant": D.determinant_spec(RANGES)}).profiling()
    _, _, B = D.fresh_inverse(M)
    enc = lambda v, x: ks.encode("determinant", v, np.array(x))  # noqa: E731
    inv, rows = enc("inv", B), enc("row", row)
    ct = ks.context("determinant")
    dt = ks["determinant"].dtype
    out_r = np.zeros(1, dt)
    D.ratio_kernel(ct, rows, inv, 0, np.zeros((1, 0, n), dt), out_r, np.zeros((1, 3), dt))
    D.update_kernel(ct, rows, inv, 0, np.ones(1, bool), out_r,
                    np.zeros((N_CHUNKS, 3, n), dt))
    got = {(r["variable"], r["op"]): (r["count"], r["a"], r["b"])
           for r in ks.counts("determinant")}
    assert got == {("prod", "mul"): (n + n * n, "row", "inv"),  # ratio, then the u sums
                   ("ratio", "acc_add"): (n, "prod", ""),
                   ("u", "acc_add"): (n * n, "prod", ""),
                   ("u", "sub"): (1, "u", "u"),
                   ("uq", "div"): (n, "u", "ratio"),
                   ("corr", "mul"): (n * n, "inv", "uq"),
                   ("inv", "sub"): (n * n, "inv", "corr")}
