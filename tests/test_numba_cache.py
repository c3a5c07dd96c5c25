"""fixedqmc._numba_cache: an index file numba cannot read is a stale cache, recompiled,
not an import error (a truncated index, or one pickled with a class later code removed)."""

import pickle
import subprocess
import sys
import textwrap

import pytest

MODULE = textwrap.dedent("""
    from numba import njit

    @njit(cache=True)
    def f(x):
        return x + 1
""")


def call(folder, fixedqmc: bool):
    """Import the cached module in a fresh interpreter (after fixedqmc, or numba alone) and
    call its function."""
    code = ("import fixedqmc\n" if fixedqmc else "") + "import mod\nprint(mod.f(1))"
    return subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("damage", ["truncated", "missing class"])
def test_an_unreadable_index_is_recompiled(tmp_path, damage):
    (tmp_path / "mod.py").write_text(MODULE)
    assert call(tmp_path, True).stdout.strip() == "2"
    (index,) = (tmp_path / "__pycache__").glob("mod.f-*.nbi")
    with open(index, "rb") as fh:
        version = pickle.load(fh)
        data = fh.read()
    if damage == "truncated":
        bad = pickle.dumps(version) + data[: len(data) // 2]
    else:  # a pickled reference to a class that no longer exists
        bad = pickle.dumps(version) + data.replace(b"numba.core.types",
                                                   b"numba.core.gone_types", 1)
        assert bad != pickle.dumps(version) + data
    index.write_bytes(bad)
    alone = call(tmp_path, False)  # numba's own loader fails on it
    assert alone.returncode != 0 and "Error" in alone.stderr
    index.write_bytes(bad)
    again = call(tmp_path, True)
    assert again.returncode == 0 and again.stdout.strip() == "2", again.stderr
    with open(index, "rb") as fh:  # rewritten: readable again
        pickle.load(fh)
        pickle.loads(fh.read())


def test_a_kernels_stamp_covers_its_layers_but_not_the_command_line():
    """A system kernel's stamp hashes numerics, tables, the shared system modules and the
    package's base modules; an edit to cli.py (the top layer) recompiles nothing."""
    from fixedqmc import _numba_cache as nc
    scope = nc._scope(nc._PACKAGE / "systems" / "periodic" / "ewald.py")
    names = {p.relative_to(nc._PACKAGE).as_posix() for p in nc._sources(scope)}
    assert {"errors.py", "numerics/kernel.py", "tables/builtin.py", "systems/slater.py",
            "systems/periodic/ewald.py"} <= names
    assert "cli.py" not in names and "systems/helium/cluster.py" not in names
    assert "cli.py" in {p.name for p in nc._sources(())}  # the whole package's scope
