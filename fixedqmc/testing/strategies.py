"""Hypothesis strategies for property-based tests of code built on fixedqmc.

Fixed point: :func:`qformats`, :func:`qformats_scaled` (formats, also with negative integer
bits), :func:`raw_words`, :func:`fixed_operands`, :func:`values_in` (float64 values a format
holds, inside :func:`fixed_range`); the mode strategies :data:`rounding_modes`,
:data:`deterministic_rounding`, :data:`overflow_modes`.  Floating-point formats:
:func:`float_formats`, :func:`float_format_values`, :func:`float_op_operands`.  Precisions
and kernels: :func:`precisions`, :func:`precision_specs` (spec strings of
:mod:`fixedqmc.numerics.policy`), :func:`kernel_arrays` (inputs inside a
:class:`~fixedqmc.numerics.kernel_spec.KernelSpec`'s declared ranges).  Systems:
:func:`walker_positions` (positions of any system of the protocol
:mod:`fixedqmc.qmc.system`).  Files: :func:`damaged_bytes`.

Every strategy is a function of hypothesis' draws only (no global random state): a failing
example replays and shrinks.  Where a numpy ``Generator`` is used, its seed is drawn.

hypothesis is an optional dependency: ``pip install hypothesis`` (or the ``test`` extra,
``pip install 'fixedqmc[test]'``).
"""

from __future__ import annotations

try:
    from hypothesis import strategies as st
except ImportError as exc:  # an optional dependency
    raise ImportError(
        "fixedqmc.testing.strategies needs hypothesis, an optional dependency of fixedqmc: "
        "pip install hypothesis (or pip install 'fixedqmc[test]')") from exc

import math
import re
from dataclasses import replace
from fractions import Fraction

import numpy as np

from fixedqmc.numerics.modes import OVERFLOW_MODES, ROUNDING_MODES
from fixedqmc.numerics.qformat import MAX_WORD_BITS, QFormat

__all__ = [
    "damaged_bytes", "deterministic_rounding", "fixed_operands", "fixed_range",
    "float_format_values", "float_formats", "float_op_operands", "kernel_arrays",
    "overflow_modes", "precision_specs", "precisions", "qformats", "qformats_scaled",
    "raw_words", "rounding_modes", "values_in", "walker_positions",
]

#: Any rounding mode of :mod:`fixedqmc.numerics.modes` (``stochastic`` included).
rounding_modes = st.sampled_from(ROUNDING_MODES)
#: Any rounding mode but ``stochastic``.
deterministic_rounding = st.sampled_from([m for m in ROUNDING_MODES if m != "stochastic"])
#: Any overflow mode that produces a value (``wrap``, ``saturate``; not ``raise``).
overflow_modes = st.sampled_from([m for m in OVERFLOW_MODES if m != "raise"])


# ---------------------------------------------------------------------- fixed point --
@st.composite
def qformats(draw, max_word=64, signed=None, min_word=1):
    """A valid :class:`QFormat` with integer bits >= 0: signed or unsigned (``signed``
    fixes it), word ``min_word``..``max_word`` bits, any integer/fraction split.

    Biased towards the edges: the narrowest and widest words, all-integer and all-fraction
    formats."""
    s = draw(st.booleans()) if signed is None else signed
    lo = max(min_word, 2 if s else 1)
    word = draw(st.one_of(st.integers(lo, max_word), st.sampled_from([lo, max_word])))
    magnitude = word - int(s)
    ib = draw(st.one_of(st.integers(0, magnitude), st.sampled_from([0, magnitude])))
    return QFormat(s, ib, magnitude - ib)


@st.composite
def raw_words(draw, fmt: QFormat):
    """A raw word of ``fmt`` as a Python int in [fmt.min_raw, fmt.max_raw], biased to min,
    max, 0, +-1 and the tie patterns."""
    edges = [fmt.min_raw, fmt.max_raw, 0, min(1, fmt.max_raw), max(-1, fmt.min_raw)]
    return draw(st.one_of(st.integers(fmt.min_raw, fmt.max_raw), st.sampled_from(edges)))


@st.composite
def fixed_operands(draw, n_min=1, n_max=8, **fmt_kwargs):
    """``(format, list of n_min..n_max raw words)`` for one operand array; the format is
    drawn by :func:`qformats` with ``fmt_kwargs``."""
    fmt = draw(qformats(**fmt_kwargs))
    words = draw(st.lists(raw_words(fmt), min_size=n_min, max_size=n_max))
    return fmt, words


