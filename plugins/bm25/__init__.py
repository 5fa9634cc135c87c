"""BM25 (k1 = 0.25, b = 0.75: this harness's settings, the paper states none): the topical baseline."""

from __future__ import annotations

from harness.api import SystemSpec, hookimpl


@hookimpl
def register_systems(register):
    register(
        SystemSpec(
            name="bm25",
            factory="plugins.bm25.system:BM25System",
            config="plugins.bm25.config:BM25Config",
            description="BM25 Okapi over lowercased word tokens (k1=0.25, b=0.75), vectorized; equals rank-bm25",
            meta={
                "role": "baseline",  # the topical baseline every row is compared with
                "has_model": False,
                "recipe": "BM25",
                "own_settings": ("k1", "b"),  # the paper states neither
                "plot_style": ("#222222", "o"),
            },
        )
    )
