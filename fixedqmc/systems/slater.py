"""Slater-Jastrow systems: a determinant part, Jastrow parts and a Hamiltonian, composed.

Trial function (seed 001, Eq. 5-7; seed 000, Eq. 1 and 7)::

    psi = D_up D_down exp(J_1 + J_2 + ...)

of a :class:`~fixedqmc.systems.determinant_part.DeterminantPart` (the Slater determinants of
an orbital evaluator the system supplies) and Jastrow parts (:mod:`fixedqmc.systems.parts`:
each checked alone by :func:`fixedqmc.testing.check_part`).  :class:`SlaterJastrow`
implements ``evaluate``, ``propose``, ``accept`` and ``recompute`` of the system protocol
(:mod:`fixedqmc.qmc.system`) on them and on the kinetic ``energy`` kernel below; the
Hamiltonian's potential is a function ``potential(ks, pos, step) -> {name: (n_w,)}`` of the
system (its energy parts).  A concrete system (``molecule``, ``heg``, a user's) sets the
attributes ``n`` (n_up, n_down), ``n_particles``, ``ks`` (a
:class:`~fixedqmc.numerics.kernel_set.KernelSet` with at least the ``determinant`` and
``energy`` kernels and those of its parts), ``kernels``, ``log``, ``units``, calls
:meth:`SlaterJastrow.__init__` with its parts, and implements ``initial_positions``,
``wrap`` and ``profile_step``.  Every part takes the kernel set to use, so that profiling
runs the same code on a profiling copy.

Per-walker state: the parts' (the determinant's ``inv0``, ``inv1``, ``ln_det``, ``sign``).
Units: the system's (hartree and bohr for the built-in ones), ``hbar**2 / 2m = 1/2``.
"""

from __future__ import annotations

import operator
from functools import reduce

import numpy as np
from numba import njit, prange

from fixedqmc.numerics import bound_words
from fixedqmc.numerics.bound_run import KernelBound, linear_bound, system_bound
from fixedqmc.numerics.kernel import (KernelSpec, Variable, acc_add, acc_value, acc_zero, add,
                                      at, chunk, chunk_bounds, const, load, mul, n_chunks,
                                      store)
from fixedqmc.numerics.overflow import OverflowLog
from fixedqmc.qmc.system import Evaluation, Proposal, Walkers
from fixedqmc.systems.determinant_part import DeterminantPart

# ------------------------------------------------------------- the energy kernel --
#: Variables of the kinetic ``energy`` kernel (ranges are set by the system).
ENERGY_VARIABLES = (
    ("lap", "lap_i D / D or lap_i J of one electron (1/bohr**2)"),
    ("grad", "a component of grad_i D / D or grad_i J (1/bohr)"),
    ("gsum", "2 grad_i D / D + grad_i J, a component (1/bohr)"),
    ("gprod", "grad_i J (2 grad_i D / D + grad_i J), a component (1/bohr**2)"),
    ("lap_sum", "sum over electrons of lap_i psi / psi (sum, 1/bohr**2)"),
    ("half", "-1/2"),
    ("kinetic", "the kinetic local energy (hartree)"),
)
LAP, GRAD, GSUM, GPROD, LAP_SUM, HALF, KINETIC = range(7)


def energy_ranges(lap_max: float, grad_max: float, n: int) -> dict:
    """Declared ranges of the ``energy`` kernel for per-electron Laplacians up to
    ``lap_max`` (1/bohr**2) and gradient components up to ``grad_max`` (1/bohr) of ``n``
    electrons."""
    g = 3 * grad_max
    return {"lap": (-lap_max, lap_max), "grad": (-grad_max, grad_max), "gsum": (-g, g),
            "gprod": (-grad_max * g, grad_max * g),
            "lap_sum": (-n * (2 * lap_max + 3 * grad_max * g),
                        n * (2 * lap_max + 3 * grad_max * g)),
            "half": (-0.5, 0), "kinetic": (-n * (lap_max + 1.5 * grad_max * g),
                                          n * (lap_max + 1.5 * grad_max * g))}


def energy_spec(lap_max: float, grad_max: float, n: int) -> KernelSpec:
    """The ``energy`` kernel with the ranges of :func:`energy_ranges`."""
    r = energy_ranges(lap_max, grad_max, n)
    return KernelSpec("energy", tuple(Variable(v, *r[v], doc) for v, doc in ENERGY_VARIABLES))


