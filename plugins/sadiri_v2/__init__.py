"""SADIRI-v2 retriever: a decoder LLM with LoRA as a bi-encoder (mean pooling + linear projection)."""
from __future__ import annotations

from harness.hookspecs import hookimpl
from harness.specs import SystemSpec


@hookimpl
def register_systems(register):
    register(SystemSpec(
        name="sadiri-v2-retriever",
        factory="plugins.sadiri_v2.retriever:RetrieverSystem",
        config="plugins.sadiri_v2.config:RetrieverConfig",
        description="SADIRI-v2 retriever: decoder LLM + LoRA, mean pooling, projection to E/2, dot product",
        capabilities=("encode", "train"),
        trainer="plugins.sadiri_v2.retriever:train",
    ))
