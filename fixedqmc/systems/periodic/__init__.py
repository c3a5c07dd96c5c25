"""Periodic systems: simulation cells (3D and 2D), Ewald summation (seed 000, Eq. 2-6) and
its one-source kernels at any precision.

* :mod:`~fixedqmc.systems.periodic.cell`: :class:`Cell`, lattices, the HEG cell;
* :mod:`~fixedqmc.systems.periodic.ewald`: parameters (gamma, cut-offs) and the float64
  reference Ewald energy, its parts and single-particle moves;
* :mod:`~fixedqmc.systems.periodic.erfc_form`: the fixed-point form of ``erfc(x)``;
* :mod:`~fixedqmc.systems.periodic.kernels`, :mod:`~fixedqmc.systems.periodic.evaluator`:
  the ``ewald_real`` and ``ewald_recip`` kernels and their host driver.

See ``docs/periodic.md``.
"""

from fixedqmc.systems.periodic.cell import Cell, heg_cell
from fixedqmc.systems.periodic.ewald import (EwaldParameters, EwaldParts, ewald_energy,
                                             ewald_parameters)

__all__ = ["Cell", "heg_cell", "EwaldParameters", "EwaldParts", "ewald_energy",
           "ewald_parameters"]
