"""The README and the documentation site: short, current, generated where they show figures."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

DOCS = ROOT / "docs"
README = ROOT / "README.md"
# Work-tracking talk belongs in the project's tracker, not in what a user reads.
FORBIDDEN = [
    (re.compile(r"\bissues?\s*#?\d+", re.I), "an issue number"),
    (re.compile(r"\btickets?\b", re.I), "ticket talk"),
    (re.compile(r"\bsessions?\b", re.I), "session talk"),
    (re.compile(r"\.\./shared|/work/shared"), "the development folder"),
]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _user_docs() -> list[Path]:
    # the generated leaderboard pages are published inside the site, so they are user docs too
    board = ROOT / "leaderboards" / "pages"
    pages = [*sorted(board.glob("*.md")), *sorted(board.glob("collections/*.md"))]
    return [README, *sorted(DOCS.rglob("*.md")), *sorted(DOCS.glob("*.py")), *pages]


def test_readme_and_docs_hold_no_issue_numbers_ticket_or_session_talk():
    found = []
    for path in _user_docs():
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [
                f"{path.relative_to(ROOT)}:{n}: {what}: {line.strip()[:80]}"
                for pattern, what in FORBIDDEN
                if pattern.search(line)
            ]
    assert not found, "\n".join(found)


def test_the_forbidden_patterns_catch_what_they_name():
    for text in ("see issue 13", "Issue #4", "this session's device time", "a ticket", "../shared/corpora"):
        assert any(p.search(text) for p, _ in FORBIDDEN), text
    for text in ("issues are welcome", "the tissue", "sessional"):
        assert not any(p.search(text) for p, _ in FORBIDDEN), text


def test_readme_is_a_front_door_of_at_most_250_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines"
    first_screen = "\n".join(lines[:40])
    assert "## Results" in first_screen and "<!-- results:start -->" in first_screen


def test_cli_reference_and_readme_commands_are_current():
    assert _load("gen_cli_reference").main(["--check"]) == 0, "run python docs/gen_cli_reference.py"


def test_cli_reference_lists_every_verb():
    from harness.cli import build_parser

    reference = (DOCS / "cli.md").read_text(encoding="utf-8")
    verbs = _load("gen_cli_reference")._summaries(build_parser())
    assert verbs
    for verb in verbs:
        assert f"\n## {verb}\n" in reference and f"usage: aa-harness {verb}" in reference


@pytest.mark.slow
def test_readme_results_block_is_current():
    assert _load("gen_readme_results").main(["--check"]) == 0, "run python docs/gen_readme_results.py"


def test_readme_results_rows_name_the_full_backbone_id():
    block = README.read_text(encoding="utf-8").split("<!-- results:start -->")[1].split("<!-- results:end -->")[0]
    rows = [row for row in block.splitlines()[3:] if row.startswith("| `")]
    neural = [row for row in rows if "`bm25`" not in row and "`char-ngram`" not in row]
    assert neural
    for row in neural:
        assert re.search(r"`[\w.-]+/[\w.-]+`", row), f"no hub id in {row!r}"


def test_every_generated_block_a_page_names_exists_and_renders():
    hooks = _load("hooks")
    named = {m for page in DOCS.rglob("*.md") for m in hooks.MARKER.findall(page.read_text(encoding="utf-8"))}
    assert named and named <= set(hooks.GENERATED), named - set(hooks.GENERATED)
    for name in ("split-counts", "seed-overlap", "reported-table1"):
        table = hooks.GENERATED[name]()
        assert table.count("\n") >= 3 and table.startswith("|"), name


def test_every_page_of_the_docs_folder_is_in_the_site_nav():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in sorted(DOCS.glob("*.md")):
        assert f": {page.name}\n" in nav, f"docs/{page.name} is not in mkdocs.yml's nav"


def test_every_test_the_guarantees_section_names_exists():
    schema = (DOCS / "schema.md").read_text(encoding="utf-8")
    section = schema.split("## What the harness guarantees", 1)[1]
    named = re.findall(r"`((?:\w+/)?test_\w+\.py)(?:::(test_\w+))?`", section)
    assert len(named) >= 15
    for file, name in named:
        source = (ROOT / "tests" / file).read_text(encoding="utf-8")
        assert not name or f"def {name}(" in source, f"docs/schema.md names {file}::{name}, which does not exist"


def test_the_quick_start_page_gives_the_readmes_two_commands():
    commands = re.findall(r"^python3 -m venv .*$", README.read_text(encoding="utf-8"), re.M)
    assert len(commands) == 2, commands
    page = (DOCS / "quickstart.md").read_text(encoding="utf-8")
    for command in commands:
        assert f"\n{command}\n" in page, f"docs/quickstart.md lacks the README's command: {command}"


def test_ci_builds_the_site_strictly_and_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "mkdocs build --strict" in ci
    readme = README.read_text(encoding="utf-8")
    command = re.search(r"^python3 -m venv .*&& python -m pytest$", readme, re.M)
    assert command, "README.md has no one-line test command"
    install = command.group(0).split(" && python -m pytest")[0]
    assert install in ci, "CI does not set up as the README's test command does"


def test_default_test_command_leaves_out_slow_tests_and_ci_runs_them():
    import re

    addopts = re.search(r"^addopts = (.*)$", (ROOT / "pyproject.toml").read_text(encoding="utf-8"), re.M).group(1)
    assert "not slow" in addopts and "not gpu" in addopts
    ci = (ROOT / ".ci" / "run").read_text()
    assert 'python -m pytest -m "not gpu"' in ci
    readme = (ROOT / "README.md").read_text()
    assert "&& python -m pytest\n" in readme and 'python -m pytest -m "not gpu"' in readme


def _doc_commands() -> list[tuple[str, str]]:
    """(page, command) for each `aa-harness …` command in the README's and the docs' shell blocks
    (continuation lines joined, comments and `&&` chains split off)."""
    found = []
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        for block in re.findall(r"```(?:bash|sh)\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                for part in re.split(r"\s(?:&&|\|\||\|)\s", line):
                    part = part.split(" #")[0].strip()
                    if part.startswith("aa-harness ") and not part.startswith("aa-harness bench"):  # bench: optional
                        found.append((page.name, part))
    return found


def test_every_command_in_the_docs_parses():
    """A documented command with a misspelt or missing option fails here, not for a reader."""
    import shlex

    from harness.cli import build_parser

    commands = _doc_commands()
    assert len(commands) >= 30
    for page, command in commands:
        try:
            build_parser().parse_args(shlex.split(command)[1:])
        except SystemExit:
            pytest.fail(f"docs/{page}: `{command}` does not parse")


def test_the_data_pages_path_collection_example_runs(tmp_path, monkeypatch, capsys):
    """docs/data.md's example of a path collection with extra haystack, run as written (it once needed
    --name-collection, which it lacked: its file is named like a registered collection)."""
    import gzip
    import json
    import shlex

    from harness.cli import main

    command = next(c for page, c in _doc_commands() if page == "data.md" and "--background" in c)
    args = shlex.split(command)[1:]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AA_HARNESS_HOME", str(tmp_path / "home"))
    (tmp_path / "corpora").mkdir()
    words = [f"w{k}" for k in range(23)]
    files = {
        args[args.index("--collection") + 1]: [
            {
                "documentID": f"d{a}-{g}",
                "authorIDs": [f"a{a}"],
                "genre": f"g{g}",
                "fullText": " ".join(words[(a * 7 + k) % 23] for k in range(30)),
            }
            for a in range(12)
            for g in range(2)
        ]
    }
    start = args.index("--background") + 1
    for i, path in enumerate(a for a in args[start:] if not a.startswith("--")):
        files[path] = [
            {"documentID": f"b{i}-{j}", "authorIDs": [f"b{i}-{j}"], "genre": "bg", "fullText": f"background {j}"}
            for j in range(5)
        ]
    for path, records in files.items():
        with gzip.open(tmp_path / path, "wt", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in records)
    assert main([*args, "--seeds", "0", "--no-progress"]) == 0, capsys.readouterr().err
    assert list((tmp_path / "home" / "runs").glob("*/bm25/seed-0.json"))
