"""The canonical document record (HIATUS field names) and its validation."""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Mapping

from harness.errors import DataError

REQUIRED_FIELDS = ("documentID", "authorIDs", "fullText", "genre")


def canonical_genre(genre: str) -> str:
    """The form genres are compared in: Unicode NFC, surrounding whitespace stripped, inner runs of
    whitespace made one space. So " blog", "blog\n" and "blog" are one genre; case still counts."""
    return " ".join(unicodedata.normalize("NFC", genre).split())


def canonical_author(author: str) -> str:
    """Author ids are compared in the same form as genres: "a0" and "a0 " are one author."""
    return canonical_genre(author)


@dataclass(frozen=True)
class Document:
    """One text. `extra` keeps every other field of the record untouched."""

    documentID: str
    authorIDs: tuple[str, ...]
    fullText: str
    genre: str
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def text_sha256(self) -> str:
        return hashlib.sha256(self.fullText.encode("utf-8")).hexdigest()


def document_from_record(record: Mapping[str, Any], where: str, *, required=REQUIRED_FIELDS) -> Document:
    """Validate one canonical record; `where` ("file:line") prefixes every error."""
    missing = [k for k in required if k not in record]
    if missing:
        raise DataError(f"{where}: record is missing field(s) {', '.join(repr(m) for m in missing)}")
    doc_id = record["documentID"]
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise DataError(f"{where}: 'documentID' must be a non-empty string, got {doc_id!r}")
    authors = record.get("authorIDs", [])
    if isinstance(authors, str):
        authors = [authors]
    if "authorIDs" in required and (
        not isinstance(authors, list) or not authors or not all(isinstance(a, str) and a.strip() for a in authors)
    ):
        raise DataError(
            f"{where}: document {doc_id!r}: 'authorIDs' must be a non-empty list of strings, got {authors!r}"
        )
    text = record["fullText"]
    if not isinstance(text, str):
        raise DataError(f"{where}: document {doc_id!r}: 'fullText' must be a string, got {type(text).__name__}")
    if not _visible(text):
        raise DataError(
            f"{where}: document {doc_id!r} has an empty 'fullText' (nothing but spaces or invisible characters)"
        )
    genre = record.get("genre", "")
    if "genre" in required and (not isinstance(genre, str) or not genre.strip()):
        raise DataError(f"{where}: document {doc_id!r}: 'genre' must be a non-empty string, got {genre!r}")
    extra = {k: v for k, v in record.items() if k not in REQUIRED_FIELDS}
    if isinstance(authors, list):
        authors = list(dict.fromkeys(canonical_author(a) if isinstance(a, str) else a for a in authors))
    return Document(doc_id, tuple(authors), text, canonical_genre(genre) if isinstance(genre, str) else "", extra)


def _visible(text: str) -> bool:
    """Whether a text has a character a reader sees: not only spaces, controls or format characters
    (zero-width spaces and joiners, byte-order marks), which every system would rank by id alone."""
    import unicodedata

    return any(not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf", "Zs", "Zl", "Zp") for ch in text)
