"""Several files that belong together, written as one set: a crash leaves the old set or the new one.

A page and its plots, an export's three tables, topic labels and the relabelled corpus, a
result and its rankings, the manifests of several seeds: each file is atomic on its own
(harness.foundation.atomic), but a crash or a full disk after the first file used to leave new and old
files side by side. Here every file is first built in a staging folder inside its target
(same file system, so the moves are renames), then a journal listing the files is written
atomically and fsynced, then the files are moved into place and the journal removed.

A set may span several folders (`--out A --labelled-out B`). Each folder gets a staging folder
of the same name; the first folder (by real path) holds the one journal, which names every
folder's files, and each other folder holds a pointer (`<staging name>.set`) back to that
folder, written before the journal. The journal is the commit point for the whole set: without
it every folder's staging is discarded, with it every folder is rolled forward together.

Recovery belongs to the writer: a command that writes a set holds the lock of each of its
folders, and of every folder that shares an unfinished set with them (flock on the folder
itself, taken in one order), while it recovers and writes. A journal whose writer is gone means
the set was complete and is rolled forward (the remaining moves are made, in every folder); a
staging folder without a journal means the set was never complete and is deleted. The journal
goes only once every folder's files are in place, so a kill during recovery is recovered again.

Readers never recover: `report_unfinished(folder)` logs one line per set an interrupted writer
left and changes nothing, and `settled(folder, rel)` says where the last complete state of a
file lies (its staged copy while a committed set is unfinished; `settled_glob` lists that
state's names). What a journal names is
checked before anything moves (a relative path, no '..', no links, a regular file inside its
staging folder; another folder only if it points back); a staging entry that is not a real
folder, or a journal that fails the check, is left alone and reported.

API:
    write_output_set(target, {"main.md": text, "plots/s8.png": png_bytes})
    write_sets({pages_dir: pages, site_dir: site})   # one set across folders
    write_files_as_set({Path("a/l.json"): text, Path("b/c.jsonl"): corpus})
    with staged_output(target) as stage:       # for code that writes files itself
        fig.savefig(stage.path("plots/s8.png"))
        stage.write("main.md", text)
        stage.remove("old.md")                 # goes with the commit
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
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from harness.errors import HarnessError
from harness.foundation.atomic import _alive, _umask, make_dirs

log = logging.getLogger(__name__)

PREFIX = ".aa-output-set."
JOURNAL = ".journal"
POINTER = ".set"  # beside a staging folder of a set across folders: names the folder with the journal
_SIDE = (JOURNAL, JOURNAL + ".tmp", POINTER, POINTER + ".tmp")


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
        self.removed: set[str] = set()

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

    def remove(self, rel: str) -> None:
        """Remove target/rel with the commit (a page the new set retires), not before and not without it."""
        self.removed.add(_check_rel(rel))

    def files(self) -> list[str]:
        return sorted(p.relative_to(self.folder).as_posix() for p in self.folder.rglob("*") if p.is_file())


_held = threading.local()  # the targets this thread holds the lock of (a set written inside another set's write)


def _holds(target: Path) -> bool:
    return os.path.realpath(target) in getattr(_held, "targets", set())


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


@dataclass(frozen=True)
class _Part:
    """One folder's share of a set: its staging folder, the files to move in, the files to remove."""

    target: Path
    staging: Path
    files: list[str]
    remove: list[str]


def _read_json(path: Path, what: str) -> dict | str:
    """The object in a journal or pointer, or why it cannot be trusted."""
    if not _is_real(path, stat.S_IFREG):
        return f"its {what} is not a regular file"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return f"its {what} cannot be read"
    return data if isinstance(data, dict) else f"its {what} is not an object"


def _check_part(target: Path, staging: Path, files: object, remove: object) -> _Part | str:
    """One folder's lists from a journal, checked like staged names, or why they cannot be trusted."""
    if not isinstance(files, list) or not isinstance(remove, list):
        return "its journal is not a list of files"
    for rel in [*files, *remove]:
        try:
            if not isinstance(rel, str) or _check_rel(rel) != rel:
                return f"its journal names {rel!r}, not a plain relative path"
        except HarnessError:
            return f"its journal names {rel!r}, outside the folder"
        if not _no_links_to(target, rel):
            return f"{rel!r} passes through a link in {target}"
    for rel in files:
        src = staging / rel  # a file already moved is absent; one still there must be a plain file
        if not _no_links_to(staging, rel) or ((src.exists() or src.is_symlink()) and not _is_real(src, stat.S_IFREG)):
            return f"{rel!r} in the staging folder is not a regular file"
    return _Part(target, staging, files, remove)


