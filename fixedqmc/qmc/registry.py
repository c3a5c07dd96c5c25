"""Systems as plug-ins: each system kind registers its input sections, checks and builder.

The engine (drivers, run input, runner, profile, sweep, CLI) never imports a concrete
system.  It asks this registry for the :class:`SystemPlugin` of ``system.kind``:

* built-in and installed systems are found through the ``fixedqmc.system_kinds`` entry-point
  group (a package declares ``kind = "module:PLUGIN"`` in its metadata; fixedqmc's own
  ``helium`` is registered that way);
* a system in a user's file or module is registered by importing it: list it under the
  input key ``plugins = ["my_system.py"]`` (paths relative to the input file) or call
  :func:`register_system` in Python.  Importing a plugin runs the user's code.

A plugin declares its input sections (``{"system": {...}, "trial": {...}}``: every key and
its default), a ``check(config)`` that raises a :class:`FixedQMCError` naming a bad key and
what is allowed, and a ``build(config, precision=, ranges=, seed=, specialise=)`` that
returns an object implementing :class:`fixedqmc.qmc.system.System`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Callable

from fixedqmc.errors import FixedQMCError
from fixedqmc.qmc.system import Units, check_protocol

ENTRY_POINT_GROUP = "fixedqmc.system_kinds"


@dataclass(frozen=True)
class SystemPlugin:
    """A system kind: its input sections with defaults, checks, builder and units.

    ``sections`` maps input section names to ``{key: default}``; ``"system"`` is required
    (its ``kind`` key is added by the engine).  ``check(config)`` validates the sections of
    a merged input (raise :class:`FixedQMCError` naming the key); ``build(config, *,
    precision, ranges, seed, specialise)`` returns the system.  ``units`` lists the energy
    units results can be reported in."""

    kind: str
    sections: dict
    build: Callable
    units: Units
    check: Callable | None = None
    description: str = ""
    #: method defaults of this kind (e.g. a step size in its length unit)
    method_defaults: dict = field(default_factory=dict)

    def __post_init__(self):
        if "system" not in self.sections:
            raise FixedQMCError(f"system plugin {self.kind!r} declares no 'system' section")
        if "kind" in self.sections["system"]:
            raise FixedQMCError(f"system plugin {self.kind!r}: the key system.kind is the "
                                "engine's; leave it out of the plugin's section")

    def make(self, config: dict, **options):
        """Build the system of a validated input and check it implements the protocol."""
        system = self.build(config, **options)
        check_protocol(system, f"system kind {self.kind!r}")
        return system


_REGISTRY: dict[str, SystemPlugin] = {}
_ENTRY_POINTS_LOADED = False


def register_system(plugin: SystemPlugin, *, replace: bool = False) -> SystemPlugin:
    """Register a system kind (``replace`` allows re-registering the same kind)."""
    if not isinstance(plugin, SystemPlugin):
        raise FixedQMCError(f"register_system takes a SystemPlugin, got {type(plugin).__name__}")
    if not plugin.kind.isidentifier():
        raise FixedQMCError(f"system kind {plugin.kind!r} must be an identifier")
    old = _REGISTRY.get(plugin.kind)
    if old is not None and old is not plugin and not replace:
        raise FixedQMCError(f"system kind {plugin.kind!r} is already registered")
    _REGISTRY[plugin.kind] = plugin
    return plugin


def unregister_system(kind: str) -> None:
    _REGISTRY.pop(kind, None)


def _load_entry_points() -> None:
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED = True
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _REGISTRY:
            continue
        plugin = ep.load()
        if plugin.kind != ep.name:
            raise FixedQMCError(f"entry point {ep.name!r} of {ENTRY_POINT_GROUP} gives a plugin "
                                f"of kind {plugin.kind!r}")
        register_system(plugin)


def system_kinds() -> tuple:
    """The registered kinds, sorted."""
    _load_entry_points()
    return tuple(sorted(_REGISTRY))


def get_plugin(kind) -> SystemPlugin:
    """The plugin of ``kind``; the error lists the registered kinds."""
    _load_entry_points()
    if not isinstance(kind, str) or kind not in _REGISTRY:
        raise FixedQMCError(f"system.kind = {kind!r} is not a registered system; registered: "
                            f"{', '.join(system_kinds())} (a system of your own: list its "
                            "file under the input key plugins)")
    return _REGISTRY[kind]


def load_plugins(specs, base: Path | None = None) -> None:
    """Import plugin files (``*.py``, relative to ``base``) or modules; their import
    registers their systems.  Errors name the plugin."""
    if isinstance(specs, str) or not isinstance(specs, (list, tuple)) or not all(
            isinstance(s, str) and s for s in specs):
        raise FixedQMCError(f"plugins must be a list of file paths or module names, got "
                            f"{specs!r}")
    for spec in specs:
        try:
            if spec.endswith(".py"):
                path = Path(spec)
                if not path.is_absolute() and base is not None:
                    path = base / path
                if not path.is_file():
                    raise FixedQMCError(f"plugins: file {str(path)!r} does not exist")
                name = f"fixedqmc_plugin_{path.stem}"
                if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(
                        path.resolve()):
                    continue
                module_spec = importlib.util.spec_from_file_location(name, path.resolve())
                module = importlib.util.module_from_spec(module_spec)
                sys.modules[name] = module
                module_spec.loader.exec_module(module)
            else:
                importlib.import_module(spec)
        except FixedQMCError:
            raise
        except Exception as exc:  # the user's code: name it, no traceback
            raise FixedQMCError(f"plugins: importing {spec!r} failed: "
                                f"{type(exc).__name__}: {exc}") from None
