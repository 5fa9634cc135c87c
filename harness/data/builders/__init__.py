"""Build the public corpus files from their public distributions, byte for byte.

Each source family is one module (`blogs`, `reddit`, `pan`, `enron`) that describes itself with a
`CorpusSource` (its `SOURCES`): where the distribution is published, its licence and the revision used, the
files it gives with their expected sha256, a `locate` that finds (or rejects) the distribution in
a folder, and a `build` that turns it into records. The rules each builder follows are in its
module's docstring.

`build_files(names, source, out)` builds every requested file in memory, checks each one's
sha256 against the published file's, and writes them (each atomically) only when all match: a
file that would differ is one line naming it and both hashes, and nothing is written.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import zlib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Callable

from harness.data.builders.canonical import Expected, gzip_bytes, jsonl_bytes, sha256
from harness.errors import DataError, UnknownNameError
from harness.foundation.atomic import atomic_open

log = logging.getLogger(__name__)

# One module per source family, in the order `aa-harness data build --help` lists them.
SOURCE_MODULES = (
    "harness.data.builders.reddit",
    "harness.data.builders.blogs",
    "harness.data.builders.pan",
    "harness.data.builders.enron",
)


@dataclass(frozen=True)
class CorpusSource:
    """A public distribution and the corpus files built from it.

    name: what `--source` must hold, also accepted as NAME to build all of `outputs`.
    title, publisher, licence, revision: for the help and the docs (revision: the copy the
        published files were built from, e.g. a repository and commit).
    layout: the distribution's layout in a few words, for error messages.
    outputs: file stem -> the published file's hashes and gzip header.
    locate: folder -> the distribution's folder inside it (the folder itself, or a known
        subfolder of a checkout); raises DataError naming the file or field it expected.
    build: the distribution's folder -> {file stem: records}; raises DataError on bad input.
    """

    name: str
    title: str
    publisher: str
    licence: str
    revision: str
    layout: str
    outputs: dict[str, Expected]
    locate: Callable[[Path], Path] = field(compare=False)
    build: Callable[[Path], dict[str, list[dict]]] = field(compare=False)


@cache
def sources() -> dict[str, CorpusSource]:
    out = {}
    for module in SOURCE_MODULES:
        for src in importlib.import_module(module).SOURCES:
            out[src.name] = src
    return out


def file_targets() -> dict[str, CorpusSource]:
    """Every buildable file stem -> its source."""
    return {stem: src for src in sources().values() for stem in src.outputs}


def build_command(filename: str, out: Path | None = None) -> str | None:
    """The command that builds a corpus file (e.g. "reddit-xsub.jsonl.gz") into `out`, or None if none does."""
    stem = filename.removesuffix(".gz").removesuffix(".jsonl")
    src = file_targets().get(stem)
    if src is None:
        return None
    return f"aa-harness data build {stem} --source DIR{f' --out {out}' if out else ''} (DIR: the {src.title})"


def resolve(names: list[str]) -> tuple[CorpusSource, list[str]]:
    """The one source the names come from, and the file stems they ask for (a source name: all its files)."""
    targets, srcs = file_targets(), sources()
    stems: list[str] = []
    chosen: set[str] = set()
    for name in names:
        if name in srcs:
            chosen.add(name)
            stems += [s for s in srcs[name].outputs if s not in stems]
        elif name in targets:
            chosen.add(targets[name].name)
            stems += [name] if name not in stems else []
        else:
            close = difflib.get_close_matches(name, [*targets, *srcs], n=3, cutoff=0.5)
            hint = f"; did you mean {' or '.join(close)}?" if close else f"; buildable: {', '.join(targets)}"
            raise UnknownNameError(f"{name!r} is no buildable corpus file{hint}")
    if len(chosen) > 1:
        raise DataError(
            f"{', '.join(names)} come from different sources ({', '.join(sorted(chosen))}): "
            "build them with one command per source"
        )
    return srcs[chosen.pop()], stems


@dataclass(frozen=True)
class Built:
    stem: str
    path: Path
    sha256: str
    docs: int
    authors: int
    unchanged: bool  # the file was already there with these bytes


def encode(stem: str, records: list[dict], expected: Expected) -> bytes:
    """The file's bytes, checked against the published file's sha256 (DataError, one line, on a mismatch)."""
    body = jsonl_bytes(records)
    data = gzip_bytes(body, expected.gzip_fname, expected.gzip_mtime)
    got = sha256(data)
    if got != expected.sha256:
        if sha256(body) == expected.jsonl_sha256:
            raise DataError(
                f"{stem}.jsonl.gz: built sha256 {got}, expected {expected.sha256}: the content is right "
                f"but this zlib ({zlib.ZLIB_RUNTIME_VERSION}) compresses it differently; nothing written"
            )
        raise DataError(f"{stem}.jsonl.gz: built sha256 {got}, expected {expected.sha256}; nothing written")
    return data


def build_files(names: list[str], source: str | Path, out: str | Path) -> list[Built]:
    """Build the named files from the distribution in `source` into `out`; all or nothing."""
    src, stems = resolve(names)
    folder = src.locate(Path(source))
    log.info("building %s from %s (%s)", ", ".join(f"{s}.jsonl.gz" for s in stems), folder, src.title)
    records = src.build(folder)
    blobs = {stem: encode(stem, records[stem], src.outputs[stem]) for stem in stems}
    out = Path(out)
    done = []
    for stem, data in blobs.items():
        path = out / f"{stem}.jsonl.gz"
        unchanged = path.is_file() and sha256(path.read_bytes()) == src.outputs[stem].sha256
        if not unchanged:
            with atomic_open(path, "wb") as f:
                f.write(data)
        recs = records[stem]
        done.append(
            Built(
                stem,
                path,
                src.outputs[stem].sha256,
                len(recs),
                len({a for r in recs for a in r["authorIDs"]}),
                unchanged,
            )
        )
    return done