@njit
def _kinetic_chunk(ck, k, lap, grad, out):
    c = chunk(ck, k)
    lo, hi = chunk_bounds(ck, lap.shape[0], k)
    for w in range(lo, hi):
        e = at(c, w)
        acc = acc_zero(e, LAP_SUM)
        for i in range(lap.shape[1]):
            acc = acc_add(e, acc, load(e, lap[w, i, 0], LAP), LAP_SUM)
            acc = acc_add(e, acc, load(e, lap[w, i, 1], LAP), LAP_SUM)
            for d in range(3):
                gd = load(e, grad[w, i, 0, d], GRAD)
                gj = load(e, grad[w, i, 1, d], GRAD)
                s = add(e, add(e, gd, gd, GSUM), gj, GSUM)
                acc = acc_add(e, acc, mul(e, gj, s, GPROD), LAP_SUM)
        out[w] = store(e, mul(e, const(e, -0.5, HALF), acc_value(e, acc, LAP_SUM), KINETIC))


@njit(parallel=True, cache=True)
def kinetic_kernel(ck, lap, grad, out):
    """``out[w] = -1/2 sum_i lap_i psi / psi`` (``energy.kinetic`` words, hartree) with
    ``lap_i psi / psi = lap_i D / D + lap_i J + grad_i J . (2 grad_i D / D + grad_i J)``
    for ``psi = exp(J) D``: ``lap`` (n_w, N, 2) the determinant and Jastrow Laplacians
    (``energy.lap``), ``grad`` (n_w, N, 2, 3) their gradients (``energy.grad``; zeros
    without a Jastrow factor)."""
    for k in prange(n_chunks(ck, lap.shape[0])):
        _kinetic_chunk(ck, k, lap, grad, out)


