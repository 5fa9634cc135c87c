"""Plugin manager and the registry of systems and collections it produces.

Built-in plugins are listed in DEFAULT_PLUGINS; external packages join through the
`aa_harness` entry-point group. Set AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD=1 to skip entry
points, or AA_HARNESS_BLOCK_PLUGINS=name1,name2 to block single ones.

A plugin that fails to import or raises while registering is reported (on stderr, and in
`Registry.failures`) and left out; the other plugins and systems work on. A plugin that
registers a name another plugin already registered is an error naming both. The leaderboard
pages plugins add (`load_pages`) and their verbs (`add_plugin_commands`) are loaded apart, by
the commands that use them.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import logging
import os
import sys
from dataclasses import dataclass, field, replace
from typing import Any

import pluggy

from harness import hookspecs
from harness.errors import HarnessError, UnknownNameError
from harness.specs import SUBMITTED, CollectionSpec, PageSpec, SystemSpec

_log = logging.getLogger(__name__)

DEFAULT_PLUGINS = (
    "harness.data.builtin",
    "plugins.bm25",
    "plugins.char_ngram",
    "plugins.sbert",
    "plugins.luar",
    "plugins.sadiri",
    "plugins.sadiri_v2",
    "plugins.paper",  # the paper's reported figures: a leaderboard page
)


class PluginManager(pluggy.PluginManager):
    """pluggy's manager, plus what loading the entry points found, for messages and provenance."""

    def __init__(self) -> None:
        super().__init__(hookspecs.PROJECT)
        self.aa_failures: list[tuple[str, str]] = []  # (plugin, message) of plugins that failed to load
        self.aa_packages: dict[str, str] = {}  # entry-point name -> "name (package distribution)"
        self.aa_distributions: dict[str, tuple[str, str]] = {}  # entry-point name -> (distribution, version)


def check_import_names() -> None:
    """The built-in plugins' top-level package `plugins` is the one installed beside `harness`.

    Both names are generic (docs/install.md says why they stay): a folder `plugins/` with an
    `__init__.py` in the current folder (`python -m harness` puts it first on the path), on
    $PYTHONPATH, or from another distribution would shadow the harness's own, and the built-in
    systems would fail to import one by one. Said once, with the place, instead.
    """
    from importlib.util import find_spec
    from pathlib import Path

    own = Path(__file__).resolve().parent.parent / "plugins"
    try:
        spec = find_spec("plugins")
    except (ImportError, ValueError):
        spec = None
    places = [Path(p).resolve() for p in (spec.submodule_search_locations or [])] if spec else []
    if own in places:
        return
    found = ", ".join(str(p) for p in places) or "nowhere"
    raise HarnessError(
        f"the top-level package 'plugins' resolves to {found}, not the harness's own ({own}): another "
        "distribution, a folder on $PYTHONPATH or a 'plugins' package in the current folder shadows it; "
        "run from another folder, or install aa-harness in a virtual environment of its own"
    )


def plugin_manager(*, entrypoints: bool = True, extra: tuple = ()) -> PluginManager:
    """A fresh manager: built-ins, then entry points, then `extra` plugin objects (tests)."""
    pm = PluginManager()
    pm.add_hookspecs(hookspecs)
    for name in os.environ.get("AA_HARNESS_BLOCK_PLUGINS", "").split(","):
        if name.strip():
            pm.set_blocked(name.strip())
    check_import_names()
    for name in DEFAULT_PLUGINS:
        if not pm.is_blocked(name):
            pm.register(importlib.import_module(name), name=name)
    if entrypoints and not os.environ.get("AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD"):
        _load_entrypoints(pm)
    for plugin in extra:
        pm.register(plugin)
    pm.check_pending()  # a misspelt hook name fails loudly
    return pm


def _load_entrypoints(pm: PluginManager) -> None:
    """pluggy's load_setuptools_entrypoints, except that a plugin that fails to import is recorded, not fatal."""
    for dist in list(importlib.metadata.distributions()):
        for ep in dist.entry_points:
            if ep.group != hookspecs.PROJECT or pm.get_plugin(ep.name) or pm.is_blocked(ep.name):
                continue
            label = f"{ep.name} (package {dist.metadata['name']})"
            try:
                plugin = ep.load()
            except (
                Exception,
                SystemExit,
                GeneratorExit,
            ) as e:  # a broken third-party plugin must not break the harness
                pm.aa_failures.append((label, f"failed to import: {type(e).__name__}: {e}"))
                continue
            pm.register(plugin, name=ep.name)
            pm.aa_packages[ep.name] = label
            pm.aa_distributions[ep.name] = (dist.metadata["name"], dist.version)


def _suggest(name: str, choices) -> str:
    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.5)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


@dataclass
class Registry:
    systems: dict[str, SystemSpec] = field(default_factory=dict)
    collections: dict[str, CollectionSpec] = field(default_factory=dict)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (plugin, what went wrong)

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


def _plugin_label(pm: pluggy.PluginManager, plugin) -> str:
    """The package or module a plugin came from, for messages."""
    name = pm.get_name(plugin)
    packages = getattr(pm, "aa_packages", {})  # a plain pluggy manager has none
    if name in packages:
        return packages[name]
    if isinstance(plugin, type(sys)):
        return plugin.__name__
    return f"{type(plugin).__module__}.{type(plugin).__qualname__}"


