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
            capabilities=("encode", "reference-embedder"),  # curation's default embedder
            meta={
                "backbone": "sentence-transformers/all-mpnet-base-v2",  # its runs record it as `model`
                "parameters": "109M",
                "recipe": "SBERT",
                "backbones": {"sentence-transformers/all-MiniLM-L6-v2": {"parameters": "23M"}},
            },
        )
    )