@st.composite
def qformats_scaled(draw, max_word=64, signed=None):
    """A valid :class:`QFormat`, negative integer bits included (frac above the word's
    magnitude bits, e.g. ``UQ-10.26``): word 1..max_word bits, frac 0..64, biased to the
    edges."""
    s = draw(st.booleans()) if signed is None else signed
    lo = 2 if s else 1
    word = draw(st.one_of(st.integers(lo, max_word), st.sampled_from([lo, max_word])))
    frac = draw(st.one_of(st.integers(0, 64), st.sampled_from([0, word - int(s), 64])))
    return QFormat(s, word - int(s) - frac, frac)


def _float_inside(bound: Fraction, up: bool) -> float:
    """The float64 nearest to ``bound`` on the side of the inside of a range (``up``: the
    least float >= bound, else the greatest float <= bound)."""
    x = float(bound)
    if up and Fraction(x) < bound:
        x = math.nextafter(x, math.inf)
    elif not up and Fraction(x) > bound:
        x = math.nextafter(x, -math.inf)
    return x


def fixed_range(fmt: QFormat | str) -> tuple[float, float]:
    """``(lo, hi)``: the least and greatest float64 inside [fmt.min, fmt.max], computed
    exactly (``fmt.max`` of a word wider than 53 bits is rounded and may lie above the
    format's true maximum)."""
    fmt = QFormat.parse(fmt)
    scale = 1 << fmt.frac_bits
    return (_float_inside(Fraction(fmt.min_raw, scale), up=True),
            _float_inside(Fraction(fmt.max_raw, scale), up=False))


def values_in(fmt: QFormat | str):
    """A float64 (Python float) inside the range of the fixed format ``fmt``: ``fmt.min
    <= x <= fmt.max`` exactly, so it converts into ``fmt`` without overflow under every
    rounding mode (the range's ends are on the format's grid).

    Drawn from any float in the range (subnormals included) and biased to the grid (raw
    words of :func:`raw_words`), to ties half-way between grid points, and to the ends of
    the range, 0 and +-1 ulp of the format."""
    fmt = QFormat.parse(fmt)
    lo, hi = fixed_range(fmt)
    scale = 1 << fmt.frac_bits

    def clamp(v: Fraction) -> float:
        return min(max(float(v), lo), hi)

    grid = raw_words(fmt).map(lambda raw: clamp(Fraction(raw, scale)))
    ties = (st.integers(fmt.min_raw, fmt.max_raw - 1).map(
        lambda raw: clamp(Fraction(2 * raw + 1, 2 * scale)))
        if fmt.max_raw > fmt.min_raw else grid)
    ulp = fmt.resolution
    edges = sorted({lo, hi} | {v for v in (0.0, ulp, -ulp) if lo <= v <= hi})
    return st.one_of(st.floats(lo, hi), grid, ties, st.sampled_from(edges))


# ------------------------------------------------ floating-point formats (float_format) --
@st.composite
def float_formats(draw, fn=None):
    """A valid :class:`~fixedqmc.numerics.float_format.FloatFormat`: exponent bits E 2..11,
    mantissa bits M 1..52 (biased to the ends and the named formats' widths), subnormals
    on/off, overflow to inf or saturating, the fn flavour (E <= 10) sometimes (``fn`` True
    or False fixes it)."""
    from fixedqmc.numerics.float_format import FloatFormat

    e = draw(st.one_of(st.integers(2, 11), st.sampled_from([2, 4, 5, 8, 11])), label="E")
    m = draw(st.one_of(st.integers(1, 52), st.sampled_from([1, 2, 3, 7, 10, 23, 52])),
             label="M")
    use_fn = (draw(st.booleans(), label="fn") if fn is None else fn) and e <= 10
    return FloatFormat(e, m, subnormals=draw(st.booleans(), label="subnormals"),
                       overflow=draw(st.sampled_from(["inf", "saturate"]), label="overflow"),
                       fn=use_fn)


def _to_float(v):
    """float of a Fraction, overflowing to inf (float() would raise)."""
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


