"""Several files that belong together, written as one set: a crash leaves the old set or the new one.

A page and its plots, an export's three tables, topic labels and the relabelled corpus, a
result and its rankings, the manifests of several seeds: each file is atomic on its own
(harness.atomic), but a crash or a full disk after the first file used to leave new and old
files side by side. Here every file is first built in a staging folder inside the target
(same file system, so the moves are renames), then a journal listing the files is written
atomically, then the files are moved into place and the journal removed.

Recovery belongs to the writer: a command that writes a set into a folder holds that folder's
lock (flock on the folder itself, so nothing is added to it) while it recovers and writes. A
journal whose writer is gone means the set was complete and is rolled forward (the remaining
moves are made); a staging folder without a journal means the set was never complete and is
deleted. Readers never recover: `report_unfinished(folder)` logs what an interrupted writer
left and changes nothing. What a journal names is checked before anything moves (a relative
path, no '..', no links, a regular file inside its staging folder); a staging entry that is not
a real folder, or a journal that fails the check, is left alone and reported.

API:
    write_output_set(target, {"main.md": text, "plots/s8.png": png_bytes})
    with staged_output(target) as stage:       # for code that writes files itself
        fig.savefig(stage.path("plots/s8.png"))
        stage.write("main.md", text)
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import stat
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from harness.atomic import _alive, _umask, make_dirs
from harness.errors import HarnessError

log = logging.getLogger(__name__)

PREFIX = ".aa-output-set."
JOURNAL = ".journal"


def _check_rel(rel: str) -> str:
    """A relative path inside the target: no absolute path, no '..', no hidden staging names."""
    p = PurePosixPath(str(rel).replace(os.sep, "/"))
    if (
        p.is_absolute()
        or not p.parts
        or any(part in ("", ".", "..") for part in p.parts)
        or p.parts[0].startswith(PREFIX)
    ):
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
        make_dirs(p.parent)
        return p

    def write(self, rel: str, data: bytes | str) -> Path:
        p = self.path(rel)
        with open(p, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(p, 0o666 & ~_umask())
        return self.target / _check_rel(rel)

    def files(self) -> list[str]:
        return sorted(p.relative_to(self.folder).as_posix() for p in self.folder.rglob("*") if p.is_file())


_held = threading.local()  # the targets this thread holds the lock of (a set written inside another set's write)


@contextmanager
def writer_lock(target: Path) -> Iterator[None]:
    """Hold the lock of `target` (an existing folder): one writer recovers and writes there at a time."""
    key = os.path.realpath(target)
    held: set[str] = getattr(_held, "targets", set())
    _held.targets = held
    if key in held:
        yield
        return
    fd = os.open(target, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.warning("%s: another command is writing here; waiting for it", target)
            fcntl.flock(fd, fcntl.LOCK_EX)
        held.add(key)
        try:
            yield
        finally:
            held.discard(key)
    finally:
        os.close(fd)  # releases the lock


def _pid_of(name: str) -> int | None:
    rest = name[len(PREFIX) :].split(".")
    return int(rest[0]) if rest and rest[0].isdigit() else None


def _is_real(path: Path, kind: int) -> bool:
    """`path` exists and is of `kind` (stat.S_IFDIR, S_IFREG) itself, not through a link."""
    try:
        return stat.S_IFMT(os.lstat(path).st_mode) == kind
    except OSError:
        return False


def _no_links_to(base: Path, rel: str) -> bool:
    """No link among the folders from `base` down to base/rel (those that exist); the last step is not checked."""
    p = base
    for part in rel.split("/")[:-1]:
        p = p / part
        if not p.exists() and not p.is_symlink():
            return True
        if not _is_real(p, stat.S_IFDIR):
            return False
    return True


def _plan(target: Path, folder: Path, journal: Path) -> tuple[list[str], list[str]] | str:
    """(files to move, files to remove) that a journal names, or why it cannot be trusted."""
    if not _is_real(journal, stat.S_IFREG):
        return "its journal is not a regular file"
    try:
        data = json.loads(journal.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return "its journal cannot be read"
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("files"), list)
        or not isinstance(data.get("remove", []), list)
    ):
        return "its journal is not a list of files"
    files, remove = data["files"], data.get("remove", [])
    for rel in [*files, *remove]:
        try:
            if not isinstance(rel, str) or _check_rel(rel) != rel:
                return f"its journal names {rel!r}, not a plain relative path"
        except HarnessError:
            return f"its journal names {rel!r}, outside the folder"
        if not _no_links_to(target, rel):
            return f"{rel!r} passes through a link in {target}"
    for rel in files:
        src = folder / rel  # a file already moved is absent; one still there must be a plain file
        if not _no_links_to(folder, rel) or ((src.exists() or src.is_symlink()) and not _is_real(src, stat.S_IFREG)):
            return f"{rel!r} in the staging folder is not a regular file"
    return files, remove


def _roll_forward(target: Path, folder: Path, journal: Path, files: Sequence[str], remove: Sequence[str]) -> None:
    for rel in files:
        src = folder / rel
        if _is_real(src, stat.S_IFREG):
            dst = target / rel
            if _is_real(dst, stat.S_IFDIR):
                raise HarnessError(f"{dst}: is a folder, but the output set has a file there")
            make_dirs(dst.parent)
            os.replace(src, dst)
    for rel in remove:
        gone = target / rel
        if _is_real(gone, stat.S_IFREG):
            gone.unlink()
        for parent in gone.relative_to(target).parents[:-1]:  # folders the removal emptied
            try:
                (target / parent).rmdir()
            except OSError:
                break
    journal.unlink()
    shutil.rmtree(folder, ignore_errors=True)


def _leftovers(target: Path) -> list[Path]:
    """The staging entries (not journals) in `target`, by name."""
    try:
        return sorted(
            p
            for p in target.iterdir()
            if p.name.startswith(PREFIX) and not p.name.endswith((JOURNAL, JOURNAL + ".tmp"))
        )
    except (FileNotFoundError, NotADirectoryError):
        return []


def _busy(entry: Path) -> bool:
    """A live writer other than this process is building `entry`."""
    pid = _pid_of(entry.name)
    return pid is not None and pid != os.getpid() and _alive(pid)


_reported: set[str] = set()


def _warn_once(entry: Path, message: str, *args: object) -> None:
    """A command that meets one leftover several times (a folder read twice, seed after seed) says it once."""
    if str(entry) not in _reported:
        _reported.add(str(entry))
        log.warning(message, *args)


def report_unfinished(folder: str | os.PathLike) -> list[Path]:
    """For readers: log one line per set an interrupted writer left in `folder`, and change nothing.

    The files in place are read as they are; the command that writes the folder finishes or
    discards the set the next time it writes there. Returns the staging entries reported."""
    folder = Path(folder)
    found = [e for e in _leftovers(folder) if not _busy(e)]
    for entry in found:
        _warn_once(
            entry,
            "%s: an interrupted write left %s; reading the files in place and changing nothing "
            "(the command that writes this folder finishes it)",
            folder,
            entry.name,
        )
    return found


def recover(target: str | os.PathLike) -> None:
    """The writer's recovery: under `target`'s lock, finish or discard the sets a killed writer left there.

    Only the command that owns `target` calls this (see the module docstring); readers call
    report_unfinished."""
    target = Path(target)
    if not target.is_dir():
        return
    with writer_lock(target):
        _recover_locked(target)


def _recover_locked(target: Path) -> None:
    for entry in _leftovers(target):
        if not _is_real(entry, stat.S_IFDIR):
            _warn_once(
                entry,
                "%s: %s is not a staging folder of the harness (a link or a file); left alone",
                target,
                entry.name,
            )
            continue
        if _busy(entry) or _pid_of(entry.name) == os.getpid():
            continue  # a writer that does not hold the lock (an older harness) is building it now
        journal = entry.with_name(entry.name + JOURNAL)
        if journal.exists() or journal.is_symlink():
            plan = _plan(target, entry, journal)
            if isinstance(plan, str):
                _warn_once(entry, "%s: the interrupted write %s was left alone: %s", target, entry.name, plan)
                continue
            _roll_forward(target, entry, journal, *plan)
            log.info("%s: finished an interrupted write of %d file(s)", target, len(plan[0]))
        else:
            shutil.rmtree(entry, ignore_errors=True)
    for tmp in target.glob(f"{PREFIX}*{JOURNAL}.tmp"):  # a journal being written when its writer died
        pid = _pid_of(tmp.name)
        if pid is None or not _alive(pid) or pid == os.getpid():
            tmp.unlink(missing_ok=True)
    for journal in target.glob(f"{PREFIX}*{JOURNAL}"):
        if not os.path.lexists(journal.with_name(journal.name[: -len(JOURNAL)])):
            pid = _pid_of(journal.name)
            if pid is None or not _alive(pid) or pid == os.getpid():
                journal.unlink(missing_ok=True)  # unlinks a link itself, never what it points to


def _stale_under(target: Path, folders: Sequence[str], keep: set[str]) -> list[str]:
    """The regular files under target/<folder> that the new set does not name (a folder it replaces whole)."""
    out = []
    for name in folders:
        top = target / _check_rel(name)
        if not _no_links_to(target, f"{name}/x"):
            raise HarnessError(f"{top}: is a link; the output set writes a folder there")
        for root, _dirs, names in os.walk(top):  # does not follow links
            for n in names:
                rel = (Path(root) / n).relative_to(target).as_posix()
                if rel not in keep and _is_real(target / rel, stat.S_IFREG):
                    out.append(rel)
    return sorted(out)


@contextmanager
def staged_output(target: str | os.PathLike, *, replace_folders: Sequence[str] = ()) -> Iterator[Stage]:
    """Yield a Stage; on a clean exit its files replace those of the same names in `target` as one set.

    Files of `target` that the set does not name are left alone, except those under
    `replace_folders` (subfolders the set replaces whole: their other files are removed with the
    commit). On an exception nothing in `target` changes and the staging folder is removed. The
    target's lock is held from the recovery to the commit.
    """
    target = Path(target)
    try:
        if target.exists() and not target.is_dir():
            raise HarnessError(f"{target}: is a file, but a set of files is written into a folder there")
        make_dirs(target)
    except OSError as e:
        raise _one_line(target, e) from e
    with writer_lock(target):
        try:
            _recover_locked(target)
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
                if not _no_links_to(target, rel):
                    raise HarnessError(f"{dst}: a folder on the way is a link; the output set writes inside {target}")
                if _is_real(dst, stat.S_IFDIR):
                    raise HarnessError(f"{dst}: is a folder, but the output set has a file there")
            remove = _stale_under(target, replace_folders, set(files))
            tmp = journal.with_name(journal.name + ".tmp")
            tmp.write_text(json.dumps({"files": files, "remove": remove}), encoding="utf-8")
            os.replace(tmp, journal)  # from here on the new set wins, even after kill -9
            committed = True
            _roll_forward(target, folder, journal, files, remove)
        except BaseException as e:
            if not committed:
                shutil.rmtree(folder, ignore_errors=True)
                journal.with_name(journal.name + ".tmp").unlink(missing_ok=True)
            if isinstance(e, OSError):  # disk full, read-only, name too long: the old set is intact
                raise _one_line(target, e) from e
            raise


def _one_line(target: Path, e: OSError) -> HarnessError:
    where = e.filename if isinstance(e.filename, str) and e.filename else target
    return HarnessError(
        f"{where}: cannot write ({e.strerror or e}); nothing in {target} was changed"
        if not isinstance(e, FileExistsError)
        else f"{where}: {e.strerror or e}"
    )


def write_output_set(
    target: str | os.PathLike, files: Mapping[str, bytes | str], *, replace_folders: Sequence[str] = ()
) -> list[Path]:
    """Write {relative path: content} into `target` as one set; returns the paths written.

    replace_folders: subfolders of target the set replaces whole (see staged_output)."""
    with staged_output(target, replace_folders=replace_folders) as stage:
        written = [stage.write(rel, data) for rel, data in files.items()]
    return written


def write_files_as_set(paths: Mapping[Path, bytes | str]) -> list[Path]:
    """Write files that may lie in different folders as one set. Files of one folder are one output
    set there; files of several folders are each staged beside their target (never in a common
    parent, which may be `/` or on another device), then put in place together, the ones already
    moved put back if a later one fails."""
    absolute = {Path(os.path.abspath(p)): data for p, data in paths.items()}
    if not absolute:
        return []
    folders = {p.parent for p in absolute}
    if len(folders) == 1:
        base = folders.pop()
        write_output_set(base, {p.name: d for p, d in absolute.items()})
    else:
        _write_beside_each(absolute)
    return [Path(p) for p in paths]


def _write_beside_each(files: Mapping[Path, bytes | str]) -> None:
    from harness.atomic import make_dirs

    def beside(target: Path) -> Path:
        return target.with_name(f".{target.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")

    staged: dict[Path, Path] = {}  # target -> its new content, written beside it
    kept: dict[Path, Path] = {}  # target -> its former content, moved aside until every file is in place
    placed: list[Path] = []
    try:
        for target, data in files.items():
            make_dirs(target.parent)
            staged[target] = beside(target)
            with open(staged[target], "wb") as f:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)
            os.chmod(staged[target], 0o666 & ~_umask())
        for target in files:
            if target.is_file():
                kept[target] = beside(target)
                os.replace(target, kept[target])
            os.replace(staged.pop(target), target)
            placed.append(target)
    except OSError as e:
        for target in placed:  # undo: what was there goes back, what was not is removed
            try:
                if target in kept:
                    os.replace(kept.pop(target), target)
                else:
                    target.unlink()
            except OSError:
                pass
        for target, aside in kept.items():  # moved aside, but its new content never came
            try:
                os.replace(aside, target)
            except OSError:
                pass
        kept.clear()
        raise HarnessError(
            f"{getattr(e, 'filename', None) or next(iter(files))}: cannot write "
            f"({e.strerror or e}); nothing was changed"
        ) from None
    finally:
        for tmp in [*staged.values(), *kept.values()]:
            try:
                tmp.unlink()
            except OSError:
                pass
