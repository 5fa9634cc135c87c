"""SBERT (sentence-transformers) bi-encoder with cosine similarity; the paper's all-mpnet-base-v2."""

from __future__ import annotations

from harness.api import SystemSpec, hookimpl


@hookimpl
def register_systems(register):
    register(
        SystemSpec(
            name="sbert",
            factory="plugins.sbert.system:SBERTSystem",
            config="plugins.sbert.config:SBERTConfig",
            description="sentence-transformers encoder (default all-mpnet-base-v2), cosine; CUDA when present",
            capabilities=("encode",),
        )
    )
