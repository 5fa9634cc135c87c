"""reddit-xsub and reddit-train from reddit-college (Emory NLP): threads of eight college subreddits.

The distribution is the `dat/` folder of github.com/emorynlp/reddit-college: one folder per
subreddit, one JSON file per thread (`sid`, `title:` or `title`, `text`, `author`, `created`,
`comments`: {id: {text, author, created, replies: {...}}}).

Rules:

1. Items: thread files in sorted path order (subreddit folder, then file name). A file that is not
   readable UTF-8 JSON is skipped. A thread whose `sid` was seen before is skipped (a missing
   `sid` counts as one value); its item is the title, a newline and its text, stripped. Comments
   are walked depth first in file order (`comments`, then each one's `replies`); a comment id
   seen before, or an entry that is not an object, is skipped with its replies. Missing
   author/text read as "", a missing `created` as 0.
2. Items by users "[deleted]", "AutoModerator", "None" or "" and items whose stripped text is
   "[deleted]" or "[removed]" are dropped.
3. Documents: one user's items in one subreddit, sorted by (created, text, id); lines that start
   (after leading whitespace) with ">" or "&gt;" (quotes of someone else) are dropped; words
   (whitespace-separated) are appended to a buffer, and whenever it holds 350 or more words its
   first 600 become a document, joined by single spaces, and the buffer keeps the words after
   the 600th. A last remainder under 350 words is dropped. Documents are numbered 0.. within
   (user, subreddit).
4. Pools: per user, in sorted order, the user's documents in (subreddit) order are shuffled with
   random.Random(user); u = sha256("reddit-college:<user>") bucket. Two or more documents:
   u < 0.15 reserved (not built), u < 0.30 evaluation foreground (first 8, role "foreground",
   reddit-xsub), else training (first 4, role "train", reddit-train). One document: u < 0.5
   reserved, else background (role "background", reddit-xsub).
5. Records, in user order: documentID "reddit/<subreddit>/<user>/<i>", authorIDs
   ["reddit:<user>"], fullText, genre "reddit:<subreddit>", source "reddit-college", role.
6. reddit-train then loses the authors decontamination removed (harness.data.builders.rules).
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Iterator

from harness.data.builders import CorpusSource
from harness.data.builders.canonical import Expected
from harness.data.builders.rules import bucket, decontaminate
from harness.errors import DataError

SUBREDDITS = (
    "ApplyingToCollege",
    "AskAcademia",
    "College",
    "CollegeAdvice",
    "CollegeMajors",
    "CollegeRant",
    "Emory",
    "GradSchool",
)
SKIP_USERS = frozenset({"[deleted]", "AutoModerator", "None", ""})
SKIP_TEXTS = frozenset({"[deleted]", "[removed]"})
MIN_WORDS, MAX_WORDS = 350, 600
SALT = "reddit-college"
RESERVED_MULTI, FOREGROUND_MULTI, RESERVED_SINGLE = 0.15, 0.30, 0.5
FOREGROUND_CAP, TRAIN_CAP = 8, 4

Item = tuple[str, str, float, str, object]  # user, subreddit, created, text, id


def locate(folder: Path) -> Path:
    """The `dat/` folder: `folder` itself or its `dat/` (a checkout of the repository)."""
    for cand in (folder, folder / "dat"):
        if all((cand / s).is_dir() for s in SUBREDDITS):
            return cand
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (expected reddit-college's dat/ folder)")
    missing = [s for s in SUBREDDITS if not (folder / s).is_dir()]
    raise DataError(
        f"{folder}: not reddit-college's dat/ folder: expected a subfolder per subreddit, missing {', '.join(missing)}"
    )


def items(folder: Path) -> Iterator[Item]:
    """Every thread and comment, in the order of rule 1."""
    seen: set = set()

    def walk(comments, sub: str) -> Iterator[Item]:
        if not isinstance(comments, dict):
            return
        for cid, c in comments.items():
            if cid in seen or not isinstance(c, dict):
                continue
            seen.add(cid)
            yield c.get("author") or "", sub, float(c.get("created") or 0), c.get("text") or "", cid
            yield from walk(c.get("replies"), sub)

    for path in sorted(folder.glob("*/*.json")):
        sub = path.parent.name
        try:
            thread = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(thread, dict):
            raise DataError(f"{path}: expected a thread object with 'sid', 'title:', 'text', 'comments'")
        if thread.get("sid") in seen:
            continue
        seen.add(thread.get("sid"))
        title = thread.get("title:") or thread.get("title") or ""
        text = (title + "\n" + (thread.get("text") or "")).strip()
        yield thread.get("author") or "", sub, float(thread.get("created") or 0), text, thread.get("sid")
        yield from walk(thread.get("comments"), sub)


def unquoted_words(text: str) -> list[str]:
    return [w for line in text.splitlines() if not line.lstrip().startswith((">", "&gt;")) for w in line.split()]


def chunks(posts: list[tuple[float, str, object]]) -> list[str]:
    """One user's posts in one subreddit -> documents of 350-600 words (rule 3)."""
    docs: list[str] = []
    buffer: list[str] = []
    for _, text, _ in sorted(posts, key=lambda p: (p[0], p[1], p[2])):
        buffer += unquoted_words(text)
        while len(buffer) >= MIN_WORDS:
            docs.append(" ".join(buffer[:MAX_WORDS]))
            buffer = buffer[MAX_WORDS:]
    return docs