@st.composite
def float_format_values(draw, fmt):
    """A float64 input for a cast into the float format ``fmt``, biased to the format's
    grid: exact values, ties and near-ties (1/2 +- 2**-k of an ulp), the subnormal range
    and its boundary with the normals, the overflow boundary (max, max + ulp/2,
    2**(emax+1)), signed zeros and specials (inf, nan, float64 subnormals); else any
    float64."""
    kind = draw(st.sampled_from(["grid", "grid", "grid", "any", "special"]), label="kind")
    if kind == "any":
        return draw(st.floats(allow_nan=True, allow_infinity=True, width=64))
    if kind == "special":
        return draw(st.sampled_from([0.0, -0.0, float("inf"), float("-inf"), float("nan"),
                                     5e-324, -5e-324, fmt.max_finite, -fmt.min_subnormal]))
    mb = fmt.man_bits
    et = draw(st.one_of(st.integers(fmt.emin - 3, fmt.emax + 1),
                        st.sampled_from([fmt.emin - 1, fmt.emin, fmt.emax, fmt.emax + 1])),
              label="exponent")
    top = (1 << (mb + 1)) - 1
    n = draw(st.one_of(st.integers(0, top),
                       st.sampled_from([0, 1, 2, (1 << mb) - 1, 1 << mb, top - 1, top])),
             label="significand")
    k = draw(st.integers(1, 70), label="k")
    d = draw(st.sampled_from([Fraction(0), Fraction(1, 2), Fraction(1, 4), Fraction(3, 4),
                              Fraction(1, 2) - Fraction(1, 2**k),
                              Fraction(1, 2) + Fraction(1, 2**k), Fraction(1, 2**k),
                              1 - Fraction(1, 2**k)]), label="offset")
    v = _to_float((n + d) * Fraction(2) ** (et - mb))
    return -v if draw(st.booleans(), label="negative") else v


@st.composite
def float_op_operands(draw, fmt):
    """``(a, b)`` float64 operands for an arithmetic operation rounded into the float
    format ``fmt``: each biased to ``fmt``'s grid and ties (:func:`float_format_values`),
    and the pair biased to cancellation (``b ~ -a``, ``b = -a``, ``b = a``), to a tiny
    second operand (sticky bits far below ``a``'s), and to zeros of either sign."""
    a = draw(float_format_values(fmt), label="a")
    rel = draw(st.sampled_from(["free", "free", "near", "same", "neg", "tiny", "zero"]),
               label="relation")
    if rel == "free" or not math.isfinite(a):
        b = draw(float_format_values(fmt), label="b")
    elif rel == "near":
        k = draw(st.integers(-3, 3), label="ulps")
        b = -a
        for _ in range(abs(k)):
            b = math.nextafter(b, math.inf if k > 0 else -math.inf)
    elif rel == "same":
        b = a
    elif rel == "neg":
        b = -a
    elif rel == "tiny":
        e = draw(st.integers(1, 200), label="gap")
        b = math.ldexp(draw(st.floats(0.5, 1.0, exclude_max=True)), math.frexp(a)[1] - e)
        b = -b if draw(st.booleans(), label="negative") else b
    else:
        b = draw(st.sampled_from([0.0, -0.0]), label="zero")
    if draw(st.booleans(), label="swap"):
        a, b = b, a
    return a, b


# ----------------------------------------------------------- precision specs (policy) --
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@st.composite
def precisions(draw, *, fixed_only=False, roundings=ROUNDING_MODES,
               overflows=OVERFLOW_MODES):
    """One precision of the spec grammar (:mod:`fixedqmc.numerics.policy`) as a string:
    ``float64``, ``float32``, a float format (a name such as ``bfloat16``, or
    ``float:e<E>m<M>:<rounding>:<options>`` of :func:`float_formats`) (unless
    ``fixed_only``), or ``fixed:<core>`` with an optional
    ``:<rounding>[:<overflow>]``, the modes drawn from ``roundings`` and ``overflows``
    (names of :mod:`fixedqmc.numerics.modes`; a mode left out of the string is the
    default, half_even and saturate, so it is written out when the default is not
    allowed).  ``<core>`` is a format (``Q1.36``, ``UQ-10.26`` or the fxpmath form
    ``fxp-s38/36``, negative integer bits included) or a word width 1..64."""
    roundings, overflows = list(roundings), list(overflows)
    if not roundings or not overflows:
        raise ValueError("precisions: roundings and overflows must not be empty")
    kinds = ["fixed"] if fixed_only else ["float64", "float32", "fixed", "float"]
    kind = draw(st.sampled_from(kinds), label="kind")
    if kind == "float":
        from fixedqmc.numerics.float_format import NAMED_FORMATS, ROUNDINGS

        named = draw(st.sampled_from(sorted(set(NAMED_FORMATS) - {"float32", "float64"})),
                     label="named format")
        fmt = draw(st.one_of(st.just(NAMED_FORMATS[named]), float_formats()), label="format")
        rounding = draw(st.sampled_from(ROUNDINGS), label="float rounding")
        return draw(st.sampled_from([named, replace(fmt, rounding=rounding).spec]),
                    label="float spec")
    if kind != "fixed":
        return kind
    fmt = draw(st.one_of(qformats(), qformats_scaled()), label="format")
    core = draw(st.one_of(st.sampled_from([str(fmt), fmt.to_fxp()]),
                          st.integers(1, MAX_WORD_BITS).map(str)), label="core")
    forms = ["rounding+overflow"]
    if "saturate" in overflows:
        forms.append("rounding")
        if "half_even" in roundings:
            forms.append("bare")
    form = draw(st.sampled_from(forms), label="modes")
    if form == "bare":
        return f"fixed:{core}"
    rounding = draw(st.sampled_from(roundings), label="rounding")
    if form == "rounding":
        return f"fixed:{core}:{rounding}"
    return f"fixed:{core}:{rounding}:{draw(st.sampled_from(overflows), label='overflow')}"


