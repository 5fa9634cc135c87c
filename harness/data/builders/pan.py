"""pan19-en, pan19-en.v2 and pan18-en from the PAN cross-domain authorship attribution training sets.

The distribution (PAN 2019: training dataset 2019-01-23; PAN 2018: 2017-12-02) is a folder with
`collection-info.json` ([{problem-name, language, ...}]) and one folder per problem:
`candidate*/known*.txt`, `unknown/*.txt`, `ground-truth.json` ({ground_truth: [{unknown-text,
true-author}]}) and, in PAN 2019, `fandom-info.json` ([{true-author, known-text, fandom}]).

Rules:

1. English problems only, in collection-info.json order. Texts are read as UTF-8 with universal
   newlines ("\\r\\n" and "\\r" become "\\n"), otherwise untouched.
2. Per problem: the known texts in sorted path order (candidate folder, then file), then the
   unknown texts in ground-truth order.
3. documentID "<tag>/<problem>/<candidate>/<known>" or "<tag>/<problem>/unknown/<unknown>" (file
   names without ".txt"; tag pan19 or pan18); author "<tag>:<problem>/<candidate>", and an
   unknown text by an outside author ("<UNK>") gets its own "<tag>:<problem>/UNK-<unknown>".
   genre: a known text's fandom from fandom-info.json when it has one, else "<problem>:known";
   every unknown text "<problem>:target-fandom". source "<tag>-en".
4. pan19-en.v2 (what the pan19-en collection reads) is pan19-en with near-copies resolved:
   texts lowercased and split into \\w+ tokens, 8-token shingles (blake2b, 8 bytes), shingles in
   more than 10 documents ignored; two documents are a near-copy pair when they share 20 or
   more of the remaining shingles and that is at least half of the smaller document's
   shingles. Authors linked by a pair are one person: each takes the smallest id (string order)
   of its linked group. Of each pair the document with the larger documentID is dropped. Order
   and fields are otherwise those of pan19-en.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from harness.data.builders import CorpusSource
from harness.data.builders.canonical import Expected
from harness.errors import DataError

PAN19_FOLDER = "pan19-cross-domain-authorship-attribution-training-dataset-2019-01-23"
PAN18_FOLDER = "pan18-cross-domain-authorship-attribution-training-dataset-2017-12-02"
SHINGLE, MIN_SHARED, MIN_CONTAINED, MAX_DOC_FREQ = 8, 20, 0.5, 10
TOKEN = re.compile(r"\w+")


def _json(path: Path) -> Any:
    if not path.is_file():
        raise DataError(f"{path}: missing (expected in a PAN cross-domain attribution training set)")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise DataError(f"{path}: not readable JSON ({e})") from None


def _field(obj: Any, key: str, path: Path) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise DataError(f"{path}: expected field {key!r} in every entry")
    return obj[key]


def english_problems(folder: Path) -> list[str]:
    info_path = folder / "collection-info.json"
    info = _json(info_path)
    if not isinstance(info, list):
        raise DataError(f"{info_path}: expected a list of problems")
    return [_field(p, "problem-name", info_path) for p in info if _field(p, "language", info_path) == "en"]


def locator(subfolder: str, problems: tuple[str, ...], title: str):
    """A `locate` for one PAN set: the folder itself or its `subfolder` (a checkout of a mirror), checked to
    hold `problems` as its English problems."""

    def locate(folder: Path) -> Path:
        base = next((c for c in (folder, folder / subfolder) if (c / "collection-info.json").is_file()), None)
        if base is None:
            if not folder.is_dir():
                raise DataError(f"{folder}: no such folder (expected the {title} folder)")
            raise DataError(f"{folder}: not the {title}: expected collection-info.json (or {subfolder}/)")
        found = english_problems(base)
        if tuple(found) != problems:
            raise DataError(
                f"{base / 'collection-info.json'}: not the {title}: expected English problems "
                f"{', '.join(problems)}, found {', '.join(found) or 'none'}"
            )
        for p in problems:
            _json(base / p / "ground-truth.json")
        return base

    return locate


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(f"{path}: missing (named in the problem's ground-truth.json)") from None


def problem_records(folder: Path, tag: str) -> list[dict]:
    """The English problems' texts as records (rules 1-3)."""
    out = []

    def rec(doc_id: str, author: str, text: str, genre: str) -> dict:
        return {
            "documentID": f"{tag}/{doc_id}",
            "authorIDs": [f"{tag}:{author}"],
            "fullText": text,
            "genre": genre,
            "source": f"{tag}-en",
        }

    for prob in english_problems(folder):
        pdir = folder / prob
        fandoms: dict[tuple[str, str], str] = {}
        if (pdir / "fandom-info.json").is_file():
            path = pdir / "fandom-info.json"
            for x in _json(path):
                fandoms[(_field(x, "true-author", path), _field(x, "known-text", path))] = _field(x, "fandom", path)
        for path in sorted(pdir.glob("candidate*/*.txt")):
            cand, known = path.parent.name, path.stem
            out.append(
                rec(
                    f"{prob}/{cand}/{known}", f"{prob}/{cand}", _text(path), fandoms.get((cand, known), f"{prob}:known")
                )
            )
        gt_path = pdir / "ground-truth.json"
        for g in _field(_json(gt_path), "ground_truth", gt_path):
            name, author = _field(g, "unknown-text", gt_path), _field(g, "true-author", gt_path)
            unknown = name.replace(".txt", "")
            who = f"UNK-{unknown}" if author == "<UNK>" else author
            out.append(
                rec(
                    f"{prob}/unknown/{unknown}",
                    f"{prob}/{who}",
                    _text(pdir / "unknown" / name),
                    f"{prob}:target-fandom",
                )
            )
    return out


