"""The paper's own figures (SADIRI-v2, arXiv:2510.16819) as a leaderboard page, `reported.md`, written with
`aa-harness leaderboard --reported`. Built in beside the paper's systems; the harness's pages know no paper."""

from __future__ import annotations

from harness.api import PageSpec, hookimpl


def _reported_page(board) -> str:
    from plugins.paper.reported import render_reported

    return render_reported(board.head)


@hookimpl
def register_pages(register):
    register(PageSpec("reported", "Figures the paper reports", _reported_page, wanted=lambda board: board.reported))
