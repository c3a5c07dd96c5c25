"""One kernel source, every precision: the import point for kernel authors.

How a one-source kernel works (contexts, values, the kernel pattern):
:mod:`fixedqmc.numerics.kernel_core`.  This module re-exports the public names of the modules
that hold them, and importing it registers every generic operation with numba:

* :mod:`~fixedqmc.numerics.kernel_spec`: :class:`Variable`, :class:`KernelSpec`,
  :class:`KernelPrecision` (formats, contexts, encoding, decoding, overflow reports),
  :func:`symmetric_range`;
* :mod:`~fixedqmc.numerics.kernel_types`: :class:`FormatTable`, :class:`TypedContext`,
  :class:`FormatTableType`, :class:`FloatFormats`, :class:`Bounds`;
* :mod:`~fixedqmc.numerics.kernel_core`: :func:`is_fixed_context`,
  :func:`is_float_format_context`, :func:`is_bound_context` (the context kinds at typing time, for code that
  specialises on them);
* :mod:`~fixedqmc.numerics.kernel_elements`: :data:`N_CHUNKS`, :func:`n_chunks`,
  :func:`chunk_bounds`, :func:`chunk`, :func:`at`, :func:`quiet`, :func:`events`,
  :func:`is_quiet`;
* :mod:`~fixedqmc.numerics.kernel_arith`: :func:`load`, :func:`const`, :func:`add`,
  :func:`sub`, :func:`mul`, :func:`store`;
* :mod:`~fixedqmc.numerics.kernel_convert`: :func:`convert`;
* :mod:`~fixedqmc.numerics.kernel_lookup`: :func:`less`, :func:`uniform_bin`,
  :func:`log2_bin`;
* :mod:`~fixedqmc.numerics.kernel_accumulators`: :func:`acc_zero`, :func:`acc_add`,
  :func:`acc_value`, :func:`acc_fits`, :func:`acc_array`, :func:`acc_array_clear`,
  :func:`acc_array_add`, :func:`acc_array_value`.

Division, roots, the exponential, cosine and sine, rounding, abs, min/max and select:
:mod:`fixedqmc.numerics.kernel_ops`.
"""

from fixedqmc.numerics.kernel_accumulators import (acc_add, acc_array, acc_array_add,
                                                   acc_array_clear, acc_array_value, acc_fits,
                                                   acc_value, acc_zero)
from fixedqmc.numerics.kernel_arith import add, const, load, mul, store, sub
from fixedqmc.numerics.kernel_convert import convert
from fixedqmc.numerics.kernel_core import (is_bound_context, is_fixed_context,
                                           is_float_format_context)
from fixedqmc.numerics.kernel_elements import (N_CHUNKS, at, chunk, chunk_bounds, events,
                                               is_quiet, n_chunks, quiet)
from fixedqmc.numerics.kernel_lookup import less, log2_bin, uniform_bin
from fixedqmc.numerics.kernel_spec import (KernelPrecision, KernelSpec, Variable,
                                           shared_context_kind, symmetric_range)
# FormatTableType too: numba's on-disk cache indexes written when it was defined here pickled
# it under this module, and such an index must unpickle (to be found stale), not fail
from fixedqmc.numerics.kernel_types import (Bounds, FloatFormats, FormatTable,
                                            FormatTableType, TypedContext)

__all__ = ["Variable", "KernelSpec", "KernelPrecision", "symmetric_range",
           "shared_context_kind", "FormatTable", "FormatTableType",
           "TypedContext", "FloatFormats", "Bounds", "is_fixed_context",
           "is_float_format_context", "is_bound_context",
           "N_CHUNKS", "n_chunks", "chunk_bounds", "chunk", "at", "quiet",
           "events", "is_quiet", "load", "const", "add", "sub", "mul", "store", "convert",
           "less", "uniform_bin", "log2_bin", "acc_zero", "acc_add", "acc_value", "acc_fits",
           "acc_array", "acc_array_clear", "acc_array_add", "acc_array_value"]
