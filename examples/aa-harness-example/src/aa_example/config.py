"""The system's config. Its defaults are the recipe; `--set key=value` changes one.

Kept free of heavy imports: `aa-harness systems function-words` reads it to list the keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FunctionWordConfig:
    """A bag of function words, each a stylistic habit independent of topic."""

    words: tuple[str, ...] = field(
        default=(
            "the",
            "a",
            "of",
            "and",
            "to",
            "in",
            "that",
            "it",
            "is",
            "was",
            "i",
            "for",
            "on",
            "you",
            "but",
            "with",
            "as",
            "not",
            "so",
            "just",
            "really",
            "quite",
            "rather",
            "very",
        ),
        metadata={"help": "the vocabulary counted (comma-separated with --set)"},
    )
    smoothing: float = field(default=0.5, metadata={"help": "added to every count before normalising"})
    standardise: bool = field(
        default=True,
        metadata={"help": "standardise each document's log word profile on its own (never over the texts of one call)"},
    )

    def __post_init__(self):
        if self.smoothing < 0:
            raise ValueError(f"smoothing must be >= 0, got {self.smoothing}")
        if not self.words:
            raise ValueError("words must not be empty")
