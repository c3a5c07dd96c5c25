"""Periodic systems: simulation cells (3D and 2D), Ewald summation (seed 000, Eq. 2-6) and
its one-source kernels at any precision.

* :mod:`~fixedqmc.systems.periodic.cell`: :class:`Cell`, lattices, the HEG cell;
* :mod:`~fixedqmc.systems.periodic.ewald`: parameters (gamma, cut-offs) and the float64
  reference Ewald energy, its parts and single-particle moves;
* :mod:`~fixedqmc.systems.periodic.erfc_form`: the fixed-point forms of ``erfcx(x)``;
* :mod:`~fixedqmc.systems.periodic.kernels`, :mod:`~fixedqmc.systems.periodic.evaluator`:
  the ``ewald_real`` and ``ewald_recip`` kernels and their host driver;
* :mod:`~fixedqmc.systems.periodic.ewald_slab`, :mod:`~fixedqmc.systems.periodic.slab_kernels`,
  :mod:`~fixedqmc.systems.periodic.slab_evaluator`: charges off the plane of a 2D cell
  (Eq. 5-6 with heights), the float64 reference and the kernels at any precision;
* :mod:`~fixedqmc.systems.periodic.shells`, :mod:`~fixedqmc.systems.periodic.plane_waves`,
  :mod:`~fixedqmc.systems.periodic.sampling`, :mod:`~fixedqmc.systems.periodic.hartree_fock`,
  :mod:`~fixedqmc.systems.periodic.heg`, :mod:`~fixedqmc.systems.periodic.plugin`: the
  homogeneous electron gas (closed shells, plane-wave orbitals, exact determinant samples,
  the Hartree-Fock energy of a finite cell, the system and its ``heg`` plug-in);
* :mod:`~fixedqmc.systems.periodic.jastrow`, :mod:`~fixedqmc.systems.periodic.jastrow_u_kernel`,
  :mod:`~fixedqmc.systems.periodic.jastrow_p_kernel`,
  :mod:`~fixedqmc.systems.periodic.jastrow_eval`: the two-body Jastrow factor u + p
  (Eq. 8-10), its float64 reference and its kernels at any precision;
* :mod:`~fixedqmc.systems.periodic.pair_geometry`: minimum-image pair geometry shared by
  the pair kernels.

See ``docs/periodic.md``.
"""

from fixedqmc.systems.periodic.cell import Cell, heg_cell
from fixedqmc.systems.periodic.ewald import (EwaldParameters, EwaldParts, ewald_energy,
                                             ewald_parameters)
from fixedqmc.systems.periodic.ewald_slab import slab_ewald_energy
from fixedqmc.systems.periodic.hartree_fock import hartree_fock_energy, madelung
from fixedqmc.systems.periodic.heg import ElectronGas
from fixedqmc.systems.periodic.jastrow import JastrowParameters, jastrow_parameters
from fixedqmc.systems.periodic.jastrow_eval import JastrowEvaluator
from fixedqmc.systems.periodic.shells import closed_shell_counts, occupied
from fixedqmc.systems.periodic.slab_evaluator import SlabEwaldEvaluator

__all__ = ["Cell", "heg_cell", "EwaldParameters", "EwaldParts", "ewald_energy",
           "ewald_parameters", "ElectronGas", "hartree_fock_energy", "madelung",
           "closed_shell_counts", "occupied", "JastrowParameters", "jastrow_parameters",
           "JastrowEvaluator", "slab_ewald_energy", "SlabEwaldEvaluator"]