def _distribution(pm: pluggy.PluginManager, plugin: object) -> tuple[str, str]:
    """(distribution name, version) of the installed package that provides `plugin`."""
    import importlib.metadata as md

    name = pm.get_name(plugin)
    distributions = getattr(pm, "aa_distributions", {})
    if name in distributions:
        return distributions[name]
    module = getattr(plugin, "__name__", None) or type(plugin).__module__
    top = module.split(".")[0]
    if top in ("harness", "plugins"):  # the built-ins ship with the harness: its build-time version
        from harness.foundation.provenance import harness_version

        return "aa-harness", harness_version()
    for dist in md.packages_distributions().get(top, []):
        try:
            return dist, md.version(dist)
        except md.PackageNotFoundError:
            continue
    return "", ""


def load_registry(pm: pluggy.PluginManager | None = None, *, warn=None) -> Registry:
    """Call each plugin's hooks on its own: one that raises is reported through `warn` (default: a line on
    stderr) and skipped, with nothing it registered kept; a name registered twice is a HarnessError.
    Each spec learns which plugin and distribution (name, version) registered it, for provenance."""
    pm = pm or plugin_manager()
    warn = warn or _log.warning
    reg = Registry(failures=list(getattr(pm, "aa_failures", [])))
    owner: dict[tuple[str, str], str] = {}
    for hook, table, kind in (
        (pm.hook.register_systems, reg.systems, "system"),
        (pm.hook.register_collections, reg.collections, "collection"),
    ):
        for impl in hook.get_hookimpls():
            label = _plugin_label(pm, impl.plugin)
            staged: list[Any] = []  # checked below to be this hook's spec type
            try:
                impl.function(register=staged.append)
                for spec in staged:
                    if not isinstance(spec, (SystemSpec if kind == "system" else CollectionSpec)):
                        raise TypeError(
                            f"register() expects a {'SystemSpec' if kind == 'system' else 'CollectionSpec'}, "
                            f"got {type(spec).__name__}"
                        )
            except (Exception, SystemExit, GeneratorExit) as e:  # a broken third-party plugin must not break the others
                reg.failures.append((label, f"failed while registering {kind}s: {type(e).__name__}: {e}"))
                continue
            dist = _distribution(pm, impl.plugin) if staged else ("", "")
            for spec in staged:
                if kind == "system" and spec.name == SUBMITTED:
                    raise HarnessError(
                        f"plugin {label} registers the system {SUBMITTED!r}, a name reserved for "
                        "submitted rankings; block it with AA_HARNESS_BLOCK_PLUGINS"
                    )
                if spec.name in table:
                    raise HarnessError(
                        f"the {kind} {spec.name!r} is registered by both {owner[(kind, spec.name)]} "
                        f"and {label}; block one with AA_HARNESS_BLOCK_PLUGINS"
                    )
                table[spec.name] = replace(
                    spec,
                    plugin=spec.plugin or impl.plugin_name,
                    distribution=spec.distribution or dist[0],
                    version=spec.version or dist[1],
                )
                owner[(kind, spec.name)] = label
    for label, message in reg.failures:
        warn(f"plugin {label} {message}; left out")
    return reg


def load_pages(pm: pluggy.PluginManager | None = None, *, warn=None) -> tuple[PageSpec, ...]:
    """The leaderboard pages the plugins add (`register_pages`), in the order the plugins were registered
    (built-ins first), each knowing its plugin for messages. A plugin that raises or registers something
    other than a PageSpec is reported through `warn` (default: a line on stderr) and none of its pages is
    kept; a page name registered twice is a HarnessError naming both plugins."""
    pm = pm or plugin_manager()
    warn = warn or _log.warning
    pages: dict[str, PageSpec] = {}
    for impl in pm.hook.register_pages.get_hookimpls():
        label = _plugin_label(pm, impl.plugin)
        staged: list[Any] = []
        try:
            impl.function(register=staged.append)
            for page in staged:
                if not isinstance(page, PageSpec):
                    raise TypeError(f"register() expects a PageSpec, got {type(page).__name__}")
        except (Exception, SystemExit, GeneratorExit) as e:  # a broken third-party plugin must not break the others
            warn(f"plugin {label} failed while registering pages: {type(e).__name__}: {e}; left out")
            continue
        for page in staged:
            if page.name in pages:
                raise HarnessError(
                    f"the page {page.name!r} is registered by both {pages[page.name].plugin} and {label}; "
                    "block one with AA_HARNESS_BLOCK_PLUGINS"
                )
            pages[page.name] = replace(page, plugin=label)
    return tuple(pages.values())


def add_plugin_commands(subparsers, pm: pluggy.PluginManager | None = None, *, warn=None) -> list[str]:
    """Let each plugin add its verbs (`register_commands`) to the CLI's subparsers; returns the verbs added.

    A plugin that raises, or names a verb that is already taken, is reported through `warn` (default:
    a line on stderr) and none of its verbs is kept; the other plugins' verbs work on."""
    pm = pm or plugin_manager()
    warn = warn or _log.warning
    added: list[str] = []
    for impl in pm.hook.register_commands.get_hookimpls():
        before = dict(subparsers.choices)
        shown = list(subparsers._choices_actions)  # the help listing; argparse has no public way to drop a verb
        try:
            impl.function(subparsers=subparsers)
        except Exception as e:  # a broken third-party plugin must not break the command line
            subparsers.choices.clear()
            subparsers.choices.update(before)
            subparsers._choices_actions[:] = shown
            warn(
                f"plugin {_plugin_label(pm, impl.plugin)} failed while adding commands: {type(e).__name__}: {e}; left out"
            )
            continue
        added += [name for name in subparsers.choices if name not in before]
    return added
