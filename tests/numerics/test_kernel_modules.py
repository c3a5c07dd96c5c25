"""The kernel modules behind ``fixedqmc.numerics.kernel``: names that numba's on-disk cache
pickled under ``kernel`` still resolve there, and operations compile once for all their call
sites where formats are read at run time."""

import pickle
from dataclasses import replace

import numpy as np
import pytest
from numba import njit
from numba.core import ir

from fixedqmc.errors import FixedQMCError
from fixedqmc.numerics import kernel_types
from fixedqmc.numerics.kernel import add, at, chunk, load, shared_context_kind, store
from fixedqmc.numerics.polynomial import A, B, BUC, C, QUADRATIC, U, UBUC, UC, Y


def test_a_cache_index_written_before_the_split_unpickles():
    # numba pickles the argument types of cached kernels into its index files; an index
    # written when the format table type lived in kernel.py names it there, and must load
    # (then be found stale by its source stamp) instead of raising AttributeError
    old_reference = b"cfixedqmc.numerics.kernel\nFormatTableType\n."
    assert pickle.loads(old_reference) is kernel_types.FormatTableType


def _sum_chain(ctx, x, out):
    # four additions, each into another variable of the quadratic kernel's spec
    e = at(chunk(ctx, 0), 0)
    a = load(e, x[0], A)
    t = add(e, a, load(e, x[1], B), UC)
    t = add(e, t, load(e, x[2], C), BUC)
    t = add(e, t, load(e, x[3], U), UBUC)
    out[0] = store(e, add(e, t, a, Y))


@pytest.mark.parametrize("spec", ["fixed:24", "bfloat16"])
def test_every_call_site_of_an_operation_shares_one_signature_at_run_time(spec):
    """Where formats are read at run time, variable ids are not part of an operation's
    signature: the four additions into four variables are one signature of `add`, compiled
    once, not four (docs/architecture.md, compile cost)."""
    kp = QUADRATIC.resolve(spec)
    kp = kp.at_runtime() if kp.kind == "formats" else kp  # (float formats: already)
    x = np.array([0.5, 0.25, -0.125, 0.375])
    ins = np.concatenate([kp.encode(name, x[i:i + 1], 0, None) for i, name in
                          enumerate("abcu")])
    out = np.zeros(1, kp.dtype)
    kernel = njit(_sum_chain)
    kernel(kp.context(0), ins, out)
    assert kp.decode("y", out)[0] == 1.5  # 0.5 + 0.25 - 0.125 + 0.375 + 0.5, exact
    typed = kernel.overloads[kernel.signatures[0]].type_annotation
    signatures = {sig.args for expr, sig in typed.calltypes.items()
                  if isinstance(expr, ir.Expr) and expr.op == "call"
                  and getattr(typed.typemap[expr.func.name], "typing_key", None) is add}
    assert len(signatures) == 1


def _two_kernels(cp, cq, xp, xq, out_p, out_q):
    # one compiled function running two kernels, each in its own context (a fused kernel)
    for c, x, out in ((cp, xp, out_p), (cq, xq, out_q)):
        e = at(chunk(c, 0), 0)
        out[0] = store(e, add(e, load(e, x[0], A), load(e, x[1], B), Y))


@pytest.mark.parametrize("emulated", ["fixed:24", "bfloat16"])
def test_a_fused_kernel_compiles_once_for_every_choice_of_emulated_kernels(emulated):
    """shared_context_kind puts a fused kernel's float64 kernels into the emulated ones'
    context kind: one compilation serves p emulated, q emulated and both (a sweep's kernel
    sets), and a float64 kernel there still computes the machine's float64 result."""
    specs = {k: replace(QUADRATIC, name=k) for k in "pq"}
    x = np.array([1.0 / 3.0, 2.0 ** -30])  # a + b rounds in float64, more in 24 bits
    kernel = njit(_two_kernels)
    for chosen in ("p", "q", "p,q"):
        spec = "default=float64," + ",".join(f"{k}={emulated}" for k in chosen.split(","))
        kps = shared_context_kind({k: s.resolve(spec) for k, s in specs.items()})
        ins = [np.concatenate([kps[k].encode(v, x[i:i + 1]) for i, v in enumerate("ab")])
               for k in "pq"]
        outs = [np.zeros(1, kps[k].dtype) for k in "pq"]
        kernel(kps["p"].context(0), kps["q"].context(0), *ins, *outs)
        for k, out in zip("pq", outs):
            y = kps[k].decode("y", out)[0]
            if k in chosen:
                assert y != x[0] + x[1]
            else:
                assert y == x[0] + x[1]
    assert len(kernel.signatures) == 1
    # without a fixed or float format, nothing changes: the typed float64 kernels
    f64 = {k: s.resolve("float64") for k, s in specs.items()}
    assert shared_context_kind(f64) == f64
    with pytest.raises(FixedQMCError, match="only a float64 precision"):
        QUADRATIC.resolve(emulated).in_float_context()
