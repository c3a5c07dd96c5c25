"""Checks any system against the system protocol (:mod:`fixedqmc.qmc.system`).

:func:`check_system` is what a developer of a new system runs first (fixedqmc's own tests
run it on every system): it raises an ``AssertionError`` naming the failed property, or
returns the measured deviations.  Properties checked, on a few walkers:

1. ``grad ln|psi|`` against central finite differences of ``ln|psi|`` (fourth order);
2. the kinetic energy against ``-D (lap_fd ln|psi| + |grad ln|psi||**2)`` (finite-difference
   Laplacian);
3. a single-particle move: ``propose``'s ``log|ratio|`` and sign equal the ratio of two
   full evaluations; its gradient (if given) equals the full evaluation's at the new
   position; ``propose(..., grad=False)`` gives the same ratio and sign;
4. ``accept`` with a mask touches only the masked walkers' state, and no positions (the
   caller commits them: :func:`~fixedqmc.qmc.system.commit_move`);
5. after a series of accepted moves, the incrementally updated evaluation equals a fresh
   one, and ``recompute`` gives the fresh state;
6. results independent of walker order (bit for bit) and of the numba thread count;
7. ``wrap`` leaves ln|psi| unchanged.

Use float64 kernels (finite differences need smooth functions: table-based pair functions
are piecewise quadratics with kinks at bin edges) and positions where psi != 0.  The step
``h`` trades truncation (~h**4, estimated and allowed for) against rounding noise of the
Laplacian (~eps |ln psi| / h**2 per coordinate, not estimated): raise ``h`` if the kinetic
check fails by a little on a wave function with large ``|ln psi|``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fixedqmc.qmc.system import Walkers, check_protocol, commit_move


def _fresh(system, pos, step=0):
    return system.evaluate(Walkers(np.array(pos, np.float64), None), step=step)


def assert_close(name, got, want, rtol, atol) -> float:
    """``|got - want| <= atol + rtol |want|`` elementwise, else an ``AssertionError`` naming
    ``name`` and the worst element; returns the largest ``|got - want|``."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    err = np.abs(got - want)
    ok = err <= atol + rtol * np.abs(want)
    atol = np.broadcast_to(atol, err.shape)
    if not ok.all():
        k = np.unravel_index(np.argmax(np.where(ok, 0, err)), err.shape)
        raise AssertionError(f"{name}: got {got[k]!r}, expected {want[k]!r} at index {k} "
                             f"(|diff| {err[k]:.3g}, tolerance {atol[k]:.3g} + {rtol:.3g} rel)")
    return float(err.max()) if err.size else 0.0


def assert_state_equal(a: dict, b: dict, rtol: float, atol: float, what: str) -> None:
    """Two per-walker states with the same keys and close arrays (:func:`assert_close`)."""
    assert set(a) == set(b), f"{what}: state keys {sorted(a)} != {sorted(b)}"
    for k in a:
        assert_close(f"{what}: state[{k!r}]", a[k], b[k], rtol, atol)


@dataclass
class FiniteDifferences:
    """Central fourth-order finite differences of a function of positions (n_w, N, 3):
    ``grad`` (n_w, N, 3) and per-particle Laplacians ``lap`` (n_w, N) at step h, with
    error estimates ``grad_error``, ``lap_error`` (3x the truncation error estimated from
    the same stencils at 2h, Richardson; large only near a node)."""

    grad: np.ndarray
    lap: np.ndarray
    grad_error: np.ndarray
    lap_error: np.ndarray


def finite_differences(f, pos: np.ndarray, f0: np.ndarray, h: float) -> FiniteDifferences:
    """:class:`FiniteDifferences` of ``f`` (positions -> (n_w,)) at ``pos``, ``f0 = f(pos)``."""
    nw, n, _ = pos.shape
    grad = {1: np.empty_like(pos), 2: np.empty_like(pos)}
    lap = {1: np.zeros((nw, n)), 2: np.zeros((nw, n))}
    f_at = {}
    for i in range(n):
        for c in range(3):
            for k in (-4, -2, -1, 1, 2, 4):
                d = np.zeros_like(pos)
                d[:, i, c] = k * h
                f_at[k] = f(pos + d)
            for m in (1, 2):
                grad[m][:, i, c] = (8 * (f_at[m] - f_at[-m])
                                    - (f_at[2 * m] - f_at[-2 * m])) / (12 * m * h)
                lap[m][:, i] += (16 * (f_at[m] + f_at[-m]) - (f_at[2 * m] + f_at[-2 * m])
                                 - 30 * f0) / (12 * (m * h) ** 2)
    return FiniteDifferences(grad[1], lap[1], 3 * np.abs(grad[1] - grad[2]) / 15,
                             3 * np.abs(lap[1] - lap[2]) / 15)


