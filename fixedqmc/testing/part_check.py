"""Checks one part of a Slater-Jastrow trial function alone (:mod:`fixedqmc.systems.parts`).

:func:`check_part` is what a developer of a new part (an orbital set under a
:class:`~fixedqmc.systems.determinant_part.DeterminantPart`, a Jastrow term) runs before
composing it into a system; fixedqmc's own tests run it on every part.  It raises an
``AssertionError`` naming the failed property, or returns the measured deviations.
Properties checked, on a few walkers:

1. ``grad_i ln|P|`` against central finite differences of ``ln|P|`` (fourth order);
2. the Laplacian against the finite-difference Laplacian of ``ln|P|`` (plus ``|grad|**2``
   for a part whose ``laplacian`` is ``"value"``);
3. a single-particle move: ``propose``'s ``ln|ratio|`` and sign equal those of two full
   evaluations, its gradient the full evaluation's at the new position, and
   ``propose(..., grad=False)`` gives the same ratio;
4. ``accept`` with a mask touches only the masked walkers' state;
5. after a series of accepted moves, the part evaluated with its incrementally updated state
   equals a fresh evaluation (value, gradient, Laplacian), and ``recompute`` gives the fresh
   state.

Use float64 kernels (finite differences need smooth functions) and positions where the part
is nonzero.
"""

from __future__ import annotations

import numpy as np

from fixedqmc.testing.system_check import assert_close, assert_state_equal, finite_differences


def check_part(part, ks, positions, *, h: float = 2.5e-4, grad_tol: float = 1e-6,
               lap_tol: float = 1e-5, ratio_tol: float = 1e-9, update_tol: float = 1e-8,
               n_moves: int = 20, step_size: float = 0.3, seed: int = 0) -> dict:
    """Check ``part`` run in kernel set ``ks`` on ``positions`` (n_w, N, 3) (module
    docstring); tolerances are relative (absolute below 1).  Returns ``{property: largest
    deviation}``."""
    if getattr(part, "laplacian", None) not in ("value", "log"):
        raise AssertionError(f"part.laplacian must be 'value' or 'log', got "
                             f"{getattr(part, 'laplacian', None)!r}")
    pos = np.array(positions, np.float64)
    nw, n, _ = pos.shape
    rng = np.random.default_rng(seed)

    def fresh(x):
        return part.evaluate(ks, x, 0)

    def sign(v):
        return np.ones(nw) if v.sign is None else v.sign

    out = {}
    ev = fresh(pos)
    assert np.all(np.isfinite(ev.value)), "positions must have P != 0 for the checks"
    assert set(np.unique(sign(ev))) <= {-1.0, 1.0}, f"sign must be +-1, got {np.unique(ev.sign)}"

    # 1-2: finite differences of ln|P|
    fd = finite_differences(lambda x: fresh(x).value, pos, ev.value, h)
    out["grad"] = assert_close("grad ln|P| vs finite differences", ev.grad, fd.grad, grad_tol,
                         grad_tol + fd.grad_error)
    lap_fd = fd.lap + (np.sum(ev.grad ** 2, axis=2) if part.laplacian == "value" else 0.0)
    out["lap"] = assert_close(f"Laplacian ({part.laplacian}) vs finite differences", ev.lap,
                        lap_fd, lap_tol, lap_tol + fd.lap_error)

    # 3: a proposed move against two full evaluations
    state = ev.state
    i = n // 2
    new = pos[:, i] + rng.uniform(-step_size, step_size, (nw, 3))
    mv = part.propose(ks, pos, state, i, new, 0)
    moved = pos.copy()
    moved[:, i] = new
    ev_new = fresh(moved)
    out["ratio"] = assert_close("propose ln|ratio| vs full evaluations", mv.log_ratio,
                          ev_new.value - ev.value, ratio_tol, ratio_tol)
    mv_sign = np.ones(nw) if mv.sign is None else mv.sign
    assert np.array_equal(mv_sign, sign(ev_new) * sign(ev)), \
        "propose sign != sign(P') sign(P) of full evaluations"
    out["proposal_grad"] = assert_close("propose gradient vs full evaluation", mv.grad,
                                  ev_new.grad[:, i], ratio_tol, ratio_tol)
    bare = part.propose(ks, pos, state, i, new, 0, grad=False)
    assert np.array_equal(bare.log_ratio, mv.log_ratio), \
        "propose(grad=False) gives another ratio than propose()"

    # 4: a masked accept touches only the masked walkers
    mask = (np.arange(nw) % 2 == 0) & (mv_sign != 0)  # the caller passes nonzero ratios
    before = {k: v.copy() for k, v in state.items()}
    part.accept(ks, state, i, mask, mv)
    pos[mask, i] = new[mask]
    for k, v in state.items():
        assert np.array_equal(v[~mask], before[k][~mask]), \
            f"accept changed state[{k!r}] of unmasked walkers"

    # 5: many accepted moves, then incremental == fresh, and recompute == fresh
    for _ in range(n_moves):
        j = int(rng.integers(n))
        trial = pos[:, j] + rng.uniform(-step_size, step_size, (nw, 3))
        p = part.propose(ks, pos, state, j, trial, 0)
        ok = np.isfinite(p.log_ratio) & (True if p.sign is None else p.sign != 0)
        part.accept(ks, state, j, ok, p)
        pos[ok, j] = trial[ok]
    inc = part.evaluate(ks, pos, 0, state)
    ref = fresh(pos)
    for name in ("value", "grad", "lap"):
        out[f"update_{name}"] = assert_close(f"{name} after incremental updates vs fresh",
                                       getattr(inc, name), getattr(ref, name), update_tol,
                                       update_tol)
    assert np.array_equal(sign(inc), sign(ref)), "sign after incremental updates != fresh"
    new_state, diag = part.recompute(ks, pos, 0, state)
    assert isinstance(diag, dict), f"recompute must return a dict, got {type(diag).__name__}"
    assert_state_equal(new_state, ref.state, update_tol, update_tol, "recompute")
    return out
