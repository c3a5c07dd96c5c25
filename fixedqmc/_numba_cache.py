"""Numba's on-disk cache, keyed by the source a compiled function can depend on.

Compiled kernels inline functions from other modules of the package, but numba invalidates a
cached function only when its own file changes, so editing the core could leave stale kernels
in the cache.  This locator stamps every fixedqmc function with a hash of the source files it
may import from.  The package's layers point down only (``docs/architecture.md``), so a
function in ``systems/`` sees its own system's folder (if any), the modules directly in
``systems/`` and in the package, ``tables/`` and ``numerics/``; one in ``tables/`` or
``numerics/`` sees those two and the package's own modules; a function anywhere else sees
the whole package.  The package's own modules leave out ``cli.py``, the top layer, which
nothing below imports (``tests/test_layers.py``): an edit to the command line recompiles
no kernel.  Any edit there recompiles whatever may depend on it; an edit to another
system does not.  Functions outside the package keep numba's usual locators.

An index file numba cannot read (truncated, or pickled with a class that later code renamed
or moved) counts as stale, as an index of another numba version does: the function is
compiled again and the index rewritten, instead of the import failing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from numba.core import caching

_PACKAGE = Path(__file__).resolve().parent
_CLI = _PACKAGE / "cli.py"


class PackageCacheLocator(caching.InTreeCacheLocator):
    """In-tree ``__pycache__`` cache whose freshness stamp hashes the source files that the
    function's module may depend on (module docstring)."""

    _stamps: dict = {}

    def get_source_stamp(self):
        scope = _scope(Path(self._py_file).resolve())
        if scope not in PackageCacheLocator._stamps:
            h = hashlib.sha256()
            for path in sorted(set(_sources(scope))):
                h.update(path.relative_to(_PACKAGE).as_posix().encode())
                h.update(path.read_bytes())
            PackageCacheLocator._stamps[scope] = h.hexdigest()
        return PackageCacheLocator._stamps[scope]

    @classmethod
    def from_function(cls, py_func, py_file):
        if not Path(py_file).resolve().is_relative_to(_PACKAGE):
            return None
        return super().from_function(py_func, py_file)


def _scope(py_file: Path) -> tuple:
    """The folders (relative to the package) whose sources a function in ``py_file`` may
    depend on: ``()`` is the whole package."""
    parts = py_file.relative_to(_PACKAGE).parts
    if parts[0] in ("numerics", "tables"):
        return ("*", "numerics", "tables")
    if parts[0] == "systems":  # a system's own folder, if any, and the shared modules
        return ("*", "numerics", "tables", "systems/*") + (("/".join(parts[:2]),)
                                                            if len(parts) > 2 else ())
    return ()


def _sources(scope: tuple):
    if not scope:
        yield from _PACKAGE.rglob("*.py")
        return
    for folder in scope:
        if folder.endswith("*"):  # the files directly in the folder (not the CLI)
            yield from (p for p in (_PACKAGE / folder[:-1]).glob("*.py") if p != _CLI)
        else:
            yield from (_PACKAGE / folder).rglob("*.py")


def _tolerant(load_index):
    """``IndexDataCacheFile._load_index`` that reads an unreadable index as empty."""
    def _load_index(self):
        try:
            return load_index(self)
        except Exception:  # noqa: BLE001 - any unreadable index is a stale one
            return {}
    _load_index.tolerant = True
    return _load_index


def install() -> None:
    """Put the package locator first and make unreadable indexes stale (idempotent); must
    run before kernels are defined."""
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")  # numba renamed it
    classes = impl._locator_classes
    if PackageCacheLocator not in classes:
        classes.insert(0, PackageCacheLocator)
    index_file = caching.IndexDataCacheFile
    if not getattr(index_file._load_index, "tolerant", False):
        index_file._load_index = _tolerant(index_file._load_index)