def _plan(primary: Path, name: str) -> list[_Part] | str | None:
    """Every folder's part of the set `name` whose journal is in `primary`; None when there is no
    journal (the set was never committed, or is finished); a string says why it cannot be trusted."""
    journal = primary / (name + JOURNAL)
    if not os.path.lexists(journal):
        return None
    data = _read_json(journal, "journal")
    if isinstance(data, str):
        return data
    others = data.get("others", [])
    if not isinstance(others, list) or not all(isinstance(o, dict) for o in others):
        return "its journal is not a list of folders"
    parts = []
    for folder, files, remove in [
        (str(primary), data.get("files"), data.get("remove", [])),
        *((o.get("folder"), o.get("files"), o.get("remove", [])) for o in others),
    ]:
        if not isinstance(folder, str) or not os.path.isabs(folder) or not _is_real(Path(folder), stat.S_IFDIR):
            return f"its journal names {folder!r}, not a folder"
        target = Path(folder)
        if target != primary and _pointer(target, name) != os.path.realpath(primary):
            return f"its journal names {target}, which does not point back to it"
        if not _is_real(target / name, stat.S_IFDIR):
            return f"{target / name} is not a staging folder"
        part = _check_part(target, target / name, files, remove)
        if isinstance(part, str):
            return part
        parts.append(part)
    return parts


def _pointer(target: Path, name: str) -> str | None:
    """The folder that the pointer of set `name` in `target` names, or None."""
    data = _read_json(target / (name + POINTER), "pointer")
    folder = None if isinstance(data, str) else data.get("journal_in")
    return folder if isinstance(folder, str) and os.path.isabs(folder) else None


def _move(part: _Part) -> None:
    """Make the moves and removals of one folder that are still to do (running it twice does no harm)."""
    target = part.target
    for rel in part.files:
        src = part.staging / rel
        if _is_real(src, stat.S_IFREG):
            dst = target / rel
            if _is_real(dst, stat.S_IFDIR):
                raise HarnessError(f"{dst}: is a folder, but the output set has a file there")
            make_dirs(dst.parent)
            os.replace(src, dst)
    for rel in part.remove:
        gone = target / rel
        if _is_real(gone, stat.S_IFREG):
            gone.unlink()
        for parent in gone.relative_to(target).parents[:-1]:  # folders the removal emptied
            try:
                (target / parent).rmdir()
            except OSError:
                break


def _finish(parts: Sequence[_Part], journal: Path) -> None:
    """Roll every folder of a committed set forward; the journal goes only when all are in place."""
    for part in parts:
        _move(part)
    journal.unlink()
    for part in parts:
        shutil.rmtree(part.staging, ignore_errors=True)
        (part.target / (part.staging.name + POINTER)).unlink(missing_ok=True)


def _leftovers(target: Path) -> list[Path]:
    """The staging entries (not journals or pointers) in `target`, by name."""
    try:
        return sorted(p for p in target.iterdir() if p.name.startswith(PREFIX) and not p.name.endswith(_SIDE))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _busy(entry: Path) -> bool:
    """A live writer other than this process is building `entry`."""
    pid = _pid_of(entry.name)
    return pid is not None and pid != os.getpid() and _alive(pid)


def _related(target: Path) -> set[str]:
    """The real paths of the other folders that share an unfinished set with `target`."""
    out = set()
    for entry in _leftovers(target):
        primary = target if os.path.lexists(target / (entry.name + JOURNAL)) else _pointer(target, entry.name)
        if primary is None or not _is_real(Path(primary) / entry.name, stat.S_IFDIR):
            continue
        out.add(os.path.realpath(primary))
        data = _read_json(Path(primary) / (entry.name + JOURNAL), "journal")
        others = [] if isinstance(data, str) else data.get("others", [])
        for o in others if isinstance(others, list) else []:
            folder = o.get("folder") if isinstance(o, dict) else None
            if isinstance(folder, str) and os.path.isabs(folder) and _is_real(Path(folder) / entry.name, stat.S_IFDIR):
                out.add(os.path.realpath(folder))
    return out - {os.path.realpath(target)}