def shingles(text: str) -> set[int]:
    tokens = TOKEN.findall(text.lower())
    return {
        int.from_bytes(hashlib.blake2b(" ".join(tokens[j : j + SHINGLE]).encode(), digest_size=8).digest(), "little")
        for j in range(len(tokens) - SHINGLE + 1)
    }


def near_copy_pairs(texts: list[str]) -> list[tuple[int, int]]:
    """Index pairs (i < j) of near-copies among `texts` (rule 4), in order of i, then of first shared shingle."""
    sets = [shingles(t) for t in texts]
    freq = Counter(h for s in sets for h in s)
    postings: dict[int, list[int]] = defaultdict(list)
    for j, s in enumerate(sets):
        for h in s:
            if freq[h] <= MAX_DOC_FREQ:
                postings[h].append(j)
    pairs = []
    for i, s in enumerate(sets):
        shared = Counter(j for h in s if freq[h] <= MAX_DOC_FREQ for j in postings[h] if j > i)
        for j, n in shared.items():
            if n >= MIN_SHARED and n / max(1, min(len(s), len(sets[j]))) >= MIN_CONTAINED:
                pairs.append((i, j))
    return pairs


def second_release(records: list[dict]) -> list[dict]:
    """pan19-en.v2 from pan19-en (rule 4)."""
    pairs = near_copy_pairs([r["fullText"] for r in records])
    linked: dict[str, set[str]] = defaultdict(set)
    for i, j in pairs:
        a, b = records[i]["authorIDs"][0], records[j]["authorIDs"][0]
        linked[a].add(b)
        linked[b].add(a)
    person: dict[str, str] = {}
    for start in sorted(linked):
        if start in person:
            continue
        group, todo = {start}, [start]
        while todo:
            for nxt in linked[todo.pop()] - group:
                group.add(nxt)
                todo.append(nxt)
        for a in group:
            person[a] = min(group)
    dropped = {max(records[i]["documentID"], records[j]["documentID"]) for i, j in pairs}
    return [
        dict(r, authorIDs=[person.get(a, a) for a in r["authorIDs"]]) for r in records if r["documentID"] not in dropped
    ]


def build_pan19(folder: Path) -> dict[str, list[dict]]:
    first = problem_records(folder, "pan19")
    return {"pan19-en": first, "pan19-en.v2": second_release(first)}


def build_pan18(folder: Path) -> dict[str, list[dict]]:
    return {"pan18-en": problem_records(folder, "pan18")}


PAN19_TITLE = "PAN 2019 cross-domain attribution training set"
PAN18_TITLE = "PAN 2018 cross-domain attribution training set"
SOURCES = (
    CorpusSource(
        name="pan19",
        title=PAN19_TITLE,
        publisher="the PAN shared tasks at CLEF, pan.webis.de",
        licence="none stated; the organisers distribute it for research through pan.webis.de",
        revision=f"yavuuzsameet/pan19-cross-domain-authorship @ 51d4dbcf70801466dad04967e067d6f239ad8b1d, "
        f"folder {PAN19_FOLDER}/",
        layout="collection-info.json and problem00001-problem00020/",
        outputs={
            "pan19-en.v2": Expected(
                "2bb30aaf35983a589b5fee3ea6f00d657fec0effce196ff97a492dc0da624330",
                "3284da0522b2fb82135a3caf752ad892003cc6c338a32ebb9e72bb855d49a737",
                "pan19-en.v2.jsonl.gz.tmp",
                1795710726,
                docs=1680,
                authors=500,
            ),
            "pan19-en": Expected(
                "42ccd8eed5d994c1ea6da809fb3e50621bc644d244d1f64074c7c650d25831a3",
                "a7899e32873c19829011c64615aa07e16f6ad9971b9f121c4d042a8ced7b9437",
                "pan19-en.jsonl",
                1795653113,
                docs=1761,
                authors=509,
            ),
        },
        locate=locator(PAN19_FOLDER, tuple(f"problem0000{i}" for i in range(1, 6)), PAN19_TITLE),
        build=build_pan19,
    ),
    CorpusSource(
        name="pan18",
        title=PAN18_TITLE,
        publisher="the PAN shared tasks at CLEF, pan.webis.de",
        licence="none stated; the organisers distribute it for research through pan.webis.de",
        revision=f"sallyi/lang-proc-exam @ 52488703e6713e97af793127b3e28be137839605, folder {PAN18_FOLDER}/",
        layout="collection-info.json and problem00001-problem00002/",
        outputs={
            "pan18-en": Expected(
                "723072e8f623f9bd4232291f55a2f5f4a0ab96d17622aab2837873d52a8b2b44",
                "bc99493398366ab8744839be71ceea386c7447dc6f535de9172fa22a329a4f5f",
                "pan18-en.jsonl",
                1795653114,
                docs=301,
                authors=25,
            ),
        },
        locate=locator(PAN18_FOLDER, ("problem00001", "problem00002"), PAN18_TITLE),
        build=build_pan18,
    ),
)