def _kernel_variables(kernels) -> dict:
    """``{kernel name: tuple of variable names}`` of a sequence of kernel names or a mapping
    kernel name -> KernelSpec (``system.kernels``) or -> variable names."""
    if isinstance(kernels, str):
        kernels = [kernels]
    if hasattr(kernels, "items"):
        out = {}
        for name, value in kernels.items():
            names = value.names if hasattr(value, "names") else value
            out[str(name)] = tuple(str(v) for v in names)
    else:
        out = {str(name): () for name in kernels}
    for name, variables in out.items():
        for target in (name, *variables):
            if not _NAME_RE.match(target) or target == "default":
                raise ValueError(f"precision_specs: {target!r} cannot be a kernel or "
                                 "variable name of a spec (an identifier other than "
                                 "'default')")
    return out


@st.composite
def precision_specs(draw, kernels=(), *, floats=True, roundings=ROUNDING_MODES,
                    overflows=OVERFLOW_MODES, max_variables=3):
    """A precision spec string that :func:`fixedqmc.numerics.policy.parse_precision`
    accepts: comma-separated items, each a precision of :func:`precisions`, optionally
    after a target (``default=``, ``kernel=``, ``kernel.variable=``), with optional spaces
    after commas and around ``=``.

    ``kernels``: kernel names (a sequence), or a mapping from kernel name to its
    :class:`~fixedqmc.numerics.kernel_spec.KernelSpec` or variable names (e.g. a system's
    ``kernels``).  Without kernels the spec is a single default item (``float32``,
    ``default=fixed:Q1.36:floor``).  With kernels, some of them get their own precision,
    and with variable names up to ``max_variables`` variables per kernel get one of their
    own (:meth:`KernelSpec.resolve` accepts the spec; a word width may still be too narrow
    for a variable's declared range).  The default
    item may be left out when another item is there, each kernel is named at most once and
    items come in any order.  ``floats=False``: fixed precisions only (the default item is
    then always written, since leaving it out means float64)."""
    known = _kernel_variables(kernels)
    precision = precisions(fixed_only=not floats, roundings=roundings, overflows=overflows)
    eq = draw(st.sampled_from(["=", " = "]), label="equals")
    sep = draw(st.sampled_from([",", ", "]), label="separator")

    default = draw(precision, label="default")
    default_form = draw(st.sampled_from(["bare", "explicit", "omitted"] if known and floats
                                        else ["bare", "explicit"]), label="default form")
    items = []
    chosen = draw(st.lists(st.sampled_from(sorted(known)), unique=True), label="kernels") \
        if known else []
    kernel_precision = {}
    for k in chosen:
        kernel_precision[k] = draw(precision, label=f"{k}")
        items.append(f"{k}{eq}{kernel_precision[k]}")
    for k, variables in sorted(known.items()):
        if not variables:
            continue
        for v in draw(st.lists(st.sampled_from(variables), unique=True,
                               max_size=max_variables), label=f"{k} variables"):
            items.append(f"{k}.{v}{eq}{draw(precision, label=f'{k}.{v}')}")
    if default_form == "bare" or (default_form == "omitted" and not items):
        items.append(default)
    elif default_form == "explicit":
        items.append(f"default{eq}{default}")
    return sep.join(draw(st.permutations(items), label="order"))


