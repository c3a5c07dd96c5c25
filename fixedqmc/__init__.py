"""fixedqmc: fixed-point numerics and precision exploration for quantum Monte Carlo.

The public fixed-point API::

    fmt = fixedqmc.QFormat.parse("Q1.36")
    x = fixedqmc.Fixed.from_float([0.1, -0.7], fmt)
    y = fixedqmc.mul(x, x, "Q1.36", rounding="half_even", overflow="saturate")
    policy = fixedqmc.parse_precision("default=float64,potential=fixed:32")

Error bounds of a one-source kernel at a precision, beside the errors measured
(:mod:`fixedqmc.numerics.kernel_bound`)::

    res = fixedqmc.bound_kernel(spec, kernel, {"x": x}, "y", "fixed:24")
    res.table()  # per output: largest error, largest bound, their ratio, the worst element

and of a whole system built at a trial precision, per kernel output, energy part and the
local energy (:mod:`fixedqmc.qmc.bounds`)::

    res = fixedqmc.bound(system, positions)

What a system's data path costs in hardware, from the operations the emulation counted
(:mod:`fixedqmc.cost`, ``docs/cost_models.md``)::

    counts = fixedqmc.count_operations(system, positions)  # per walker and per move
    rows = fixedqmc.hardware_cost(system, positions, "fpga-dsp48e2")  # DSP, LUTs, memory
"""

from fixedqmc import _numba_cache, _numba_rounds

_numba_cache.install()  # before any compiled kernel is defined
_numba_rounds.install()  # before any is compiled

import warnings  # noqa: E402

from numba.core.errors import NumbaIRAssumptionWarning  # noqa: E402

# numba's pedantic IR check warns about variables of inlined kernel operations; harmless
warnings.filterwarnings("ignore", category=NumbaIRAssumptionWarning)

from fixedqmc.errors import (FixedOverflowError, FixedQMCError, FormatError, ModeError,
                             PrecisionSpecError)
from fixedqmc.numerics.bound_run import KernelBound, bound_kernel
from fixedqmc.numerics.fixed import (Fixed, accumulate, add, cast, compare, fsum, mul, neg, shift,
                                     sub)
from fixedqmc.numerics.modes import OVERFLOW_MODES, ROUNDING_MODES
from fixedqmc.numerics.overflow import OverflowLog, default_log
from fixedqmc.numerics.policy import Precision, PrecisionPolicy, parse_precision
from fixedqmc.numerics.qformat import QFormat
from fixedqmc.qmc.bounds import bound
from fixedqmc.qmc.counts import count_operations, hardware_cost

__all__ = [
    "Fixed", "QFormat", "OverflowLog", "default_log", "Precision", "PrecisionPolicy",
    "parse_precision", "add", "sub", "mul", "neg", "cast", "shift", "compare", "fsum",
    "accumulate", "ROUNDING_MODES", "OVERFLOW_MODES", "FixedQMCError", "FormatError",
    "ModeError", "PrecisionSpecError", "FixedOverflowError", "KernelBound", "bound_kernel",
    "bound", "count_operations", "hardware_cost",
]
