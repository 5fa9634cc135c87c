"""Per-document topic labels derived from the text, for corpora that carry no per-document genre.

A cross-topic benchmark needs a "genre" per document that differs between a query and its
needles. For a single-genre corpus (blog posts) the label is derived here, deterministically:

  1. documents in documentID order; word TF-IDF (lowercased, English stop words removed,
     min_df / max_df below, sublinear tf);
  2. LSA: truncated SVD to `svd_dims` dimensions (randomized, fixed `seed`), rows L2-normalised;
  3. k-means (`k` clusters, fixed `random_state = seed`, `n_init` restarts) on those rows.

The label of a document is `<prefix><cluster>` (zero-padded), e.g. `topic:07`. The labels, the
settings and a sha256 over the sorted (documentID, label) pairs form a `TopicLabels` record,
which a collection puts into every split manifest it builds; `aa-harness topics` runs the
same step on any canonical JSONL file (and compares values of k).

Numerical libraries may round differently on another machine, so a collection reads its
committed labels file when one exists for the same input documents and settings (see
`load_or_derive`) rather than re-deriving them: a split is tied to the labels it was built on.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping, Sequence

from harness.errors import DataError
from harness.foundation.atomic import atomic_write_text

LABELS_SCHEMA = 1


@dataclass(frozen=True)
class TopicSettings:
    """How the labels are derived; every field goes into the manifests."""

    method: str = "tfidf-lsa-kmeans"
    k: int = 20
    svd_dims: int = 100
    min_df: int = 5
    max_df: float = 0.5
    stop_words: str = "english"
    sublinear_tf: bool = True
    seed: int = 0
    n_init: int = 4
    prefix: str = "topic:"

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class TopicLabels:
    settings: TopicSettings
    labels: Mapping[str, str]  # documentID -> label
    input_sha256: str  # over the sorted (documentID, text sha256) pairs that were labelled
    top_terms: Mapping[str, tuple[str, ...]]

    @property
    def sha256(self) -> str:
        return labels_fingerprint(self.labels)

    def summary(self) -> dict:
        """What a manifest records about the labelling (no labels themselves: they are in the fingerprint)."""
        sizes: dict[str, int] = {}
        for label in self.labels.values():
            sizes[label] = sizes.get(label, 0) + 1
        return {
            "settings": self.settings.as_dict(),
            "labels_sha256": self.sha256,
            "input_sha256": self.input_sha256,
            "n_documents": len(self.labels),
            "n_topics": len(sizes),
        }

    def to_json(self) -> str:
        obj = {
            "schema": LABELS_SCHEMA,
            "settings": self.settings.as_dict(),
            "input_sha256": self.input_sha256,
            "labels_sha256": self.sha256,
            "top_terms": {k: list(v) for k, v in sorted(self.top_terms.items())},
            "labels": dict(sorted(self.labels.items())),
        }
        return json.dumps(obj, indent=0, sort_keys=True, ensure_ascii=False) + "\n"


def labels_fingerprint(labels: Mapping[str, str]) -> str:
    h = hashlib.sha256()
    for doc_id in sorted(labels):
        h.update(json.dumps([doc_id, labels[doc_id]], ensure_ascii=False).encode("utf-8") + b"\n")
    return h.hexdigest()


def input_fingerprint(texts: Mapping[str, str]) -> str:
    h = hashlib.sha256()
    for doc_id in sorted(texts):
        h.update(
            json.dumps([doc_id, hashlib.sha256(texts[doc_id].encode("utf-8")).hexdigest()]).encode("utf-8") + b"\n"
        )
    return h.hexdigest()


def _lsa(texts: Sequence[str], s: TopicSettings):
    import numpy as np
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import normalize

    vec = TfidfVectorizer(
        lowercase=True,
        stop_words=s.stop_words or None,
        min_df=s.min_df,
        max_df=s.max_df,
        sublinear_tf=s.sublinear_tf,
        dtype=np.float64,
    )
    try:
        x = vec.fit_transform(texts)
    except ValueError as e:  # e.g. every term pruned by min_df/max_df
        raise DataError(f"{len(texts)} documents give no usable vocabulary for topics ({e})") from None
    if s.svd_dims >= x.shape[1]:
        raise DataError(
            f"--svd-dims {s.svd_dims}: the documents' vocabulary has {x.shape[1]} terms (after min_df "
            f"{s.min_df}); give fewer dimensions than terms"
        )
    svd = TruncatedSVD(n_components=s.svd_dims, algorithm="randomized", n_iter=7, random_state=s.seed)
    z = normalize(svd.fit_transform(x))
    return z, svd, vec


def check_parameters(n_documents: int, ks: Sequence[int], s: TopicSettings) -> None:
    """One-line errors for settings no clustering can meet, before any work."""
    if n_documents < 2:
        raise DataError(f"topics need at least 2 documents, the input has {n_documents}")
    for k in ks:
        if k < 1:
            raise DataError(f"--k {k}: the number of topics must be at least 1")
        if k > n_documents:
            raise DataError(f"--k {k}: {n_documents} documents cannot be split into {k} topics")
    if s.svd_dims < 1:
        raise DataError(f"--svd-dims {s.svd_dims}: give at least 1 dimension")


def derive_topics(texts: Mapping[str, str], settings: TopicSettings = TopicSettings()) -> TopicLabels:
    """Label every document of `texts` (documentID -> text) with one of `settings.k` topics."""
    import numpy as np
    from sklearn.cluster import KMeans

    s = settings
    if s.method != "tfidf-lsa-kmeans":
        raise DataError(f"unknown topic labelling method {s.method!r} (known: tfidf-lsa-kmeans)")
    ids = sorted(texts)
    check_parameters(len(ids), [s.k], s)
    z, svd, vec = _lsa([texts[i] for i in ids], s)
    km = KMeans(n_clusters=s.k, random_state=s.seed, n_init=s.n_init).fit(z)
    # Number the clusters by their smallest member id, so the numbering does not depend on
    # k-means' internal order.
    first: dict[int, str] = {}
    for doc_id, c in zip(ids, km.labels_):
        first.setdefault(int(c), doc_id)
    rank = {c: i for i, c in enumerate(sorted(first, key=lambda c: first[c]))}
    width = len(str(s.k - 1))
    name = {c: f"{s.prefix}{rank[c]:0{width}d}" for c in rank}
    labels = {doc_id: name[int(c)] for doc_id, c in zip(ids, km.labels_)}
    terms = np.asarray(vec.get_feature_names_out())
    weights = km.cluster_centers_ @ svd.components_
    top = {name[c]: tuple(str(t) for t in terms[np.argsort(-weights[c], kind="stable")[:8]]) for c in rank}
    return TopicLabels(settings=s, labels=labels, input_sha256=input_fingerprint(texts), top_terms=top)


def read_labels(path: Path) -> TopicLabels:
    try:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
        labels = TopicLabels(
            settings=TopicSettings(**obj["settings"]),
            labels=obj["labels"],
            input_sha256=obj["input_sha256"],
            top_terms={k: tuple(v) for k, v in obj.get("top_terms", {}).items()},
        )
    except (OSError, KeyError, TypeError, ValueError) as e:
        raise DataError(f"{path}: not a topic-labels file ({type(e).__name__}: {e})") from None
    if obj.get("labels_sha256") != labels.sha256:
        raise DataError(f"{path}: labels_sha256 does not match the labels (edited by hand or truncated?)")
    return labels


def write_labels(labels: TopicLabels, path: Path) -> Path:
    atomic_write_text(Path(path), labels.to_json())
    return Path(path)


def load_or_derive(texts: Mapping[str, str], settings: TopicSettings, path: Path | None) -> TopicLabels:
    """The labels in `path` if they were derived from these texts with these settings; else derive them.

    A labels file for other texts or settings is ignored (not an error): the split manifests
    then refuse the new labels through their source fingerprint.
    """
    from harness.foundation.output_set import report_unfinished, settled

    if path is not None:  # a labels file of an unfinished `topics` set is read as its last complete state
        report_unfinished(Path(path).parent)
        path = settled(Path(path).parent, Path(path).name)
    if path is not None and Path(path).is_file():
        stored = read_labels(path)
        if stored.settings == settings and stored.input_sha256 == input_fingerprint(texts):
            return stored
    return derive_topics(texts, settings)


def k_study(
    texts: Mapping[str, str],
    ks: Sequence[int],
    settings: TopicSettings = TopicSettings(),
    authors: Mapping[str, Sequence[str]] | None = None,
    sample: int = 3000,
) -> list[dict]:
    """For each k: silhouette (cosine, on the LSA vectors, a fixed sample), the largest topic's
    share, and with `authors` (documentID -> authors) how many authors have posts in 2+ topics."""
    import numpy as np
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    s = settings
    ids = sorted(texts)
    check_parameters(len(ids), ks, s)
    if min(ks) < 2:
        raise DataError(f"--k {min(ks)}: comparing k needs at least 2 topics per value (silhouette)")
    z, _, _ = _lsa([texts[i] for i in ids], s)
    rows = []
    for k in ks:
        labels = KMeans(n_clusters=k, random_state=s.seed, n_init=s.n_init).fit(z).labels_
        sil = silhouette_score(z, labels, metric="cosine", sample_size=min(sample, len(ids)), random_state=s.seed)
        row = {"k": k, "silhouette": float(sil), "largest_topic_share": float(np.bincount(labels).max() / len(ids))}
        if authors is not None:
            topics: dict[str, set] = {}
            for doc_id, c in zip(ids, labels):
                for a in authors[doc_id]:
                    topics.setdefault(a, set()).add(int(c))
            row["authors_in_2plus_topics"] = sum(len(t) >= 2 for t in topics.values())
        rows.append(row)
    return rows


def write_topic_outputs(labels: TopicLabels, docs: Mapping, out: Path | None, labelled_out: Path | None) -> list[Path]:
    """The labels file and the relabelled corpus (genre = topic label), written as one set: a crash
    never leaves labels of one k beside a corpus relabelled for another."""
    import gzip
    import io
    import json

    from harness.foundation.output_set import write_files_as_set

    if out and labelled_out and Path(out).resolve() == Path(labelled_out).resolve():
        raise DataError(f"--out and --labelled-out name the same file {out}")
    files: dict[Path, bytes | str] = {}
    if out:
        files[Path(out)] = labels.to_json()
    if labelled_out:
        text = "".join(
            json.dumps(
                {
                    **doc.extra,
                    "documentID": d,
                    "authorIDs": list(doc.authorIDs),
                    "fullText": doc.fullText,
                    "genre": labels.labels[d],
                    "corpus_genre": doc.genre,
                },
                ensure_ascii=False,
            )
            + "\n"
            for d, doc in docs.items()
        )
        if str(labelled_out).endswith(".gz"):
            buf = io.BytesIO()
            with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as zf:
                zf.write(text.encode("utf-8"))
            files[Path(labelled_out)] = buf.getvalue()
        else:
            files[Path(labelled_out)] = text
    return write_files_as_set(files)
