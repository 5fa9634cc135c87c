"""`aa-harness curate`: the paper's training-data curation, each step reporting what it removed.

1. keep documents of at least 350 whitespace-delimited words;
2. keep authors with 2 to 50 documents;
3. per author, the cosine between all pairs of their documents under a reference embedder (the
   paper's all-mpnet-base-v2): keep the most dissimilar pair if its cosine is below 0.2, else drop the author;
4. replace person names, phone numbers, e-mail and IP addresses with placeholders.
The output is canonical JSONL.gz (never committed: it holds corpus text) plus a report.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from harness.data.collection import read_documents
from harness.data.documents import Document
from harness.data.jsonl import iter_jsonl
from harness.errors import DataError
from harness.foundation.atomic import atomic_open, atomic_write_text
from harness.foundation.progress import encode_with_progress, phase

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CurationSettings:
    min_words: int = 350
    min_docs: int = 2
    max_docs: int = 50
    max_cosine: float = 0.2
    # The registered system whose vectors the dissimilar-pair step uses: the callers name the one that
    # declares the reference-embedder capability (harness.runs.systems.reference_embedder); "" for none.
    embedder: str = ""
    sbert_model: str = "sentence-transformers/all-mpnet-base-v2"
    ner: str = "spacy"
    device: str = "auto"
    batch_size: int = 64


def _by_author(docs: Sequence[Document]) -> dict[str, list[Document]]:
    out: dict[str, list[Document]] = defaultdict(list)
    for d in docs:
        out[d.authorIDs[0]].append(d)
    return out


def keep_long(docs: Sequence[Document], min_words: int) -> list[Document]:
    return [d for d in docs if len(d.fullText.split()) >= min_words]


def keep_author_counts(docs: Sequence[Document], lo: int, hi: int) -> list[Document]:
    counts = {a: len(v) for a, v in _by_author(docs).items()}
    return [d for d in docs if lo <= counts[d.authorIDs[0]] <= hi]


def most_dissimilar_pairs(docs: Sequence[Document], embed: Callable[[list[str]], np.ndarray]) -> dict[str, dict]:
    """Per author, the pair of documents with the lowest cosine: {author: {"pair": [id, id], "cosine": c,
    "text_sha256": [h, h]}}. The text hashes let a pairs file computed elsewhere (a GPU machine) be
    checked against the documents it is applied to."""
    vecs = embed([d.fullText for d in docs])
    vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    row = {d.documentID: i for i, d in enumerate(docs)}
    pairs = {}
    for author, own in sorted(_by_author(docs).items()):
        v = vecs[[row[d.documentID] for d in own]]
        sims = v @ v.T
        sims[np.tril_indices(len(own))] = np.inf  # each unordered pair once, never a document with itself
        i, j = np.unravel_index(np.argmin(sims), sims.shape)
        pairs[author] = {
            "pair": [own[i].documentID, own[j].documentID],
            "cosine": round(float(sims[i, j]), 6),
            "text_sha256": [own[i].text_sha256, own[j].text_sha256],
        }
    return pairs


def _with_progress(embed: Callable[[list[str]], np.ndarray]) -> Callable[[list[str]], np.ndarray]:
    """embed under one bar with the time left, the run path's way (growing chunks, the first timed)."""

    def tracked(texts: list[str]) -> np.ndarray:
        return encode_with_progress(lambda part: embed(list(part)), texts, "curate: embed", chunk=2048)

    return tracked


def check_pairs(docs: Sequence[Document], pairs: dict[str, dict], source: str) -> None:
    """A pairs file must cover every author of `docs` with documents of theirs whose texts are unchanged."""
    by_id = {d.documentID: d for d in docs}
    for author in _by_author(docs):
        if author not in pairs:
            raise DataError(f"{source}: no pair for author {author!r} (was it computed from other inputs?)")
        for doc_id, sha in zip(pairs[author]["pair"], pairs[author]["text_sha256"]):
            doc = by_id.get(doc_id)
            if doc is None or doc.authorIDs[0] != author or doc.text_sha256 != sha:
                raise DataError(
                    f"{source}: author {author!r}: document {doc_id!r} is missing, by another author "
                    "or has a different text in these inputs"
                )


def keep_pairs_below(docs: Sequence[Document], pairs: dict[str, dict], max_cosine: float) -> list[Document]:
    """Each author's most dissimilar pair, kept only if its cosine is below max_cosine."""
    keep = {doc_id for p in pairs.values() if p["cosine"] < max_cosine for doc_id in p["pair"]}
    return [d for d in docs if d.documentID in keep]


def keep_dissimilar_pairs(
    docs: Sequence[Document], embed: Callable[[list[str]], np.ndarray], max_cosine: float
) -> list[Document]:
    """Per author, the pair with the lowest cosine, kept only if that cosine is below max_cosine."""
    return keep_pairs_below(docs, most_dissimilar_pairs(docs, embed), max_cosine)


SURVIVOR_THRESHOLDS = (0.2, 0.3, 0.4)


def survivors(pairs: dict[str, dict], sources: dict[str, str]) -> dict[str, dict[str, int]]:
    """Authors whose most dissimilar pair falls below each threshold, per source and in all."""
    out: dict[str, dict[str, int]] = {}
    for t in SURVIVOR_THRESHOLDS:
        row: dict[str, int] = defaultdict(int)
        for author, p in pairs.items():
            if p["cosine"] < t:
                row[sources[author]] += 1
                row["all"] += 1
        out[f"{t:.1f}"] = dict(sorted(row.items()))
    return out


