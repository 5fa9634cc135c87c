"""`aa-harness curate`: the paper's training-data curation, each step reporting what it removed.

1. keep documents of at least 350 whitespace-delimited words;
2. keep authors with 2 to 50 documents;
3. per author, SBERT (all-mpnet-base-v2) cosine between all pairs of their documents: keep the
   most dissimilar pair if its cosine is below 0.2, else drop the author;
4. replace person names, phone numbers, e-mail and IP addresses with placeholders.
The output is canonical JSONL.gz (never committed: it holds corpus text) plus a report.
"""
from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from harness.atomic import atomic_open, atomic_write_text
from harness.data.collection import read_documents
from harness.data.documents import Document


@dataclass(frozen=True)
class CurationSettings:
    min_words: int = 350
    min_docs: int = 2
    max_docs: int = 50
    max_cosine: float = 0.2
    embedder: str = "sbert"  # a registered system that can encode; the dissimilar-pair step uses its vectors
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


def keep_dissimilar_pairs(docs: Sequence[Document], embed: Callable[[list[str]], np.ndarray], max_cosine: float) -> list[Document]:
    """Per author, the pair with the lowest cosine, kept only if that cosine is below max_cosine."""
    vecs = embed([d.fullText for d in docs])
    vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
    row = {d.documentID: i for i, d in enumerate(docs)}
    kept = []
    for author, own in sorted(_by_author(docs).items()):
        v = vecs[[row[d.documentID] for d in own]]
        sims = v @ v.T
        sims[np.tril_indices(len(own))] = np.inf  # each unordered pair once, never a document with itself
        i, j = np.unravel_index(np.argmin(sims), sims.shape)
        if sims[i, j] < max_cosine:
            kept += [own[i], own[j]]
    return kept


def _count(step: str, before: Sequence[Document], after: Sequence[Document], seconds: float) -> dict:
    a_before, a_after = len(_by_author(before)), len(_by_author(after))
    return {"step": step, "removed_documents": len(before) - len(after), "removed_authors": a_before - a_after,
            "documents": len(after), "authors": a_after, "seconds": round(seconds, 1)}


def curate(inputs: Sequence[str | Path], out: str | Path, settings: CurationSettings, *,
           embed: Callable[[list[str]], np.ndarray], log=print) -> dict:
    """embed: texts -> vectors for the dissimilar-pair step (`harness.runs.systems.text_embedder` builds
    one from `settings.embedder` and `settings.sbert_model`); the data layer never loads a model itself."""
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
    docs = run("dissimilar_pair", lambda d: keep_dissimilar_pairs(d, embed, settings.max_cosine), docs)
    t = time.perf_counter()
    from harness.data.anonymize import anonymize

    texts = anonymize([d.fullText for d in docs], ner=settings.ner)
    docs = [Document(d.documentID, d.authorIDs, t_, d.genre, d.extra) for d, t_ in zip(docs, texts)]
    steps.append({**_count("anonymize", docs, docs, time.perf_counter() - t),
                  "replaced": {k: sum(t_.count(k) for t_ in texts) for k in ("PERSON", "PHONE_NUMBER", "EMAIL_ADDRESS", "IP_ADDRESS")}})
    out = Path(out)
    with atomic_open(out, "w", gz=out.suffix == ".gz") as f:
        for d in sorted(docs, key=lambda d: d.documentID):
            f.write(json.dumps({"documentID": d.documentID, "authorIDs": list(d.authorIDs), "fullText": d.fullText,
                                "genre": d.genre, **d.extra}, ensure_ascii=False) + "\n")
    report = {"inputs": [str(p) for p in inputs], "output": str(out), "settings": asdict(settings), "steps": steps}
    atomic_write_text(out.with_name(out.name.split(".jsonl")[0] + ".report.json"), json.dumps(report, indent=1) + "\n")
    return report
