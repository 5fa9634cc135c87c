"""BM25 (k1 = 0.25, b = 0.75, the paper's values): the topical baseline."""
from __future__ import annotations

from harness.hookspecs import hookimpl
from harness.specs import SystemSpec


@hookimpl
def register_systems(register):
    register(SystemSpec(
        name="bm25",
        factory="plugins.bm25.system:BM25System",
        config="plugins.bm25.config:BM25Config",
        description="BM25 Okapi over lowercased word tokens (k1=0.25, b=0.75), vectorized; equals rank-bm25",
    ))