@contextmanager
def _locked(targets: Sequence[Path]) -> Iterator[None]:
    """Hold the locks of `targets` and of every folder sharing an unfinished set with them, taken in
    order of real path so that two writers never wait on each other."""
    wanted = {os.path.realpath(t) for t in targets}
    while True:
        todo = list(wanted)
        while todo:  # the folders reachable through unfinished sets
            for key in _related(Path(todo.pop())) - wanted:
                wanted.add(key)
                todo.append(key)
        with ExitStack() as stack:
            for key in sorted(wanted):
                try:
                    stack.enter_context(writer_lock(Path(key)))
                except OSError:  # a folder that cannot be locked: its sets are left alone (see _recover_locked)
                    if key in {os.path.realpath(t) for t in targets}:
                        raise
            if all(_related(Path(k)) <= wanted for k in wanted):
                yield
                return
        # a writer was killed between the look and the locks: look again


_reported: set[str] = set()


def _warn_once(key: Path | str, message: str, *args: object) -> None:
    """A command that meets one leftover several times (a folder read twice, seed after seed, each
    folder of a set) says it once."""
    if str(key) not in _reported:
        _reported.add(str(key))
        log.warning(message, *args)


def report_unfinished(folder: str | os.PathLike) -> list[Path]:
    """For readers: log one line per set an interrupted writer left in `folder`, and change nothing.

    A set that was never committed left the old files in place; a committed one is read through
    `settled`. The command that writes the folder finishes or discards the set the next time it
    writes there. Returns the staging entries reported."""
    folder = Path(folder)
    found = [e for e in _leftovers(folder) if not _busy(e)]
    for entry in found:
        primary = folder if os.path.lexists(folder / (entry.name + JOURNAL)) else _pointer(folder, entry.name)
        plan = _plan(Path(primary), entry.name) if primary else None
        if isinstance(plan, list) and len(plan) > 1:
            span = f" (one set across {', '.join(str(p.target) for p in plan)})"
        else:
            span = " (one set across several folders)" if primary not in (None, folder) else ""
        _warn_once(
            Path(os.path.realpath(primary or folder)) / entry.name,  # the same key in each folder: one line a set
            "%s: an interrupted write left %s%s; reading the last complete set and changing nothing "
            "(the command that writes there finishes it)",
            folder,
            entry.name,
            span,
        )
    return found


def _unfinished_parts(folder: Path) -> Iterator[_Part]:
    """This folder's parts of the committed sets a killed writer left unfinished (journals that check out)."""
    for entry in _leftovers(folder):
        if _busy(entry) or not _is_real(entry, stat.S_IFDIR):
            continue
        primary = folder if os.path.lexists(folder / (entry.name + JOURNAL)) else _pointer(folder, entry.name)
        plan = _plan(Path(primary), entry.name) if primary else None
        for part in plan if isinstance(plan, list) else []:
            if os.path.realpath(part.target) == os.path.realpath(folder):
                yield part


def settled(folder: str | os.PathLike, rel: str) -> Path | None:
    """For readers: where folder/rel lies in the last complete state, without changing anything.

    While a committed set is unfinished, a file it has not moved yet is read from its staging
    folder, and a file it removes is absent (None); otherwise folder/rel itself."""
    folder, rel = Path(folder), _check_rel(rel)
    for part in _unfinished_parts(folder):
        if rel in part.files and _is_real(part.staging / rel, stat.S_IFREG):
            return part.staging / rel
        if rel in part.remove:
            return None
    return folder / rel


def settled_glob(folder: str | os.PathLike, pattern: str) -> list[str]:
    """For readers: the names (relative to `folder`) matching `pattern` in the last complete state: the
    entries in place (whatever they are: a reader names a folder where a file belongs), and the files
    an unfinished committed set has still to move in, less those it removes. Read each through `settled`."""
    folder = Path(folder)
    depth = len(PurePosixPath(pattern).parts)
    names = {
        p.relative_to(folder).as_posix()
        for p in folder.glob(pattern)
        if not p.relative_to(folder).parts[0].startswith(PREFIX)
    }
    for part in _unfinished_parts(folder):
        names |= {r for r in part.files if len(PurePosixPath(r).parts) == depth and PurePosixPath(r).match(pattern)}
    return sorted(n for n in names if settled(folder, n) is not None)


