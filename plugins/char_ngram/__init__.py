"""Character n-gram TF-IDF with cosine: the classic stylometric baseline."""

from __future__ import annotations

from harness.api import SystemSpec, hookimpl


@hookimpl
def register_systems(register):
    register(
        SystemSpec(
            name="char-ngram",
            factory="plugins.char_ngram.system:CharNgramSystem",
            config="plugins.char_ngram.config:CharNgramConfig",
            description="TF-IDF over character n-grams (case kept, sublinear tf), cosine similarity",
            meta={"role": "baseline", "has_model": False, "plot_style": ("#8c8c8c", "s")},  # not in the paper
        )
    )
