"""What every benchmark prints about the machine it ran on: the CPU model and vector ISA,
thread counts, the load average and the fixed cost of one numba parallel call (a shared
machine shows up there first).  Benchmarks state their targets as ratios measured side by
side in one run, so that figures from different machines and loads stay comparable."""

from __future__ import annotations

import os
import platform
import time

import numpy as np

__all__ = ["cpu_info", "load_average", "parallel_call_latency", "print_machine"]


def cpu_info() -> dict:
    """CPU model, the widest vector ISA it reports, LLVM's name for it and thread counts."""
    model, flags = platform.processor() or "unknown", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model in ("unknown", platform.processor()):
                    model = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
    except OSError:
        pass
    isa = next((name for flag, name in (("avx512f", "AVX-512 (512-bit)"),
                                        ("avx2", "AVX2 (256-bit)"), ("avx", "AVX (256-bit)"),
                                        ("sse4_2", "SSE4.2 (128-bit)")) if flag in flags),
               "unknown" if not flags else "SSE2 or less")
    if "avx512f" in flags:
        extra = sorted(f for f in flags if f.startswith("avx512") and f != "avx512f")
        isa += f" with {', '.join(extra)}" if extra else ""
    out = {"model": model, "isa": isa, "cores": os.cpu_count()}
    try:
        import llvmlite.binding as ll
        out["llvm_cpu"] = ll.get_host_cpu_name()
    except Exception:  # pragma: no cover - informative only
        out["llvm_cpu"] = "unknown"
    import numba
    out["numba_threads"] = numba.get_num_threads()
    try:
        from pyscf import lib
        out["pyscf_threads"] = lib.num_threads()
    except Exception:  # pragma: no cover
        out["pyscf_threads"] = "?"
    env = [f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                             "MKL_NUM_THREADS") if k in os.environ]
    out["blas_threads"] = ", ".join(env) if env else f"default (all {os.cpu_count()} cores)"
    return out


_PROBE = None


def parallel_call_latency(calls: int = 300) -> float:
    """Median seconds of one call of a numba ``prange`` over 64 tiny chunks (the chunk count
    of our kernels): the fixed cost every parallel kernel call pays, which dominates when
    the kernels' work is small or the cores are shared with other processes."""
    global _PROBE
    if _PROBE is None:
        from numba import njit, prange

        @njit(parallel=True)
        def probe(out):
            for k in prange(out.shape[0]):
                out[k] += 1.0
        _PROBE = probe
    out = np.zeros(64)
    _PROBE(out)
    times = np.empty(calls)
    for i in range(calls):
        t0 = time.perf_counter()
        _PROBE(out)
        times[i] = time.perf_counter() - t0
    return float(np.median(times))


def load_average() -> str:
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover
        return "unavailable"


def print_machine() -> None:
    """Print the CPU, ISA, threads, load and parallel-call latency (start of a benchmark)."""
    info = cpu_info()
    print(f"CPU: {info['model']} ({info['cores']} cores; LLVM target {info['llvm_cpu']}); "
          f"vector ISA: {info['isa']}")
    print(f"threads: numba {info['numba_threads']}, PySCF/OpenMP {info['pyscf_threads']}, "
          f"BLAS {info['blas_threads']}")
    print(f"load average (1/5/15 min) at start: {load_average()}; one numba parallel call "
          f"(64 empty chunks) takes {parallel_call_latency() * 1e6:.3g} us (median)",
          flush=True)
