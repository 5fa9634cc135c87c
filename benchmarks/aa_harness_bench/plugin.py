"""The aa-harness plugin of this distribution: it adds the `bench` verb to the command line."""

from __future__ import annotations

from harness.hookspecs import hookimpl


@hookimpl
def register_commands(subparsers):
    from aa_harness_bench.cli import add_parser

    add_parser(subparsers)
