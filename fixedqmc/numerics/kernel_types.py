"""The format table of a typed fixed context as a numba type, and the markers of the
float-format and bound contexts.

A typed fixed context ``TypedContext((FormatTable, events, seed))`` carries its per-variable
formats in its *type*: numba types a :class:`FormatTable` as a :class:`FormatTableType`
holding the table, so every kernel operation reads the formats at typing time and is
compiled with them as constants (a compiled specialisation per set of formats).  The table
itself is no data at run time (an opaque model, unboxed to a dummy value).  Contexts are
built by :meth:`fixedqmc.numerics.kernel_spec.KernelPrecision.context`.
"""

from __future__ import annotations

from numba.core import types
from numba.extending import NativeValue, models, register_model, typeof_impl, unbox


class FormatTable:
    """Per-variable (signed, word bits, frac bits, rounding code, overflow code), carried in
    the *type* of a fixed context so that every operation is compiled with its formats as
    constants."""

    def __init__(self, table: tuple):
        self.table = tuple(tuple(int(x) for x in row) for row in table)
        self.numba_type = FormatTableType(self.table)  # typed once, not at every call
        #: the type of a :class:`TypedContext` of this table, built once as well
        self.context_type = types.Tuple((self.numba_type, types.Array(types.int64, 2, "C"),
                                         types.uint64))


class TypedContext(tuple):
    """A typed fixed context ``(FormatTable, events (N_CHUNKS, n) int64, seed uint64)``.

    A plain tuple holding a :class:`FormatTable` is typed by numba's dispatcher in Python,
    element by element, at every kernel call (73 us; a quarter of a fixed-point H2 sweep);
    this subclass is typed by a lookup of its table's :attr:`FormatTable.context_type`."""

    __slots__ = ()


class FormatTableType(types.Type):
    """The numba type of a :class:`FormatTable`: the table itself (a tuple of rows), so that
    two tables are one type exactly when their formats are equal."""

    def __init__(self, table: tuple):
        self.table = table
        super().__init__(name=f"FormatTable{table}")


register_model(FormatTableType)(models.OpaqueModel)


@typeof_impl.register(FormatTable)
def _typeof_table(val, c):
    return val.numba_type


@typeof_impl.register(TypedContext)
def _typeof_context(val, c):
    return val[0].context_type


@unbox(FormatTableType)
def _unbox_table(typ, obj, c):
    return NativeValue(c.context.get_dummy_value())


class _MarkerType(types.Type):
    """The numba type of a context marker (no data: unboxed to a dummy value)."""

    def __init__(self):
        super().__init__(name=type(self).__name__[:-len("Type")])


class FloatFormatsType(_MarkerType):
    """The numba type of the :class:`FloatFormats` marker."""


class BoundsType(_MarkerType):
    """The numba type of the :class:`Bounds` marker."""


class FloatFormats:
    """The marker that ends a float-format context ``(params, events, seed, FloatFormats())``
    (:meth:`fixedqmc.numerics.kernel_spec.KernelPrecision.context`): values are float64s
    in their variables' formats, each result rounded once into its variable's format (the
    parameters of every variable's format are data, read as the kernel runs)."""

    __slots__ = ()


class Bounds:
    """The marker that ends a bound context ``(params, events, seed, Bounds())``
    (:mod:`fixedqmc.numerics.kernel_bound`): values are ``(value, r, b)`` float64 triples,
    the float64 value and rigorous bounds on its own error and on a trial precision's."""

    __slots__ = ()


def _register_marker(cls, typ_cls):
    typ = typ_cls()
    register_model(typ_cls)(models.OpaqueModel)
    typeof_impl.register(cls)(lambda val, c: typ)
    unbox(typ_cls)(lambda t, obj, c: NativeValue(c.context.get_dummy_value()))
    return typ


FLOAT_FORMATS_TYPE = _register_marker(FloatFormats, FloatFormatsType)
BOUNDS_TYPE = _register_marker(Bounds, BoundsType)
