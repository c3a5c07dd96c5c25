"""No module of the package imports another module's private (underscore) names: every
``from fixedqmc.X import _name`` (module-level or inside a function) in ``fixedqmc/`` is
refused, except a package importing its own private submodules and the explicit allow-list
below, whose every entry says why it is still there.

(``import fixedqmc.X as M`` followed by ``M._name`` is not checked.)
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "fixedqmc"

#: (importing file relative to the package, source module, private name) -> why it must
#: stay; empty: a helper that another module needs is made public in its own module
ALLOWED: dict = {}


def module_name(path: Path, package: Path = PACKAGE) -> str:
    """The dotted module name of a file of the package (a package's ``__init__.py``: the
    package)."""
    rel = path.relative_to(package.parent).with_suffix("")
    return ".".join(p for p in rel.parts if p != "__init__")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own_private_submodule(importer: str, source: str, name: str, package: Path) -> bool:
    """``from package import _sub`` inside that package: the package's own private module."""
    folder = package.parent.joinpath(*source.split("."))
    is_module = (folder / f"{name}.py").exists() or (folder / name / "__init__.py").exists()
    return is_module and (importer == source or importer.startswith(source + "."))


def private_imports(source: str, importer: str, package: Path = PACKAGE):
    """``(line, source module, name)`` of every private name the module ``importer`` (its
    text ``source``) imports from another module of the package."""
    root = package.name
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                and (node.module == root or node.module.startswith(root + "."))):
            continue
        if node.module == importer:
            continue
        for alias in node.names:
            if (_is_private(alias.name)
                    and not _own_private_submodule(importer, node.module, alias.name, package)):
                yield node.lineno, node.module, alias.name


def _found():
    """``{(file, source module, name): line}`` over the whole package."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for line, module, name in private_imports(path.read_text(), module_name(path)):
            found[(rel, module, name)] = line
    return found


def test_no_module_imports_another_modules_private_names():
    found = _found()
    refused = sorted(key for key in found if key not in ALLOWED)
    assert not refused, "modules that import another module's private names:\n" + "\n".join(
        f"fixedqmc/{rel}:{found[(rel, module, name)]} imports {name} from {module}"
        for rel, module, name in refused)


def test_every_allowed_private_import_is_still_there():
    found = _found()
    stale = [key for key in ALLOWED if key not in found]
    assert not stale, "allow-list entries no longer needed (remove them):\n" + "\n".join(
        f"fixedqmc/{rel}: {name} from {module}" for rel, module, name in stale)
    assert all(reason.strip() for reason in ALLOWED.values())


def test_the_check_finds_private_imports():
    source = ("from fixedqmc.numerics.kernel_core import format_row, _peek\n"
              "def f():\n"
              "    from fixedqmc.numerics import _hidden\n"
              "from fixedqmc.numerics.kernel_ops import _rt_unary\n"
              "from fixedqmc.numerics.kernel import __all__\n"
              "from fixedqmc import _numba_cache\n"
              "from numpy import _core\n")
    found = sorted(private_imports(source, "fixedqmc.numerics.kernel_ops"))
    assert found == [(1, "fixedqmc.numerics.kernel_core", "_peek"),
                     (3, "fixedqmc.numerics", "_hidden")]
    # a private module of the package (fixedqmc/_numba_cache.py) is the package's own
    assert not list(private_imports("from fixedqmc import _numba_cache\n", "fixedqmc"))