def recover(target: str | os.PathLike) -> None:
    """The writer's recovery: under the locks, finish or discard the sets a killed writer left in `target`.

    Only the command that owns `target` calls this (see the module docstring); readers call
    report_unfinished."""
    target = Path(target)
    if not target.is_dir():
        return
    with _locked([target]):
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
        _recover_entry(target, entry)
    for side in [*target.glob(f"{PREFIX}*{JOURNAL}.tmp"), *target.glob(f"{PREFIX}*{POINTER}.tmp")]:
        pid = _pid_of(side.name)  # written when its writer died: the set was never committed
        if pid is None or not _alive(pid) or pid == os.getpid():
            side.unlink(missing_ok=True)
    for side in [*target.glob(f"{PREFIX}*{JOURNAL}"), *target.glob(f"{PREFIX}*{POINTER}")]:
        if not os.path.lexists(side.with_name(side.name[: -len(side.suffix)])):
            pid = _pid_of(side.name)
            if pid is None or not _alive(pid) or pid == os.getpid():
                side.unlink(missing_ok=True)  # unlinks a link itself, never what it points to


def _recover_entry(target: Path, entry: Path) -> None:
    """Finish (in every folder) or discard the set whose staging folder in `target` is `entry`."""
    name = entry.name
    if os.path.lexists(target / (name + JOURNAL)):
        primary: Path | None = target
    elif os.path.lexists(target / (name + POINTER)):
        found = _pointer(target, name)
        primary = Path(found) if found and _is_real(Path(found), stat.S_IFDIR) else None
        if primary is None:
            _warn_once(entry, "%s: the interrupted write %s was left alone: its pointer names no folder", target, name)
            return
    else:
        primary = None
    plan = _plan(primary, name) if primary else None
    if plan is None:  # never committed (or finished, its staging being cleared): the old set stands
        shutil.rmtree(entry, ignore_errors=True)
        (target / (name + POINTER)).unlink(missing_ok=True)
        return
    if isinstance(plan, str) or not any(os.path.samefile(p.target, target) for p in plan):
        why = plan if isinstance(plan, str) else "its journal does not name this folder"
        _warn_once(entry, "%s: the interrupted write %s was left alone: %s", target, name, why)
        return
    if not all(_holds(p.target) for p in plan):
        _warn_once(entry, "%s: the interrupted write %s spans a folder this command cannot lock; left", target, name)
        return
    assert primary is not None
    _finish(plan, primary / (name + JOURNAL))
    log.info("%s: finished an interrupted write of %d file(s)", target, sum(len(p.files) for p in plan))


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


