"""SADIRI-v2: the LLM retriever (LoRA bi-encoder) and the LLM reranker (LoRA cross-encoder)."""

from __future__ import annotations

from harness.api import SystemSpec, hookimpl
from plugins.sadiri_v2.config import REPORT_NOTE


@hookimpl
def register_systems(register):
    register(
        SystemSpec(
            name="sadiri-v2-retriever",
            factory="plugins.sadiri_v2.retriever:RetrieverSystem",
            config="plugins.sadiri_v2.config:RetrieverConfig",
            description="SADIRI-v2 retriever: decoder LLM + LoRA, mean pooling, projection to E/2, dot product",
            capabilities=("encode", "train"),
            trainer="plugins.sadiri_v2.retriever:train",
        )
    )
    register(
        SystemSpec(
            name="sadiri-v2-reranker",
            factory="plugins.sadiri_v2.reranker:RerankerSystem",
            config="plugins.sadiri_v2.config:RerankerConfig",
            description="SADIRI-v2 reranker: LLM cross-encoder over query U+2980 candidate, trained on n(d_q)/n(d_q+)/n(r) negatives",
            capabilities=("rerank", "train"),
            trainer="plugins.sadiri_v2.reranker_training:train",
            describe_run="plugins.sadiri_v2.config:describe_run",
            report_note=REPORT_NOTE,
        )
    )
