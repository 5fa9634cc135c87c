"""The aa-harness plugin of this distribution: it adds the `bench` verb to the command line, and the
performance page (the benchmark results as tables) to the leaderboard given benchmark results."""

from __future__ import annotations

from harness.api import PageSpec, hookimpl


@hookimpl
def register_commands(subparsers):
    from aa_harness_bench.cli import add_parser

    add_parser(subparsers)


def _performance_page(board) -> str:
    from aa_harness_bench.performance import performance_page

    return performance_page(board.bench_dir)


@hookimpl
def register_pages(register):
    register(PageSpec("performance", "Throughput", _performance_page, wanted=lambda board: board.bench_dir is not None))
