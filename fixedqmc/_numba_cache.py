"""Numba's on-disk cache, keyed by the source of the whole package.

Compiled kernels inline functions from other modules of the package, but numba invalidates a
cached function only when its own file changes, so editing the core could leave stale kernels
in the cache.  This locator stamps every fixedqmc function with a hash of all the package's
source files: any edit recompiles whatever may depend on it.  Functions outside the package
keep numba's usual locators.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from numba.core import caching

_PACKAGE = Path(__file__).resolve().parent


class PackageCacheLocator(caching.InTreeCacheLocator):
    """In-tree ``__pycache__`` cache whose freshness stamp is the package source hash."""

    _stamp: str | None = None

    def get_source_stamp(self):
        if PackageCacheLocator._stamp is None:
            h = hashlib.sha256()
            for path in sorted(_PACKAGE.rglob("*.py")):
                h.update(path.relative_to(_PACKAGE).as_posix().encode())
                h.update(path.read_bytes())
            PackageCacheLocator._stamp = h.hexdigest()
        return PackageCacheLocator._stamp

    @classmethod
    def from_function(cls, py_func, py_file):
        if not Path(py_file).resolve().is_relative_to(_PACKAGE):
            return None
        return super().from_function(py_func, py_file)


def install() -> None:
    """Put the package locator first (idempotent); must run before kernels are defined."""
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")  # numba renamed it
    classes = impl._locator_classes
    if PackageCacheLocator not in classes:
        classes.insert(0, PackageCacheLocator)