def check_system(system, positions, *, h: float = 2.5e-4, grad_tol: float = 1e-6,
                 lap_tol: float = 1e-5, ratio_tol: float = 1e-9, update_tol: float = 1e-8,
                 n_moves: int = 20, step_size: float = 0.3, seed: int = 0) -> dict:
    """Check ``system`` on ``positions`` (n_w, N, 3) (module docstring); tolerances are
    relative (absolute below 1).  Returns ``{property: largest deviation}``."""
    import numba

    check_protocol(system)
    pos = system.wrap(np.array(positions, np.float64))
    nw, n, _ = pos.shape
    rng = np.random.default_rng(seed)
    out = {}
    ev = _fresh(system, pos)
    assert np.all(ev.outside == 0) and np.all(np.isfinite(ev.ln_psi)), \
        "positions must have psi != 0 for the checks"
    assert set(np.unique(ev.sign)) <= {-1.0, 1.0}, f"sign must be +-1, got {np.unique(ev.sign)}"
    assert "kinetic" in ev.parts, f"parts must include 'kinetic'; got {sorted(ev.parts)}"

    # 1-2: finite differences of ln|psi|
    fd = finite_differences(lambda x: _fresh(system, x).ln_psi, pos, ev.ln_psi, h)
    out["grad"] = assert_close("grad ln|psi| vs finite differences", ev.grad, fd.grad,
                               grad_tol, grad_tol + fd.grad_error)
    g2 = np.sum(ev.grad ** 2, axis=(1, 2))
    kin_fd = -system.hbar2_2m * (fd.lap.sum(axis=1) + g2)
    k_err = system.hbar2_2m * fd.lap_error.sum(axis=1)
    out["kinetic"] = assert_close("kinetic energy vs finite-difference Laplacian",
                                  ev.kinetic, kin_fd, lap_tol, lap_tol + k_err)

    # 3: a proposed move against two full evaluations
    walkers = Walkers(pos.copy(), ev.state)
    i = n // 2
    new = pos[:, i] + rng.uniform(-step_size, step_size, (nw, 3))
    prop = system.propose(walkers, i, new)
    moved = pos.copy()
    moved[:, i] = new
    ev_new = _fresh(system, moved)
    out["ratio"] = assert_close("propose log|ratio| vs full evaluations", prop.log_ratio,
                                ev_new.ln_psi - ev.ln_psi, ratio_tol, ratio_tol)
    assert np.array_equal(prop.sign, ev_new.sign * ev.sign), \
        "propose sign != sign(psi') sign(psi) of full evaluations"
    if prop.grad is not None:
        out["proposal_grad"] = assert_close("propose gradient vs full evaluation",
                                            prop.grad, ev_new.grad[:, i], ratio_tol, ratio_tol)
    bare = system.propose(walkers, i, new, grad=False)  # what Metropolis VMC asks for
    assert np.array_equal(bare.log_ratio, prop.log_ratio) and np.array_equal(
        bare.sign, prop.sign), "propose(grad=False) gives another ratio than propose()"

    # 4: a masked accept touches only the masked walkers' state, and no positions
    mask = (np.arange(nw) % 2 == 0) & (prop.outside == 0)
    before = Walkers(walkers.positions.copy(), {k: v.copy() for k, v in walkers.state.items()})
    system.accept(walkers, i, mask, prop)
    assert np.array_equal(walkers.positions, before.positions), \
        "accept changed positions (the caller commits them: commit_move)"
    for k, v in walkers.state.items():
        assert np.array_equal(v[~mask], before.state[k][~mask]), \
            f"accept changed state[{k!r}] of unmasked walkers"
    walkers.positions[mask, i] = new[mask]

    # 5: many accepted moves, then incremental == fresh, and recompute == fresh
    for _ in range(n_moves):
        j = int(rng.integers(n))
        trial = walkers.positions[:, j] + rng.uniform(-step_size, step_size, (nw, 3))
        p = system.propose(walkers, j, trial)
        commit_move(system, walkers, j, np.isfinite(p.log_ratio), p)
    inc = system.evaluate(walkers)
    fresh = _fresh(system, walkers.positions)
    out["update_ln_psi"] = assert_close("ln|psi| after incremental updates vs fresh",
                                        inc.ln_psi, fresh.ln_psi, update_tol, update_tol)
    out["update_energy"] = assert_close("local energy after incremental updates vs fresh",
                                        inc.local_energy, fresh.local_energy, update_tol,
                                        update_tol)
    assert np.array_equal(inc.sign, fresh.sign), "sign after incremental updates != fresh"
    diag = system.recompute(walkers)
    assert isinstance(diag, dict), f"recompute must return a dict, got {type(diag).__name__}"
    if fresh.state:
        assert_state_equal(walkers.state, fresh.state, update_tol, update_tol, "recompute")

    # 6: walker order and thread count
    perm = rng.permutation(nw)
    ev_perm = _fresh(system, pos[perm])
    for name in ("ln_psi", "sign", "local_energy"):
        assert np.array_equal(getattr(ev_perm, name), getattr(ev, name)[perm]), \
            f"{name} depends on the walker order"
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        ev_one = _fresh(system, pos)
    finally:
        numba.set_num_threads(threads)
    for name in ("ln_psi", "local_energy"):
        assert np.array_equal(getattr(ev_one, name), getattr(ev, name)), \
            f"{name} depends on the thread count"

    # 7: wrap
    shifted = pos + rng.uniform(-0.5, 0.5, (nw, 1, 3))
    out["wrap"] = assert_close("ln|psi| of wrapped positions", _fresh(system, system.wrap(
        shifted)).ln_psi, _fresh(system, shifted).ln_psi, ratio_tol, ratio_tol)
    return out