def _write_synced(path: Path, obj: object) -> None:
    """Write a journal or pointer atomically and durably (a power cut cannot undo the commit)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _prepare(targets: Sequence[Path]) -> None:
    """Create the target folders; a file in the way of any is refused before any folder is made."""
    for target in targets:
        p = target
        while not p.exists() and p != p.parent:
            p = p.parent
        if not p.is_dir():
            raise HarnessError(
                f"{p}: is a file, but a set of files is written into a folder "
                f"{'there' if p == target else f'under it ({target})'}; nothing was changed"
            )
    for target in targets:
        try:
            make_dirs(target)
        except OSError as e:
            raise _one_line(target, e) from e


@contextmanager
def staged_sets(
    targets: Sequence[str | os.PathLike], *, replace_folders: Mapping[Path, Sequence[str]] | None = None
) -> Iterator[list[Stage]]:
    """Yield a Stage per target folder; on a clean exit their files replace those of the same names,
    in every folder, as one set (see the module docstring).

    Files of a target that the set does not name are left alone, except those under its
    `replace_folders` (subfolders the set replaces whole: their other files are removed with the
    commit). On an exception nothing changes and the staging folders are removed. The locks are
    held from the recovery to the commit."""
    paths = [Path(t) for t in targets]
    if len({os.path.realpath(t) for t in paths}) != len(paths):
        raise HarnessError(f"{', '.join(map(str, paths))}: a set names one folder twice")
    _prepare(paths)
    order = sorted(range(len(paths)), key=lambda i: os.path.realpath(paths[i]))  # the journal goes in the first
    name = f"{PREFIX}{os.getpid()}.{uuid.uuid4().hex[:12]}"
    with _locked(paths):
        stages: list[Stage] = []
        committed = False
        try:
            for t in paths:
                _recover_locked(t)
            for i in order[1:]:  # each other folder names the journal's folder before it stages anything
                _write_synced(paths[i] / (name + POINTER), {"journal_in": os.path.realpath(paths[order[0]])})
            for t in paths:
                stages.append(Stage(t, t / name))
                stages[-1].folder.mkdir()
            yield stages
            parts = [_staged_part(stages[i], (replace_folders or {}).get(paths[i], ())) for i in order]
            journal = parts[0].target / (name + JOURNAL)
            others = [{"folder": os.path.realpath(p.target), "files": p.files, "remove": p.remove} for p in parts[1:]]
            _write_synced(
                journal, {"files": parts[0].files, "remove": parts[0].remove, **({"others": others} if others else {})}
            )
            committed = True  # from here on the new set wins, in every folder, even after kill -9
            _finish(parts, journal)
        except BaseException as e:
            if not committed:
                for stage in stages:
                    shutil.rmtree(stage.folder, ignore_errors=True)
                for t in paths:
                    for side in (JOURNAL + ".tmp", POINTER, POINTER + ".tmp"):
                        (t / (name + side)).unlink(missing_ok=True)
            if isinstance(e, OSError):  # disk full, read-only, name too long
                raise _one_line(paths[0] if len(paths) == 1 else paths, e, committed) from e
            raise


def _staged_part(stage: Stage, replace_folders: Sequence[str]) -> _Part:
    """What one stage moves in and removes, after checking nothing on the way is a link or a folder."""
    files = stage.files()
    for rel in files:
        dst = stage.target / rel
        if not _no_links_to(stage.target, rel):
            raise HarnessError(f"{dst}: a folder on the way is a link; the output set writes inside {stage.target}")
        if _is_real(dst, stat.S_IFDIR):
            raise HarnessError(f"{dst}: is a folder, but the output set has a file there")
    removed = sorted(stage.removed - set(files))
    for rel in removed:
        if not _no_links_to(stage.target, rel):
            raise HarnessError(f"{stage.target / rel}: a folder on the way is a link; the output set removes it")
    stale = _stale_under(stage.target, replace_folders, set(files))
    return _Part(stage.target, stage.folder, files, sorted({*stale, *removed}))


@contextmanager
def staged_output(target: str | os.PathLike, *, replace_folders: Sequence[str] = ()) -> Iterator[Stage]:
    """Yield a Stage; on a clean exit its files replace those of the same names in `target` as one set
    (see staged_sets)."""
    target = Path(target)
    with staged_sets([target], replace_folders={target: replace_folders}) as (stage,):
        yield stage


def _one_line(target: Path | Sequence[Path], e: OSError, committed: bool = False) -> HarnessError:
    where = e.filename if isinstance(e.filename, str) and e.filename else target
    folders = ", ".join(map(str, target)) if isinstance(target, list) else str(target)
    if isinstance(e, FileExistsError):
        return HarnessError(f"{where}: {e.strerror or e}")
    if committed:
        return HarnessError(
            f"{where}: cannot write ({e.strerror or e}); the new set is committed and the next write "
            f"to {folders} finishes it"
        )
    return HarnessError(f"{where}: cannot write ({e.strerror or e}); nothing in {folders} was changed")


def write_output_set(
    target: str | os.PathLike, files: Mapping[str, bytes | str], *, replace_folders: Sequence[str] = ()
) -> list[Path]:
    """Write {relative path: content} into `target` as one set; returns the paths written.

    replace_folders: subfolders of target the set replaces whole (see staged_output)."""
    with staged_output(target, replace_folders=replace_folders) as stage:
        written = [stage.write(rel, data) for rel, data in files.items()]
    return written


def write_sets(
    sets: Mapping[Path, Mapping[str, bytes | str]], *, replace_folders: Mapping[Path, Sequence[str]] | None = None
) -> list[Path]:
    """Write {folder: {relative path: content}} as one set across the folders; returns the paths written."""
    folders = list(sets)
    with staged_sets(folders, replace_folders=replace_folders) as stages:
        written = [
            stage.write(rel, data) for folder, stage in zip(folders, stages) for rel, data in sets[folder].items()
        ]
    return written


def write_files_as_set(paths: Mapping[Path, bytes | str]) -> list[Path]:
    """Write files that may lie in different folders as one set. Each folder is staged beside its
    files (never in a common parent, which may be `/` or on another device); the one journal makes
    the set all-or-nothing across the folders."""
    by_folder: dict[Path, dict[str, bytes | str]] = {}
    for p, data in paths.items():
        folder = Path(os.path.abspath(p)).parent
        key = next((f for f in by_folder if os.path.realpath(f) == os.path.realpath(folder)), folder)
        by_folder.setdefault(key, {})[Path(p).name] = data
    if by_folder:
        write_sets(by_folder)
    return [Path(p) for p in paths]
