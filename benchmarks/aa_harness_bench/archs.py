"""Published architectures as configs, built with random weights (no download).

The shapes are those of the models' released config.json files; the tiny ones serve the
CPU tests. Random weights give the same cost as trained ones; their outputs are only
compared between two paths over the same weights.
"""

from __future__ import annotations

ARCHS: dict[str, tuple[str, dict]] = {
    # Qwen/Qwen3-0.6B and Qwen/Qwen3-8B (the retriever's backbones in the paper)
    "qwen3-0.6b": (
        "qwen3",
        dict(
            vocab_size=151936,
            hidden_size=1024,
            intermediate_size=3072,
            num_hidden_layers=28,
            num_attention_heads=16,
            num_key_value_heads=8,
            head_dim=128,
            rope_theta=1e6,
            rms_norm_eps=1e-6,
            max_position_embeddings=40960,
            tie_word_embeddings=True,
        ),
    ),
    "qwen3-8b": (
        "qwen3",
        dict(
            vocab_size=151936,
            hidden_size=4096,
            intermediate_size=12288,
            num_hidden_layers=36,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=128,
            rope_theta=1e6,
            rms_norm_eps=1e-6,
            max_position_embeddings=40960,
            tie_word_embeddings=False,
        ),
    ),
    # mistralai/Mistral-Nemo-Base-2407 (the reranker's backbone in the paper)
    "mistral-nemo-12b": (
        "mistral",
        dict(
            vocab_size=131072,
            hidden_size=5120,
            intermediate_size=14336,
            num_hidden_layers=40,
            num_attention_heads=32,
            num_key_value_heads=8,
            head_dim=128,
            rope_theta=1e6,
            rms_norm_eps=1e-5,
            max_position_embeddings=1024000,
            sliding_window=None,
        ),
    ),
    "tiny-qwen3": (
        "qwen3",
        dict(
            vocab_size=512,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=2048,
        ),
    ),
    "tiny-mistral": (
        "mistral",
        dict(
            vocab_size=512,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=16,
            max_position_embeddings=2048,
            sliding_window=None,
        ),
    ),
}


def arch_names() -> list[str]:
    return list(ARCHS)


def build_config(arch: str):
    from transformers import MistralConfig, Qwen3Config

    if arch not in ARCHS:
        raise KeyError(f"unknown architecture {arch!r}; known: {', '.join(ARCHS)}")
    family, kwargs = ARCHS[arch]
    cls = {"qwen3": Qwen3Config, "mistral": MistralConfig}[family]
    return cls(**kwargs, attn_implementation="sdpa")


def build_model(arch: str, device, dtype, seed: int = 0):
    """The bare decoder (AutoModel: no LM head), random weights, on `device` in `dtype`."""
    import torch
    from transformers import AutoModel

    torch.manual_seed(seed)
    with torch.device(device):
        model = AutoModel.from_config(build_config(arch), dtype=dtype)
    return model.eval()


def parameter_count(arch: str) -> int:
    """Parameters of the architecture, counted on the meta device (nothing allocated)."""
    import torch
    from transformers import AutoModel

    with torch.device("meta"):
        model = AutoModel.from_config(build_config(arch))
    return sum(p.numel() for p in model.parameters())


def non_embedding_parameters(model) -> int:
    return sum(p.numel() for name, p in model.named_parameters() if "embed_tokens" not in name)