def record(user: str, sub: str, i: int, text: str, role: str) -> dict:
    return {
        "documentID": f"reddit/{sub}/{user}/{i}",
        "authorIDs": [f"reddit:{user}"],
        "fullText": text,
        "genre": f"reddit:{sub}",
        "source": "reddit-college",
        "role": role,
    }


def pools(docs_by_user: dict[str, list[tuple[str, int, str]]]) -> tuple[list[dict], list[dict]]:
    """(reddit-train, reddit-xsub) before decontamination, by rule 4."""
    train: list[dict] = []
    xsub: list[dict] = []
    for user in sorted(docs_by_user):
        docs = list(docs_by_user[user])
        random.Random(user).shuffle(docs)
        u = bucket(SALT, user)
        if len(docs) >= 2:
            if u < RESERVED_MULTI:
                continue
            dst, role, docs = (
                (xsub, "foreground", docs[:FOREGROUND_CAP])
                if u < FOREGROUND_MULTI
                else (train, "train", docs[:TRAIN_CAP])
            )
        else:
            if u < RESERVED_SINGLE:
                continue
            dst, role = xsub, "background"
        dst += [record(user, sub, i, text, role) for sub, i, text in docs]
    return train, xsub


def build(folder: Path) -> dict[str, list[dict]]:
    posts: dict[tuple[str, str], list[tuple[float, str, object]]] = defaultdict(list)
    for user, sub, created, text, iid in items(folder):
        if user not in SKIP_USERS and text.strip() not in SKIP_TEXTS:
            posts[(user, sub)].append((created, text, iid))
    docs_by_user: dict[str, list[tuple[str, int, str]]] = defaultdict(list)
    for user, sub in sorted(posts):
        docs_by_user[user] += [(sub, i, text) for i, text in enumerate(chunks(posts[(user, sub)]))]
    train, xsub = pools(docs_by_user)
    return {"reddit-xsub": xsub, "reddit-train": decontaminate("reddit-train", train)}


SOURCES = (
    CorpusSource(
        name="reddit-college",
        title="reddit-college (Emory NLP)",
        publisher="Emory NLP, github.com/emorynlp/reddit-college",
        licence="none stated (no licence file); the texts are Reddit users' posts",
        revision="emorynlp/reddit-college @ 86b4acbf92d8c2c8642bba91be93acacdb8b95fb, folder dat/",
        layout="dat/<subreddit>/<thread>.json for eight college subreddits",
        outputs={
            "reddit-xsub": Expected(
                "df098aa43a527197289be4514326f44cb3578c99eab276c2a2e0fdb7b95144fb",
                "c0f09654225601f83e714522fed8b6593eebc40f9e01c7f9c1ae250d5f3547c6",
                "reddit-xsub.jsonl",
                1795676472,
                docs=8136,
                authors=5583,
            ),
            "reddit-train": Expected(
                "58a022457785bf843fd53c16980ffa5bf9251967094564cf6db7b0d49fc2eda2",
                "11fd8d5a38f5c74223786b4076f8ee266b85cb476de722b8fb88a97a67f30a66",
                "reddit-train.jsonl.gz.tmp",
                1795710718,
                docs=13065,
                authors=4435,
            ),
        },
        locate=locate,
        build=build,
    ),
)