def _count(step: str, before: Sequence[Document], after: Sequence[Document], seconds: float) -> dict:
    a_before, a_after = len(_by_author(before)), len(_by_author(after))
    return {
        "step": step,
        "removed_documents": len(before) - len(after),
        "removed_authors": a_before - a_after,
        "documents": len(after),
        "authors": a_after,
        "seconds": round(seconds, 1),
        "by_source": _per_source(after),
    }


def _per_source(docs: Sequence[Document]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for own in _by_author(docs).values():
        src = str(own[0].extra.get("source") or own[0].genre.split(":")[0])
        row = out.setdefault(src, {"documents": 0, "authors": 0})
        row["documents"] += len(own)
        row["authors"] += 1
    return dict(sorted(out.items()))


def curate(
    inputs: Sequence[str | Path],
    out: str | Path,
    settings: CurationSettings,
    *,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    pairs_file: str | Path | None = None,
    log=_log.info,
) -> dict:
    """embed: texts -> vectors for the dissimilar-pair step (`harness.runs.systems.text_embedder` builds
    one from `settings.embedder` and `settings.sbert_model`); the data layer never loads a model itself.

    Every author's most dissimilar pair is written beside the output (`<name>.pairs.jsonl.gz`);
    `pairs_file` reads such a file instead of embedding, so the vectors can be computed on a GPU
    machine and the curation (with its CPU-bound name recognition) finished elsewhere."""
    if (embed is None) == (pairs_file is None):
        raise ValueError("curate needs exactly one of embed and pairs_file")
    docs = list(read_documents(inputs).values())
    steps = [_count("read", docs, docs, 0.0)]

    def run(name, fn, current):
        t = time.perf_counter()
        after = fn(current)
        steps.append(_count(name, current, after, time.perf_counter() - t))
        log(f"curate: {name}: {steps[-1]['documents']} documents by {steps[-1]['authors']} authors remain")
        return after

    docs = run("min_words", lambda d: keep_long(d, settings.min_words), docs)
    docs = run("author_docs", lambda d: keep_author_counts(d, settings.min_docs, settings.max_docs), docs)
    t = time.perf_counter()
    if pairs_file is not None:
        pairs = {rec["author"]: rec for _, rec in iter_jsonl(Path(pairs_file))}
        check_pairs(docs, pairs, str(pairs_file))
        pairs = {a: pairs[a] for a in _by_author(docs)}
    else:
        assert embed is not None  # exactly one of the two, checked above
        log(
            f"curate: embedding {len(docs):,} documents for the dissimilar-pair step ({settings.embedder}, "
            f"{settings.sbert_model})"
        )
        pairs = most_dissimilar_pairs(docs, _with_progress(embed))
    pair_seconds = time.perf_counter() - t
    stem = Path(out).name.split(".jsonl")[0]
    with atomic_open(Path(out).with_name(stem + ".pairs.jsonl.gz"), "w", gz=True) as f:
        for author, p in sorted(pairs.items()):
            f.write(json.dumps({"author": author, **{k: p[k] for k in ("pair", "cosine", "text_sha256")}}) + "\n")
    source_of = {d.authorIDs[0]: str(d.extra.get("source") or d.genre.split(":")[0]) for d in docs}
    survived = survivors(pairs, source_of)
    docs = run("dissimilar_pair", lambda d: keep_pairs_below(d, pairs, settings.max_cosine), docs)
    steps[-1]["seconds"] = round(steps[-1]["seconds"] + pair_seconds, 1)
    t = time.perf_counter()
    from harness.data.anonymize import anonymize

    log(
        f"curate: replacing personal information in {len(docs):,} documents"
        + (" (person names by spaCy NER)" if settings.ner != "none" else "")
    )
    with phase("curate: names", len(docs), "doc") if settings.ner != "none" else contextlib.nullcontext(None) as adv:
        texts = anonymize([d.fullText for d in docs], ner=settings.ner, advance=adv)
    docs = [Document(d.documentID, d.authorIDs, t_, d.genre, d.extra) for d, t_ in zip(docs, texts)]
    steps.append(
        {
            **_count("anonymize", docs, docs, time.perf_counter() - t),
            "replaced": {
                k: sum(t_.count(k) for t_ in texts) for k in ("PERSON", "PHONE_NUMBER", "EMAIL_ADDRESS", "IP_ADDRESS")
            },
        }
    )
    out = Path(out)
    with atomic_open(out, "w", gz=out.suffix == ".gz") as f:
        for d in sorted(docs, key=lambda d: d.documentID):
            f.write(
                json.dumps(
                    {
                        "documentID": d.documentID,
                        "authorIDs": list(d.authorIDs),
                        "fullText": d.fullText,
                        "genre": d.genre,
                        **d.extra,
                    },
                    ensure_ascii=False,
                )
                + "\n"
            )
    report = {
        "inputs": [str(p) for p in inputs],
        "output": str(out),
        "settings": asdict(settings),
        "steps": steps,
        "pairs_from": str(pairs_file) if pairs_file else "embedded here",
        "authors_below_threshold": survived,
    }
    atomic_write_text(out.with_name(out.name.split(".jsonl")[0] + ".report.json"), json.dumps(report, indent=1) + "\n")
    return report
