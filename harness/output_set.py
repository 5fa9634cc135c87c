"""Several files that belong together, written as one set: a crash leaves the old set or the new one.

A page and its plots, an export's three tables, topic labels and the relabelled corpus, a
result and its rankings, the manifests of several seeds: each file is atomic on its own
(harness.atomic), but a crash or a full disk after the first file used to leave new and old
files side by side. Here every file is first built in a staging folder inside the target
(same file system, so the moves are renames), then a journal listing the files is written
atomically, then the files are moved into place and the journal removed.

Recovery: a journal whose writer is gone means the set was complete and is rolled forward
(the remaining moves are made); a staging folder without a journal means the set was never
complete and is deleted. `recover(target)` does this; every new set written into a folder
recovers it first, and the readers of results call it on a run folder they read.

API:
    write_output_set(target, {"main.md": text, "plots/s8.png": png_bytes})
    with staged_output(target) as stage:       # for code that writes files itself
        fig.savefig(stage.path("plots/s8.png"))
        stage.write("main.md", text)
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from harness.atomic import _alive, _umask
from harness.errors import HarnessError

log = logging.getLogger(__name__)

PREFIX = ".aa-output-set."
JOURNAL = ".journal"


def _check_rel(rel: str) -> str:
    """A relative path inside the target: no absolute path, no '..', no hidden staging names."""
    p = PurePosixPath(str(rel).replace(os.sep, "/"))
    if p.is_absolute() or not p.parts or any(part in ("", ".", "..") for part in p.parts) or p.parts[0].startswith(PREFIX):
        raise HarnessError(f"{rel!r}: an output file must be a relative path inside the output folder")
    return p.as_posix()


class Stage:
    """The staging folder of one set; files written here appear in the target together."""

    def __init__(self, target: Path, folder: Path):
        self.target = target
        self.folder = folder

    def path(self, rel: str) -> Path:
        """Where to write `rel` (parents created); it moves to target/rel when the set is committed."""
        p = self.folder / _check_rel(rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def write(self, rel: str, data: bytes | str) -> Path:
        p = self.path(rel)
        with open(p, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(p, 0o666 & ~_umask())
        return self.target / _check_rel(rel)

    def files(self) -> list[str]:
        return sorted(p.relative_to(self.folder).as_posix() for p in self.folder.rglob("*") if p.is_file())


def _pid_of(name: str) -> int | None:
    rest = name[len(PREFIX):].split(".")
    return int(rest[0]) if rest and rest[0].isdigit() else None


def _roll_forward(target: Path, folder: Path, journal: Path) -> list[str]:
    files = json.loads(journal.read_text(encoding="utf-8"))["files"]
    for rel in files:
        src = folder / rel
        if src.is_file():
            dst = target / rel
            if dst.is_dir() and not dst.is_symlink():
                raise HarnessError(f"{dst}: is a folder, but the output set has a file there")
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
    journal.unlink()
    shutil.rmtree(folder, ignore_errors=True)
    return files


def recover(target: str | os.PathLike) -> None:
    """Finish or discard the sets that a killed writer left in `target` (see the module docstring)."""
    target = Path(target)
    try:
        entries = [p for p in target.iterdir() if p.name.startswith(PREFIX)]
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in sorted(entries):
        if entry.name.endswith(JOURNAL) or not entry.is_dir():
            continue
        pid = _pid_of(entry.name)
        if pid is not None and pid != os.getpid() and _alive(pid):
            continue  # another writer is building this set right now
        if pid == os.getpid():
            continue
        journal = entry.with_name(entry.name + JOURNAL)
        if journal.is_file():
            files = _roll_forward(target, entry, journal)
            log.info("%s: finished an interrupted write of %d file(s)", target, len(files))
        else:
            shutil.rmtree(entry, ignore_errors=True)
    for journal in target.glob(f"{PREFIX}*{JOURNAL}"):
        if not journal.with_name(journal.name[: -len(JOURNAL)]).exists():
            pid = _pid_of(journal.name)
            if pid is None or not _alive(pid) or pid == os.getpid():
                journal.unlink(missing_ok=True)


@contextmanager
def staged_output(target: str | os.PathLike) -> Iterator[Stage]:
    """Yield a Stage; on a clean exit its files replace those of the same names in `target` as one set.

    Files of `target` that the set does not name are left alone. On an exception nothing in
    `target` changes and the staging folder is removed.
    """
    target = Path(target)
    try:
        if target.exists() and not target.is_dir():
            raise HarnessError(f"{target}: is a file, but a set of files is written into a folder there")
        target.mkdir(parents=True, exist_ok=True)
        recover(target)
        folder = target / f"{PREFIX}{os.getpid()}.{uuid.uuid4().hex[:12]}"
        folder.mkdir()
    except OSError as e:
        raise _one_line(target, e) from e
    journal = folder.with_name(folder.name + JOURNAL)
    committed = False
    try:
        stage = Stage(target, folder)
        yield stage
        files = stage.files()
        for rel in files:
            dst = target / rel
            if dst.is_dir() and not dst.is_symlink():
                raise HarnessError(f"{dst}: is a folder, but the output set has a file there")
        tmp = journal.with_name(journal.name + ".tmp")
        tmp.write_text(json.dumps({"files": files}), encoding="utf-8")
        os.replace(tmp, journal)  # from here on the new set wins, even after kill -9
        committed = True
        _roll_forward(target, folder, journal)
    except BaseException as e:
        if not committed:
            shutil.rmtree(folder, ignore_errors=True)
            journal.with_name(journal.name + ".tmp").unlink(missing_ok=True)
        if isinstance(e, OSError):  # disk full, read-only, name too long: the old set is intact
            raise _one_line(target, e) from e
        raise


def _one_line(target: Path, e: OSError) -> HarnessError:
    where = e.filename if isinstance(e.filename, str) and e.filename else target
    return HarnessError(f"{where}: cannot write ({e.strerror or e}); nothing in {target} was changed"
                        if not isinstance(e, FileExistsError) else f"{where}: {e.strerror or e}")


def write_output_set(target: str | os.PathLike, files: Mapping[str, bytes | str]) -> list[Path]:
    """Write {relative path: content} into `target` as one set; returns the paths written."""
    with staged_output(target) as stage:
        written = [stage.write(rel, data) for rel, data in files.items()]
    return written


def write_files_as_set(paths: Mapping[Path, bytes | str]) -> list[Path]:
    """Write files that may lie in different folders as one set, staged in their closest common folder."""
    absolute = {Path(os.path.abspath(p)): data for p, data in paths.items()}
    if not absolute:
        return []
    base = Path(os.path.commonpath([str(p.parent) for p in absolute]))
    write_output_set(base, {p.relative_to(base).as_posix(): d for p, d in absolute.items()})
    return [Path(p) for p in paths]