# ------------------------------------------------------------------ kernel inputs --
@st.composite
def kernel_arrays(draw, spec, n, *, names=None, ranges=None):
    """``{variable name: float64 array (n,)}`` for the variables of the
    :class:`~fixedqmc.numerics.kernel_spec.KernelSpec` ``spec`` (only those in ``names``,
    if given), every value inside the variable's declared range [lo, hi], or inside
    ``ranges[name]`` (the first two entries of a tuple, e.g. a range profile's (min, max,
    ...)) where given.  Values are biased to the ends of the range and 0.  ``n``: an int
    or a strategy drawing one (one n for all the arrays)."""
    from hypothesis.extra import numpy as hnp

    if isinstance(n, st.SearchStrategy):
        n = draw(n, label="n")
    if names is not None:
        unknown = set(names) - {v.name for v in spec.variables}
        if unknown:
            raise ValueError(f"kernel_arrays: kernel {spec.name!r} has no variable(s) "
                             f"{', '.join(sorted(unknown))}")
    out = {}
    for v in spec.variables:
        if names is not None and v.name not in names:
            continue
        r = (ranges or {}).get(v.name, (v.lo, v.hi))
        lo, hi = float(r[0]), float(r[1])
        if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
            raise ValueError(f"kernel_arrays: range [{lo}, {hi}] of {spec.name}.{v.name} "
                             "must be finite with lo <= hi")
        edges = sorted({lo, hi} | ({0.0} if lo <= 0.0 <= hi else set()))
        elements = st.one_of(st.floats(lo, hi), st.sampled_from(edges))
        out[v.name] = draw(hnp.arrays(np.float64, n, elements=elements), label=v.name)
    return out


# ------------------------------------------------------------------ walker positions --
@st.composite
def walker_positions(draw, system, n_walkers, *, max_displacement=0.05, wrap=True):
    """Positions (n_walkers, N, 3), float64, of a system of the protocol
    :mod:`fixedqmc.qmc.system`: the system's own ``initial_positions(n_walkers, rng)``
    with ``rng = numpy.random.default_rng(seed)`` of a drawn seed, so the configurations
    are realistic ones (compact clusters, atoms on their sites, electrons in the cell),
    each coordinate moved by a uniform displacement in [-d, d] with d drawn from [0,
    max_displacement] (in the system's length unit; d = 0 often, the displacement's seed
    drawn too), then passed through ``system.wrap`` (unless ``wrap=False``).

    The positions depend only on the draws (if ``initial_positions`` uses only its
    ``rng``).  They are not checked for psi != 0: a large ``max_displacement`` can move
    particles into a trial function's core; filter with ``hypothesis.assume`` if needed.
    ``n_walkers``: an int or a strategy drawing one."""
    if isinstance(n_walkers, st.SearchStrategy):
        n_walkers = draw(n_walkers, label="n_walkers")
    if not (math.isfinite(max_displacement) and max_displacement >= 0):
        raise ValueError(f"walker_positions: max_displacement must be finite and >= 0, "
                         f"got {max_displacement!r}")
    seed = draw(st.integers(0, 2**32 - 1), label="seed")
    pos = np.array(system.initial_positions(n_walkers, np.random.default_rng(seed)),
                   np.float64)
    expected = (n_walkers, system.n_particles, 3)
    if pos.shape != expected:
        raise AssertionError(f"{type(system).__name__}.initial_positions({n_walkers}, rng) "
                             f"returned shape {pos.shape}, expected {expected}")
    d = draw(st.one_of(st.just(0.0), st.floats(0.0, max_displacement)), label="displacement")
    if d > 0:
        jitter = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="jitter seed"))
        pos += jitter.uniform(-d, d, pos.shape)
    if wrap:
        pos = np.array(system.wrap(pos), np.float64)
    return pos


# ------------------------------------------------------------------------------ files --
@st.composite
def damaged_bytes(draw, blob: bytes, max_flips: int = 3):
    """``blob`` truncated at a drawn length (the whole of it included) with up to
    ``max_flips`` bytes of what is left XOR-ed with nonzero masks: a file cut short by a
    crash or altered on disk."""
    cut = draw(st.integers(0, len(blob)), label="cut")
    flips = draw(st.lists(st.tuples(st.integers(0, max(len(blob) - 1, 0)),
                                    st.integers(1, 255)), max_size=max_flips), label="flips")
    damaged = bytearray(blob[:cut])
    for i, mask in flips:
        if i < cut:
            damaged[i] ^= mask
    return bytes(damaged)
