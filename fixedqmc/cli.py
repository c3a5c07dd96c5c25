"""The ``fixedqmc`` command line.

Subcommands::

    fixedqmc info                 versions, numba threading layer and thread count
    fixedqmc bench numerics       fixed-point kernel vs APyTypes, fxpmath and float64
    fixedqmc bench tables         two-region table evaluation, float64 and fixed (elements/s)
    fixedqmc bench lutexp         LUT exponential, float64 / float32 / fixed (elements/s)
    fixedqmc tables ...           generate, check and evaluate two-region tables
    fixedqmc lutexp               error report of a lookup-table exponential
"""

from __future__ import annotations

import argparse
import platform
import sys
from importlib import metadata

from fixedqmc.errors import FixedQMCError
from fixedqmc.tables.cli import add_table_commands


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def cmd_info(args: argparse.Namespace) -> int:
    import numba

    from fixedqmc.numerics.kernel import N_CHUNKS

    try:  # run a tiny parallel function so numba picks its threading layer
        import numpy as np
        from numba import prange

        @numba.njit(parallel=True)
        def _touch(n):
            s = 0.0
            for i in prange(n):
                s += np.sqrt(i)
            return s

        _touch(100)
        layer = numba.threading_layer()
    except Exception as exc:  # report, do not fail: info is a diagnostic
        layer = f"unavailable ({exc})"
    print(f"fixedqmc {_version('fixedqmc')}")
    print(f"python {platform.python_version()} on {platform.platform()}")
    for dist in ("numpy", "scipy", "pandas", "matplotlib", "numba", "llvmlite", "fxpmath",
                 "apytypes", "hypothesis"):
        print(f"  {dist:<11} {_version(dist)}")
    print(f"numba threading layer: {layer}")
    print(f"numba threads: {numba.get_num_threads()} (NUMBA_NUM_THREADS={numba.config.NUMBA_NUM_THREADS})")
    print(f"kernel chunks per call (fixed, thread-independent): {N_CHUNKS}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    if args.what == "numerics":
        from fixedqmc.bench.numerics import main

        return main(n=args.n or 1_000_000, repeats=args.repeats)
    if args.what == "tables":
        from fixedqmc.bench.tables import main_tables

        return main_tables(n=args.n or 10_000_000, repeats=args.repeats)
    if args.what == "lutexp":
        from fixedqmc.bench.tables import main_lutexp

        return main_lutexp(n=args.n or 1_000_000, repeats=args.repeats)
    raise FixedQMCError(f"unknown benchmark {args.what!r}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fixedqmc",
        description="Fixed-point numerics and precision exploration for quantum Monte Carlo.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    info = sub.add_parser("info", help="print versions, numba threading layer and thread count")
    info.set_defaults(func=cmd_info)

    bench = sub.add_parser("bench", help="run a benchmark and print measured figures and ratios")
    bench.add_argument("what", choices=["numerics", "tables", "lutexp"], help="which benchmark")
    bench.add_argument("--n", type=int, default=None,
                       help="elements (default 1e6; 1e7 for tables)")
    bench.add_argument("--repeats", type=int, default=5, help="timed repeats, best taken")
    bench.set_defaults(func=cmd_bench)

    add_table_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except FixedQMCError as exc:
        print(f"fixedqmc: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
