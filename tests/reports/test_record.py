"""The leaderboard's record file: read, checked key by key, a bad one refused in one line naming file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import DataError
from harness.reports.record import KEYS, Registries, read_record

FULL = """\
runs = "runs"
pages = "pages"
splits = "../splits"
stale = "stale.json"
fixes = "fixes.json"
training = "training"
decontamination = "training/decontamination.json"
training_sets = "training/training-sets.json"
bench_results = "../bench"
"""


@pytest.fixture
def board(tmp_path) -> Path:
    """A record folder with every input its full record file names (the pages folder not made yet)."""
    folder = tmp_path / "board"
    for sub in ("runs", "training", "../splits", "../bench"):
        (folder / sub).mkdir(parents=True)
    for name in ("stale.json", "fixes.json", "training/decontamination.json", "training/training-sets.json"):
        (folder / name).write_text("{}", encoding="utf-8")
    (folder / "record.toml").write_text(FULL, encoding="utf-8")
    return folder


def test_every_path_is_read_relative_to_the_record_file(board):
    record = read_record(board / "record.toml")
    parent = board.parent
    assert record.file == board / "record.toml"
    assert (record.runs, record.pages, record.splits, record.bench_results) == (
        board / "runs",
        board / "pages",
        parent / "splits",
        parent / "bench",
    )
    assert record.registries == Registries(
        stale=board / "stale.json",
        fixes=board / "fixes.json",
        training=board / "training",
        decontamination=board / "training" / "decontamination.json",
        training_sets=board / "training" / "training-sets.json",
    )
    assert not (board / "pages").exists(), "reading a record writes nothing"


def test_a_folder_stands_for_its_record_toml(board):
    assert read_record(board) == read_record(board / "record.toml")


def test_a_key_left_out_means_none(board):
    (board / "record.toml").write_text('runs = "runs"\npages = "pages"\n', encoding="utf-8")
    record = read_record(board)
    assert record.splits is None and record.bench_results is None and record.registries == Registries()


def test_the_keys_are_documented_in_the_module_docstring():
    import harness.reports.record as module

    for name in KEYS:
        assert f"\n    {name} = " in module.__doc__, name


def _replace(key: str, value: str | None) -> str:
    """FULL with one key's line replaced by `key = value` (dropped when value is None)."""
    lines = [line for line in FULL.splitlines() if not line.startswith(f"{key} =")]
    return "\n".join(lines + ([f"{key} = {value}"] if value is not None else [])) + "\n"


# case -> (record file text, the key the error names, words the error holds)
BAD = {
    "unknown key": (FULL + 'runz = "runs"\n', "'runz'", "did you mean 'runs'"),
    "a table": (FULL + '[extra]\nruns = "runs"\n', "'extra'", "unknown key"),
    "runs left out": (_replace("runs", None), "'runs'", "missing key"),
    "pages left out": (_replace("pages", None), "'pages'", "missing key"),
    "runs missing": (_replace("runs", '"rnus"'), "'runs'", "does not exist"),
    "stale missing": (_replace("stale", '"stale.jsn"'), "'stale'", "does not exist"),
    "fixes missing": (_replace("fixes", '"nowhere/fixes.json"'), "'fixes'", "does not exist"),
    "training missing": (_replace("training", '"logs"'), "'training'", "does not exist"),
    "decontamination missing": (_replace("decontamination", '"d.json"'), "'decontamination'", "does not exist"),
    "training sets missing": (_replace("training_sets", '"t.json"'), "'training_sets'", "does not exist"),
    "bench results missing": (_replace("bench_results", '"../benchmarks"'), "'bench_results'", "does not exist"),
    "splits missing": (_replace("splits", '"splits"'), "'splits'", "does not exist"),
    "runs a file": (_replace("runs", '"fixes.json"'), "'runs'", "is not a folder"),
    "stale a folder": (_replace("stale", '"training"'), "'stale'", "is not a file"),
    "runs a number": (_replace("runs", "3"), "'runs'", "got int"),
    "runs empty": (_replace("runs", '""'), "'runs'", "got an empty string"),
    "runs a list": (_replace("runs", '["runs"]'), "'runs'", "got list"),
    "pages a file": (_replace("pages", '"fixes.json"'), "'pages'", "is not a folder"),
    "pages holding the data": (_replace("pages", '"."'), "'pages'", "a folder of their own"),
    "pages inside the runs": (_replace("pages", '"runs/pages"'), "'pages'", "a folder of their own"),
    "pages the training logs": (_replace("pages", '"training"'), "'pages'", "a folder of their own"),
    "not TOML": ("runs = \n", None, "not valid TOML"),
    "nested too deep": ("x = " + "[" * 5000 + "]" * 5000 + "\n", None, "not valid TOML"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_record_is_one_line_naming_the_file_and_the_key(board, case):
    text, key, words = BAD[case]
    (board / "record.toml").write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as e:
        read_record(board / "record.toml")
    message = str(e.value)
    assert "\n" not in message and message.startswith(f"{board / 'record.toml'}: ")
    assert words in message and (key is None or f"key {key}" in message), message
    assert not (board / "pages").exists()


@pytest.mark.parametrize(
    "data, words",
    [(b"runs = \xff\n", "not UTF-8"), (b"#" * 70_000, "bytes, more than"), (b'runs = "a\x00"\n', "not valid TOML")],
)
def test_a_hostile_record_file_is_one_line(board, data, words):
    (board / "record.toml").write_bytes(data)
    with pytest.raises(DataError, match=words) as e:
        read_record(board)
    assert "\n" not in str(e.value)


def test_a_missing_record_or_a_folder_without_one_is_one_line(tmp_path):
    for named in (tmp_path / "nowhere.toml", tmp_path):
        with pytest.raises(DataError, match="record file not found") as e:
            read_record(named)
        assert str(tmp_path / "nowhere.toml" if named.suffix else tmp_path / "record.toml") in str(e.value)
