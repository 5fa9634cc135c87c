"""Plugins add leaderboard pages through the `register_pages` hook: the leaderboard writes each page its
inputs give and the main page links it; a page that fails is one line naming the plugin and the page,
and nothing is written."""

from __future__ import annotations

import shutil

import pytest

import harness.plugins
from harness.hookspecs import hookimpl
from harness.reports.board import HEADER
from harness.specs import PageSpec
from tests.hostile import COMMITTED, committed_splits, one_line_error, run_cli, snapshot


class Notes:
    """Two pages: one every board gives, one only a board with reranker runs gives."""

    @hookimpl
    def register_pages(self, register):
        register(PageSpec("notes", "Plugin notes", lambda board: f"{board.head}# Notes\n\n{len(board.runs)} runs\n"))
        register(PageSpec("reranks", "Plugin reranks", lambda board: "# Reranks\n", wanted=lambda b: b.has_rerank))


class Raises:
    @hookimpl
    def register_pages(self, register):
        register(PageSpec("boom", "Boom", lambda board: 1 / 0))


class FailsToRegister:
    @hookimpl
    def register_pages(self, register):
        register(PageSpec("half", "Half", lambda board: "# Half\n"))
        raise RuntimeError("no pages today")


class TakesMain:
    @hookimpl
    def register_pages(self, register):
        register(PageSpec("main", "Main", lambda board: "# Mine\n"))


@pytest.fixture
def with_plugins(monkeypatch):
    """Let the leaderboard's plugin manager hold the given plugin objects beside the built-ins."""

    made = harness.plugins.plugin_manager

    def install(*plugins):
        monkeypatch.setattr(
            harness.plugins, "plugin_manager", lambda **kw: made(**{**kw, "entrypoints": False, "extra": plugins})
        )

    return install


@pytest.fixture
def runs(tmp_path):
    shutil.copytree(COMMITTED / "demo" / "bm25", tmp_path / "runs" / "demo" / "bm25")
    return tmp_path / "runs"


def _leaderboard(capsys, runs, out, *extra):
    return run_cli(
        capsys,
        "leaderboard",
        "--runs-dir",
        runs,
        "--out",
        out,
        "--splits-dir",
        committed_splits(),
        "--no-plots",
        *extra,
    )


def test_a_plugin_page_is_written_and_linked_from_the_main_page(with_plugins, runs, tmp_path, capsys):
    with_plugins(Notes())
    out = tmp_path / "pages"
    rc, _, err = _leaderboard(capsys, runs, out)
    assert rc == 0, err
    assert (out / "notes.md").read_text(encoding="utf-8") == f"{HEADER}# Notes\n\n1 runs\n"
    main = (out / "main.md").read_text(encoding="utf-8")
    assert "Per-genre tables: [per-genre.md](per-genre.md). Plugin notes: [notes.md](notes.md)." in main
    assert not (out / "reranks.md").exists() and "reranks.md" not in main  # not wanted: neither written nor linked


def test_a_page_that_raises_is_one_line_naming_plugin_and_page_and_nothing_is_written(
    with_plugins, runs, tmp_path, capsys
):
    out, site = tmp_path / "pages", tmp_path / "site"
    with_plugins(Notes())
    assert _leaderboard(capsys, runs, out)[0] == 0
    before = snapshot(out)
    with_plugins(Notes(), Raises())
    line = one_line_error(*_leaderboard(capsys, runs, out, "--html", site)[::2])
    assert line == (
        f"aa-harness: error: plugin {__name__}.Raises failed while rendering the page 'boom.md': "
        "ZeroDivisionError: division by zero"
    )
    assert snapshot(out) == before and not site.exists()


def test_a_plugin_failing_while_registering_pages_is_left_out_and_the_others_are_written(
    with_plugins, runs, tmp_path, capsys
):
    with_plugins(FailsToRegister(), Notes())
    out = tmp_path / "pages"
    rc, _, err = _leaderboard(capsys, runs, out)
    assert rc == 0, err
    assert f"plugin {__name__}.FailsToRegister failed while registering pages: RuntimeError: no pages today" in err
    assert (out / "notes.md").is_file() and not (out / "half.md").exists()


def test_a_page_named_as_the_leaderboards_own_is_one_line(with_plugins, runs, tmp_path, capsys):
    with_plugins(TakesMain())
    line = one_line_error(*_leaderboard(capsys, runs, tmp_path / "pages")[::2])
    assert f"plugin {__name__}.TakesMain registers the page 'main.md', one of the leaderboard's own" in line
    assert not (tmp_path / "pages").exists()


def test_two_plugins_registering_one_page_name_is_an_error_naming_both():
    from harness.errors import HarnessError

    pm = harness.plugins.plugin_manager(entrypoints=False, extra=(Notes(), Notes()))
    with pytest.raises(HarnessError, match=r"the page 'notes' is registered by both .*Notes and .*Notes"):
        harness.plugins.load_pages(pm)


def test_a_plugin_page_the_inputs_no_longer_give_is_retired(with_plugins, runs, tmp_path, capsys):
    """As the rerank page is: an earlier build's page (by its first line) goes; a user's file of that name stays."""
    with_plugins(Notes())
    out = tmp_path / "pages"
    out.mkdir()
    (out / "reranks.md").write_text(HEADER + "# Reranks\nold rows\n", encoding="utf-8")
    assert _leaderboard(capsys, runs, out)[0] == 0
    assert not (out / "reranks.md").exists()
    (out / "reranks.md").write_text("# my own notes\n", encoding="utf-8")
    assert _leaderboard(capsys, runs, out)[0] == 0
    assert (out / "reranks.md").read_text(encoding="utf-8") == "# my own notes\n"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "../up"}, "is not a file stem"),
        ({"name": "sub/page"}, "is not a file stem"),
        ({"title": " "}, "title must be a non-empty string"),
        ({"render": "plugin.module:render"}, "render must be a function of the board"),
    ],
)
def test_a_malformed_page_spec_is_refused(fields, message):
    from harness.errors import HarnessError

    with pytest.raises(HarnessError, match=message):
        PageSpec(**{"name": "page", "title": "A page", "render": lambda board: "", **fields})


def test_the_performance_page_comes_from_the_bench_distribution(runs, tmp_path, monkeypatch, capsys):
    """The product alone writes no performance page from --bench-results; with aa-harness-bench installed,
    its plugin writes it and the main page links it."""
    from tests.cli.test_leaderboard_record import BENCH
    from tests.conftest import install_bench_entry_point

    monkeypatch.setenv("AA_HARNESS_DISABLE_PLUGIN_AUTOLOAD", "1")
    alone, installed = tmp_path / "alone", tmp_path / "installed"
    assert _leaderboard(capsys, runs, alone, "--bench-results", BENCH)[0] == 0
    assert not (alone / "performance.md").exists() and "performance.md" not in (alone / "main.md").read_text()
    install_bench_entry_point(tmp_path, monkeypatch)
    assert _leaderboard(capsys, runs, installed, "--bench-results", BENCH)[0] == 0
    assert (installed / "performance.md").read_text(encoding="utf-8").startswith("<!-- generated by")
    assert "Throughput: [performance.md](performance.md)." in (installed / "main.md").read_text(encoding="utf-8")
