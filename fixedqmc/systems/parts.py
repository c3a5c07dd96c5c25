"""Parts of a Slater-Jastrow trial function: the part-level protocol.

A Slater-Jastrow trial function (seed 001, Eq. 5-7; seed 000, Eq. 1 and 7) is a product of
parts::

    psi = D_up D_down exp(J_1 + J_2 + ...)

one *determinant part* (:class:`~fixedqmc.systems.determinant_part.DeterminantPart`: the
per-spin Slater determinants of an orbital evaluator) and any number of *Jastrow parts*
(``exp(J_k)``: the molecule's electron-electron u,
:class:`~fixedqmc.systems.molecule.jastrow.PadeJastrow`; the electron gas's u + p, or either
term alone, :class:`~fixedqmc.systems.periodic.jastrow_eval.JastrowTerms`).  A system composes them with
a Hamiltonian (:class:`~fixedqmc.systems.slater.SlaterJastrow`), and
:func:`fixedqmc.testing.check_part` checks each part alone: gradients and Laplacians
against finite differences of its value, move ratios against two full evaluations, and
incrementally updated state against a fresh one.

A part ``P`` implements, for walker positions ``pos`` (n_w, N, 3) (the system's length
unit) and a kernel set ``ks`` (the system's, or a profiling or bounding copy of it: the
part runs its kernels in it, so one part serves every use):

``laplacian``
    ``"value"`` when :attr:`PartValues.lap` is ``lap_i P / P`` (a determinant), ``"log"``
    when it is ``lap_i ln|P|`` (a Jastrow part: ``lap_i J`` of ``P = exp(J)``).
``evaluate(ks, pos, step, state=None) -> PartValues``
    the part at ``pos``; ``state`` the walkers' per-walker state to use (None: build it).
``propose(ks, pos, state, i, new, step, grad=True) -> PartMove``
    particle ``i`` moved to ``new`` (n_w, 3): the part's ratio and, with ``grad``,
    ``grad_i ln|P|`` at ``new``.
``accept(ks, state, i, mask, move) -> None``
    the move committed for the walkers in ``mask`` (n_w,) bool: the part updates its
    state in place; the caller moves the positions and passes only walkers where every
    part's ratio is nonzero.
``recompute(ks, pos, step, state=None) -> (state, diagnostics)``
    a fresh state at ``pos`` and ``{name: value}`` of how far ``state`` (the incrementally
    updated one) had drifted from it (e.g. the inverse matrices' error).

State is a dict of arrays with the walker axis first whose keys no other part uses (the
determinant's ``inv0``, ``inv1``, ``ln_det``, ``sign``; Jastrow parts keep none).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class PartValues:
    """One part at a batch of walkers (float64, walker axis first).

    ``value`` (n_w,) ln|P|; ``sign`` (n_w,) the sign of P (None: P > 0); ``grad``
    (n_w, N, 3) grad_i ln|P| (1/length); ``lap`` (n_w, N) ``lap_i P / P`` or ``lap_i ln|P|``
    (1/length**2, the part's ``laplacian``); ``state`` the per-walker state consistent with
    these values."""

    value: np.ndarray
    sign: np.ndarray | None
    grad: np.ndarray
    lap: np.ndarray
    state: dict = field(default_factory=dict)


@dataclass
class PartMove:
    """One part's share of a proposed single-particle move.

    ``log_ratio`` (n_w,) ln|P'/P|; ``sign`` (n_w,) the sign of P'/P (None: positive);
    ``grad`` (n_w, 3) grad_i ln|P| at the new position (None when not asked for);
    ``saved`` the part's intermediates for ``accept``."""

    log_ratio: np.ndarray
    sign: np.ndarray | None
    grad: np.ndarray | None
    saved: Any = None
