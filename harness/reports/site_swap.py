"""Replace a whole folder with a new set of files: a site is swapped in whole, so no page of an
earlier site (a run since removed, say) lingers beside the new one.

The new folder is built beside the target (same file system), then the target is renamed aside,
the new folder renamed into its place, and the old one deleted. A crash between the two renames
leaves the old folder aside; the next write puts it back before it starts. A target that holds
anything but an earlier site (no marker file) is refused, so a mistyped folder is never wiped.
"""
from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from harness.atomic import _alive
from harness.errors import HarnessError


def _siblings(target: Path, kind: str) -> list[Path]:
    return sorted(target.parent.glob(f".{target.name}.{kind}-*"))


def _pid(path: Path) -> int | None:
    part = path.name.rsplit("-", 2)[-2] if path.name.count("-") >= 2 else ""
    return int(part) if part.isdigit() else None


def _recover(target: Path) -> None:
    """Undo what a killed writer left: put an earlier folder back, delete half-built new ones."""
    for kind in ("old", "new"):
        for path in _siblings(target, kind):
            pid = _pid(path)
            if pid is not None and pid != os.getpid() and _alive(pid):
                continue  # another writer is at work
            if kind == "old" and not target.exists():
                os.replace(path, target)
            else:
                shutil.rmtree(path, ignore_errors=True)


def check_replaceable(target: Path, marker: str) -> None:
    """Raise unless `target` is absent, empty, or a folder this module wrote (it holds `marker`)."""
    target = Path(target)
    if target.exists() and not target.is_dir():
        raise HarnessError(f"{target}: not a folder")
    if target.is_dir() and any(target.iterdir()) and not (target / marker).is_file():
        raise HarnessError(f"{target}: the folder holds files that are not a site written here; refusing to replace "
                           "it (name a new or empty folder)")


def replace_folder(target: Path, files: dict[str, str | bytes], marker: str) -> Path:
    """Make `target` hold exactly `files` (relative path -> content); `marker` names the file that
    identifies a folder this function wrote (it must be among `files`)."""
    target = Path(target)
    _recover(target)
    check_replaceable(target, marker)
    target.parent.mkdir(parents=True, exist_ok=True)
    tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    new = target.parent / f".{target.name}.new-{tag}"
    try:
        for rel, content in files.items():
            path = new / rel
            if new.resolve() not in path.resolve().parents:
                raise HarnessError(f"{rel!r}: a site file must stay inside the site folder")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        if target.exists():
            old = target.parent / f".{target.name}.old-{tag}"
            os.replace(target, old)
            os.replace(new, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(new, target)
    finally:
        if new.exists():
            shutil.rmtree(new, ignore_errors=True)
    return target
