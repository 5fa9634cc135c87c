"""The harness's hooks. Each hands the plugin a `register` callback, llm-style."""

from __future__ import annotations

import pluggy

PROJECT = "aa_harness"  # marker name and entry-point group

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_systems(register):
    """Call register(SystemSpec(...)) once for each system this plugin provides."""


@hookspec
def register_collections(register):
    """Call register(CollectionSpec(...)) once for each collection this plugin provides."""


@hookspec
def register_pages(register):
    """Call register(PageSpec(...)) once for each leaderboard page this plugin adds beside the
    harness's own (`aa-harness leaderboard` writes it as `<name>.md` and the main page links it)."""


@hookspec
def register_commands(subparsers):
    """Add command-line verbs: call subparsers.add_parser(NAME, help=...) and give each parser
    set_defaults(fn=handler), where handler(args) returns the exit code. Called while the
    parser is built, so keep heavy imports inside the handlers."""
