"""Two-region quadratic interpolation tables in s = r**2 (HAQMC, seed 002, Sec. 3).

:mod:`two_region` builds and evaluates the tables in float64, :mod:`coeff_files` writes and
reads the HAQMC coefficient files, :mod:`error_bounds` measures the error and states an
a-priori bound; :mod:`lut_exp` is the lookup-table exponential (seed 001, Appendix B).
:mod:`evaluate` evaluates a table with the one-source compiled kernel at float64, float32
or fixed point; :mod:`builtin` names the built-in pair functions and resolves user ones.
"""

from fixedqmc.tables.builtin import (BuiltinFunction, builtin_functions, builtin_names,
                                     get_builtin, resolve_function)
from fixedqmc.tables.coeff_files import check_table, read_table, write_table
from fixedqmc.tables.error_bounds import bin_errors, error_report, error_vs_bins
from fixedqmc.tables.evaluate import TableEvaluator, evaluate_table
from fixedqmc.tables.lut_exp import FixedExpSpec, LutExp, lut_exp_error
from fixedqmc.tables.two_region import (
    COEF_NAMES,
    DEFAULT_N1,
    DEFAULT_N_BIN,
    DEFAULT_N_SEG,
    SIGMA_RULES,
    TRANSFORMS,
    LossyTableError,
    LossyTableWarning,
    QuantizationLoss,
    TableError,
    TwoRegionTable,
    build_table,
    find_sigma,
    minimax_quadratic,
    quantization_loss,
    quantize_table,
)

__all__ = [
    "COEF_NAMES", "DEFAULT_N1", "DEFAULT_N_BIN", "DEFAULT_N_SEG", "SIGMA_RULES", "TRANSFORMS",
    "TableError", "TwoRegionTable", "bin_errors", "build_table", "check_table", "error_report",
    "error_vs_bins", "find_sigma", "minimax_quadratic", "quantize_table", "read_table",
    "LossyTableError", "LossyTableWarning", "QuantizationLoss", "quantization_loss",
    "write_table", "LutExp", "FixedExpSpec", "lut_exp_error", "TableEvaluator",
    "evaluate_table", "builtin_functions", "BuiltinFunction", "builtin_names", "get_builtin",
    "resolve_function",
]
