"""Tools for testing systems and numerics built on fixedqmc.

:func:`check_system` (:mod:`fixedqmc.testing.system_check`) checks any system against the
system protocol: finite-difference gradients and Laplacians, move ratios, masked accepts,
incremental updates, walker-order and thread-count independence and ``wrap``;
:func:`check_part` (:mod:`fixedqmc.testing.part_check`) checks one part of a Slater-Jastrow
trial function alone (:mod:`fixedqmc.systems.parts`) in the same way.

:func:`assert_within_bound` (:mod:`fixedqmc.testing.bounds`) runs a kernel at a precision
and in the bound context and fails, naming the worst element, if a measured error exceeds
its rigorous bound (or the bound is infinite); :func:`assert_system_within_bound` does the
same for a whole system's evaluation (:func:`fixedqmc.bound`), naming the worst walker.

:mod:`fixedqmc.testing.strategies` holds hypothesis strategies (formats, raw words, values
inside a format's range, precision spec strings, kernel inputs inside their declared ranges,
walker positions).  hypothesis is an optional dependency (``pip install hypothesis`` or the
``test`` extra), so that module is imported explicitly::

    from fixedqmc.testing.strategies import precision_specs, values_in
"""

from fixedqmc.testing.bounds import assert_system_within_bound, assert_within_bound
from fixedqmc.testing.part_check import check_part
from fixedqmc.testing.system_check import check_system

__all__ = ["assert_system_within_bound", "assert_within_bound", "check_part", "check_system"]