# ------------------------------------------------------------------ the systems --
class SlaterJastrow:
    """The system protocol of ``psi = D exp(sum_k J_k)`` (module docstring): ``determinant``
    a :class:`DeterminantPart`, ``jastrows`` Jastrow parts (``laplacian = "log"``),
    ``potential(ks, pos, step)`` the potential energy by named parts ``{name: (n_w,)}``."""

    hbar2_2m = 0.5

    def __init__(self, determinant: DeterminantPart, jastrows, potential):
        self.determinant = determinant
        self.jastrows = tuple(jastrows)
        self.parts = (determinant, *self.jastrows)
        self.potential = potential

    def _kinetic(self, ks, lap, grad, step):
        ck = ks.context("energy", step)
        out = np.zeros(lap.shape[0], ks["energy"].dtype)
        kinetic_kernel(ck, ks.encode("energy", "lap", lap, step),
                       ks.encode("energy", "grad", grad, step), out)
        ks.report("energy", ck)
        return ks.decode("energy", "kinetic", out)

    # -- the protocol -------------------------------------------------------------------
    def evaluate(self, walkers: Walkers, *, step: int = 0) -> Evaluation:
        return self._evaluate(self.ks, walkers, step)

    def _evaluate(self, ks, walkers: Walkers, step: int, record: dict | None = None
                  ) -> Evaluation:
        """The evaluation in kernel set ``ks`` (of a bound set: bound words throughout,
        :mod:`~fixedqmc.numerics.bound_words`); ``record`` (a dict) receives the parts'
        outputs the kinetic energy is made of (:meth:`_bounds`' quantities)."""
        pos = np.asarray(walkers.positions, np.float64)
        nw, n = pos.shape[:2]
        d = self.determinant.evaluate(ks, pos, step, walkers.state)
        grad = np.zeros((nw, n, 2, 3), ks.host_dtype)  # determinant, Jastrow
        lap = np.zeros((nw, n, 2), ks.host_dtype)
        grad[:, :, 0], lap[:, :, 0] = d.grad, d.lap
        ln_psi = d.value
        if record is not None:
            record.update({"determinant.ln_det": d.value, "determinant.grad": d.grad,
                           "determinant.lap": d.lap})
        if self.jastrows:  # the Jastrow parts summed in order
            js = [p.evaluate(ks, pos, step, walkers.state) for p in self.jastrows]
            for v in js:
                d.state.update(v.state)
            jastrow = [bound_words.add(*[getattr(v, k) for v in js])
                       for k in ("value", "grad", "lap")]
            ln_psi = bound_words.add(ln_psi, jastrow[0])
            grad[:, :, 1], lap[:, :, 1] = jastrow[1:]
            if record is not None:
                record.update(zip(("jastrow.value", "jastrow.grad", "jastrow.lap"), jastrow))
        parts = {"kinetic": self._kinetic(ks, lap, grad, step),
                 **self.potential(ks, pos, step)}
        zero = d.sign == 0
        return Evaluation(np.where(zero, -np.inf, ln_psi), d.sign.copy(), grad.sum(axis=2),
                          parts, zero.astype(np.int64), d.state)

    def _bounds(self, name: str, positions, step: int) -> KernelBound:
        """Rigorous bounds on the errors of this system's precision (the trial) at
        ``positions`` (n_w, N, 3) beside the errors measured (the protocol's optional
        ``bound_evaluation``; ``name`` the system's kind): the evaluation runs at the trial
        precision and again in a bound kernel set
        (:meth:`~fixedqmc.numerics.kernel_set.KernelSet.bounding`), whose host steps carry
        bound words: fresh inverses and ``ln|det|`` by
        :func:`~fixedqmc.systems.determinants.fresh_inverse_bound`, sums of parts by
        :func:`~fixedqmc.numerics.bound_words.add`.  Quantities (arrays per walker, in the
        system's units): ``determinant.ln_det``, ``determinant.grad`` (n_w, N, 3) and
        ``determinant.lap`` (n_w, N) (grad_i ln|D|, lap_i D / D), with Jastrow parts
        ``jastrow.value``, ``jastrow.grad``, ``jastrow.lap`` (their sums), every energy
        part, ``local_energy`` (their sum, :func:`~fixedqmc.numerics.bound_run.
        linear_bound`) and ``ln_psi``.  The trial's ``local_energy`` and ``ln_psi`` are bit
        for bit :meth:`evaluate`'s at the same ``step``, and the result's ``log`` holds the
        events that call would log (the system's own log untouched)."""
        pos = np.array(positions, np.float64)
        rec_t, rec_b = {}, {}
        kept, self.ks.log = self.ks.log, OverflowLog()  # the trial's events apart
        try:
            ev = self._evaluate(self.ks, Walkers(pos.copy(), None), step, rec_t)
        finally:
            log, self.ks.log = self.ks.log, kept
        kb = self.ks.bounding()
        evb = self._evaluate(kb, Walkers(pos.copy(), None), step, rec_b)
        rec_t.update(ev.parts, ln_psi=ev.ln_psi)
        rec_b.update(evb.parts, ln_psi=evb.ln_psi)
        value = {k: w.real.copy() for k, w in rec_b.items()}
        bound = {k: w.imag.copy() for k, w in rec_b.items()}
        value["local_energy"], bound["local_energy"] = linear_bound(
            [(1.0, value[p], bound[p]) for p in evb.parts])
        rec_t["local_energy"] = ev.local_energy
        return system_bound(name, str(self.ks.policy), value, bound, rec_t,
                            dict(kb.unbounded), kb.ambiguous, log)

    def propose(self, walkers: Walkers, i: int, new, *, step: int = 0, grad: bool = True
                ) -> Proposal:
        """Move particle ``i`` to ``new`` (n_w, 3): the product of the parts' ratios and,
        with ``grad``, grad_i ln|psi| at ``new``; without, no part computes gradients."""
        return self._propose(self.ks, walkers, i, new, step, grad)

    def _propose(self, ks, walkers, i, new, step, want_grad=True):
        new = np.ascontiguousarray(new, np.float64)
        d = self.determinant.propose(ks, walkers.positions, walkers.state, i, new, step,
                                     want_grad)
        log_ratio, grad, moves = d.log_ratio, d.grad, []
        if self.jastrows:  # the Jastrow parts summed in order, then added to the determinant's
            moves = [p.propose(ks, walkers.positions, walkers.state, i, new, step, want_grad)
                     for p in self.jastrows]
            log_ratio = log_ratio + reduce(operator.add, [mv.log_ratio for mv in moves])
            if want_grad:
                grad = grad + reduce(operator.add, [mv.grad for mv in moves])
        return Proposal(new, log_ratio, d.sign, grad, (d.sign == 0).astype(np.int64),
                        (d, *moves))

    def accept(self, walkers: Walkers, i: int, mask, proposal: Proposal) -> None:
        self._accept(self.ks, walkers, i, mask, proposal)

    def _accept(self, ks, walkers, i, mask, proposal):
        """Every part's state updated for the walkers in ``mask`` (nonzero ratios: the
        caller passes no walker whose proposal is outside)."""
        for part, move in zip(self.parts, proposal.saved):
            part.accept(ks, walkers.state, i, mask, move)

    def recompute(self, walkers: Walkers, *, step: int = 0) -> dict:
        """Fresh state of every part; returns the parts' drift diagnostics (the
        determinant's ``inverse_error``, the largest ``|M M^-1 - I|`` of the updated
        inverses)."""
        state, diag = {}, {}
        for part in self.parts:
            st, dg = part.recompute(self.ks, walkers.positions, step, walkers.state)
            state.update(st)
            diag.update(dg)
        walkers.state = state
        return diag

    def profile(self, positions, *, step: int = 0) -> dict:
        """Ranges of every kernel variable in a float64 evaluation of ``positions`` and one
        Metropolis sweep of single-particle moves (Gaussian steps of ``profile_step``) from
        them (:meth:`_profile_sweep`)."""
        pos = self.wrap(np.array(positions, np.float64))
        return self._profile_sweep(self.ks.profiling(), pos, self.profile_step, step)

    def _profile_sweep(self, ks, positions, sigma: float, step: int, *,
                       counts: dict | None = None) -> dict:
        """Range statistics of every kernel of ``ks`` (a profiling copy) over a float64
        evaluation of ``positions`` and one Metropolis sweep of single-electron moves from
        them (a Gaussian step of ``sigma`` bohr per component, accepted with ``min(1,
        |psi'/psi|**2)`` as in a run: a move forced onto a near-node configuration would
        inflate the inverse Slater matrices far beyond what sampling reaches).  ``counts``
        (a dict) receives the operation counts of the evaluation and of the sweep's moves
        apart (:meth:`operation_counts`; the statistics then cover the moves only)."""
        pos = np.array(positions, np.float64)
        walkers = Walkers(pos.copy(), None)
        walkers.state = self._evaluate(ks, walkers, step).state
        if counts is not None:
            counts["evaluation"] = (pos.shape[0], {k: ks.counts(k) for k in self.kernels})
            ks.reset_profiles()
        rng = np.random.default_rng(step)
        for i in range(self.n_particles):
            new = self.wrap(walkers.positions[:, i] + rng.normal(0.0, sigma, pos[:, i].shape))
            prop = self._propose(ks, walkers, i, new, step)
            with np.errstate(over="ignore"):
                ok = (prop.outside == 0) & (rng.random(pos.shape[0]) < np.exp(
                    np.minimum(2.0 * prop.log_ratio, 0.0)))
            self._accept(ks, walkers, i, ok, prop)
            walkers.positions[ok, i] = new[ok]
        if counts is not None:
            counts["move"] = (pos.shape[0] * self.n_particles,
                              {k: ks.counts(k) for k in self.kernels})
        return {k: ks.stats(k) for k in self.kernels}  # encoded inputs included

    def operation_counts(self, positions, *, step: int = 0) -> dict:
        """The operations of a float64 evaluation of ``positions`` and of one sweep of
        single-electron moves from them (proposal with the gradient, then acceptance at the
        sweep's rate: :meth:`_profile_sweep`): ``{"evaluation": (walkers, {kernel:
        rows}), "move": (moves, {kernel: rows}), "arrays": [...]}`` (the constant arrays
        the data path stores, :meth:`_stored_arrays`), rows of
        :meth:`~fixedqmc.numerics.kernel_set.KernelSet.counts` summed over the walkers or
        the moves (:func:`fixedqmc.qmc.counts.count_operations` divides)."""
        counts: dict = {}
        self._profile_sweep(self.ks.profiling(), self.wrap(np.array(positions, np.float64)),
                            self.profile_step, step, counts=counts)
        counts["arrays"] = self._stored_arrays()
        return counts

    def _stored_arrays(self) -> list:
        """The constant arrays a data path stores (``operation_counts``' ``arrays``)."""
        return []

    def formats(self) -> dict:
        return self.ks.formats()
