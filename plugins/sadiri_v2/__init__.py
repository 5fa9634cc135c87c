"""SADIRI-v2: the LLM retriever (LoRA bi-encoder) and the LLM reranker (LoRA cross-encoder)."""

from __future__ import annotations

from harness.api import SystemSpec, hookimpl
from plugins.sadiri_v2.config import REPORT_NOTE

# The backbones this harness's runs loaded (each run names its own): parameter counts from the models'
# cards; quantization from the GGUF headers of the files whose fingerprints the runs recorded (a GGUF
# backbone is dequantized on load to the run's compute dtype and LoRA trains on top, QLoRA-style).
BACKBONES = {
    "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF": {
        "parameters": "1.54B",
        "quantization": "Q4_K_M GGUF",
        "variant": "code-tuned instruct",
    },
    "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF": {
        "parameters": "0.49B",
        "quantization": "4-bit GGUF, mixed Q4_K/Q5_0/Q6_K/Q8_0 blocks",
        "variant": "code-tuned instruct",
    },
    "HuggingFaceTB/SmolLM2-135M-Instruct": {"parameters": "135M", "quantization": "Q4_1 GGUF", "variant": "instruct"},
}


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
            meta={"recipe": "SADIRI-v2 retriever", "backbones": BACKBONES},
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
            meta={"role": "reranker", "recipe": "SADIRI-v2 reranker", "backbones": BACKBONES},
        )
    )
