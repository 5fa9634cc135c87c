"""Plugin manager and the registry of systems and collections it produces.

Built-in plugins are listed in DEFAULT_PLUGINS; external packages join through the
`aa_harness` entry-point group. Set AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD=1 to skip entry
points, or AA_HARNESS_BLOCK_PLUGINS=name1,name2 to block single ones.
"""
from __future__ import annotations

import difflib
import importlib
import os
from dataclasses import dataclass, field, replace

import pluggy

from harness import hookspecs
from harness.errors import HarnessError, UnknownNameError
from harness.specs import CollectionSpec, SystemSpec

DEFAULT_PLUGINS = (
    "harness.data.builtin",
    "plugins.bm25",
    "plugins.char_ngram",
    "plugins.sbert",
    "plugins.luar",
    "plugins.sadiri",
    "plugins.sadiri_v2",
)


def plugin_manager(*, entrypoints: bool = True, extra: tuple = ()) -> pluggy.PluginManager:
    """A fresh manager: built-ins, then entry points, then `extra` plugin objects (tests)."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for name in os.environ.get("AA_HARNESS_BLOCK_PLUGINS", "").split(","):
        if name.strip():
            pm.set_blocked(name.strip())
    for name in DEFAULT_PLUGINS:
        if not pm.is_blocked(name):
            pm.register(importlib.import_module(name), name=name)
    if entrypoints and not os.environ.get("AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD"):
        pm.load_setuptools_entrypoints(hookspecs.PROJECT)
    for plugin in extra:
        pm.register(plugin)
    pm.check_pending()  # a misspelt hook name fails loudly
    return pm


def _suggest(name: str, choices) -> str:
    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.5)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


@dataclass
class Registry:
    systems: dict[str, SystemSpec] = field(default_factory=dict)
    collections: dict[str, CollectionSpec] = field(default_factory=dict)

    def system(self, name: str) -> SystemSpec:
        if name not in self.systems:
            raise UnknownNameError(
                f"unknown system {name!r}{_suggest(name, self.systems)} (known: {', '.join(sorted(self.systems))})"
            )
        return self.systems[name]

    def collection(self, name: str) -> CollectionSpec:
        if name not in self.collections:
            raise UnknownNameError(
                f"unknown collection {name!r}{_suggest(name, self.collections)} "
                f"(known: {', '.join(sorted(self.collections))}; a path to a canonical JSONL file also works)"
            )
        return self.collections[name]


def _distribution(pm: pluggy.PluginManager, plugin: object) -> tuple[str, str]:
    """(distribution name, version) of the installed package that provides `plugin`."""
    import importlib.metadata as md

    for p, dist in pm.list_plugin_distinfo():
        if p is plugin:
            return dist.project_name, dist.version
    module = getattr(plugin, "__name__", None) or type(plugin).__module__
    top = module.split(".")[0]
    if top in ("harness", "plugins"):  # the built-ins ship with the harness
        names = ["aa-harness"]
    else:
        names = md.packages_distributions().get(top, [])
    for name in names:
        try:
            return name, md.version(name)
        except md.PackageNotFoundError:
            continue
    return "", ""


def load_registry(pm: pluggy.PluginManager | None = None) -> Registry:
    """Ask every plugin for its systems and collections; each spec learns which plugin and
    distribution (name, version) registered it, for the results' provenance."""
    pm = pm or plugin_manager()
    reg = Registry()

    def adder(table: dict, kind: str, plugin_name: str, dist: tuple[str, str]):
        def register(spec):
            if spec.name in table:
                raise HarnessError(f"two plugins register the {kind} {spec.name!r}")
            table[spec.name] = replace(spec, plugin=spec.plugin or plugin_name, distribution=spec.distribution or dist[0],
                                       version=spec.version or dist[1])

        return register

    for hook, table, kind in ((pm.hook.register_systems, reg.systems, "system"),
                              (pm.hook.register_collections, reg.collections, "collection")):
        for impl in reversed(hook.get_hookimpls()):  # pluggy's own call order
            impl.function(register=adder(table, kind, impl.plugin_name, _distribution(pm, impl.plugin)))
    return reg
