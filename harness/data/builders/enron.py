"""enron from the JStylo demo corpus: 50 senders of the Enron e-mail, in ready-made ~500-word chunks.

The distribution is JStylo's `jsan_resources/corpora/enron_demo/` folder: one folder per sender,
`<sender>/*.txt`.

Rules: files in sorted path order (sender, then file name); text read as UTF-8 with universal
newlines, undecodable bytes replaced by U+FFFD, surrounding whitespace stripped; documentID
"enron/<sender>/<file>" (with ".txt"), authorIDs ["enron:<sender>"], genre "email", source
"enron".
"""

from __future__ import annotations

from pathlib import Path

from harness.data.builders import CorpusSource
from harness.data.builders.canonical import Expected
from harness.errors import DataError

SUBFOLDER = "jsan_resources/corpora/enron_demo"
SENDERS, FILES = 50, 650


def locate(folder: Path) -> Path:
    """The enron_demo folder: `folder` itself or its jsan_resources/corpora/enron_demo/ (a JStylo checkout)."""
    for cand in (folder, folder / SUBFOLDER):
        senders = [d for d in cand.glob("*") if d.is_dir() and any(d.glob("*.txt"))] if cand.is_dir() else []
        if senders:
            files = sum(1 for _ in cand.glob("*/*.txt"))
            if (len(senders), files) != (SENDERS, FILES):
                raise DataError(
                    f"{cand}: {len(senders)} sender folders with {files} .txt files, expected JStylo's "
                    f"enron_demo ({SENDERS} senders, {FILES} files)"
                )
            return cand
    if not folder.is_dir():
        raise DataError(f"{folder}: no such folder (expected JStylo's enron_demo folder)")
    raise DataError(f"{folder}: not JStylo's enron_demo folder: expected <sender>/*.txt (or {SUBFOLDER}/)")


def build(folder: Path) -> dict[str, list[dict]]:
    records = []
    for path in sorted(folder.glob("*/*.txt")):
        sender = path.parent.name
        text = path.read_text(encoding="utf-8", errors="replace").strip()
        records.append(
            {
                "documentID": f"enron/{sender}/{path.name}",
                "authorIDs": [f"enron:{sender}"],
                "fullText": text,
                "genre": "email",
                "source": "enron",
            }
        )
    return {"enron": records}


SOURCES = (
    CorpusSource(
        name="enron-jstylo",
        title="Enron e-mail, JStylo demo corpus",
        publisher="JStylo, Privacy, Security and Automation Lab (PSAL), Drexel University; the Enron Email Dataset "
        "(US FERC, prepared by CMU)",
        licence="JStylo: 3-Clause BSD (license.txt); nothing separate is stated for the e-mail text",
        revision=f"psal/jstylo @ bdc5a9e79adb35795819de147bb21ce2908ae45d, folder {SUBFOLDER}/",
        layout=f"{SENDERS} folders <sender>/*.txt",
        outputs={
            "enron": Expected(
                "db20687a328665a2adfc0f13142c009376aebbdb99e3058738ecb963683b5a2d",
                "84ca05763d265216dc43895a07865b55c9e39260b3d48c83241ac62db832fa5a",
                "enron.jsonl",
                1795653114,
                docs=650,
                authors=50,
            ),
        },
        locate=locate,
        build=build,
    ),
)
