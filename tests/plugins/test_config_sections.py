"""Configs split by purpose, with one flat key namespace for `--set` and for the recorded config;
the SADIRI-v2 systems share one LoRA spec; the recipes state the paper's global batch."""

import pytest

from harness.config import build_config, config_dict, config_sections
from harness.errors import UnknownNameError
from plugins.sadiri_v2.config import (
    LoRASpec,
    RerankerConfig,
    RetrieverConfig,
    describe_run,
)


def test_sections_split_the_flat_config_by_purpose():
    cfg = RetrieverConfig()
    sections = config_sections(cfg)
    assert {"tau", "lr", "authors_per_batch", "grad_accumulation", "lora_r", "projection_init"} <= set(
        sections["recipe"]
    )
    assert {"encode_max_tokens", "fast_path", "search_index", "search_nprobe", "cache"} == set(sections["inference"])
    assert {
        "grad_checkpointing",
        "checkpoint_every",
        "max_steps",
        "micro_batch",
        "fast_training",
        "cuda_graphs",
    } == set(sections["training run"])
    assert sections["model"] == {"model": None} and sections["runtime"] == {"device": "auto"}
    merged = {k: v for part in sections.values() for k, v in part.items()}
    assert merged == config_dict(cfg)  # the recorded config keeps its flat shape
    assert set(config_sections(RerankerConfig())["inference"]) == {"score_max_tokens", "prefix_reuse"}
    assert {"micro_batch", "fast_training", "cuda_graphs"} <= set(config_sections(RerankerConfig())["training run"])
    assert (
        RerankerConfig().fast_training is True and RetrieverConfig().fast_training is True
    )  # the fused steps by default
    assert RetrieverConfig().cuda_graphs is True and RerankerConfig().cuda_graphs is True  # graphed where allowed


def test_one_lora_spec_serves_both_sadiri_v2_systems():
    for cls in (RetrieverConfig, RerankerConfig):
        assert issubclass(cls, LoRASpec)
        own = {k for klass in cls.__mro__ if klass is not LoRASpec for k in klass.__dict__.get("__annotations__", {})}
        assert not own & {"lora_r", "lora_alpha", "lora_dropout", "lora_targets"}
        assert (cls().lora_r, cls().lora_alpha, cls().lora_dropout) == (16, 32, 0.05)


def test_set_keys_keep_their_names_and_unknown_keys_fail():
    cfg = build_config(
        RetrieverConfig,
        {
            "lora_r": "8",
            "encode_max_tokens": "1024",
            "tau": "0.05",
            "micro_batch": "16",
            "projection_init": "orthogonal-scaled",
        },
    )
    assert (cfg.lora_r, cfg.encode_max_tokens, cfg.tau, cfg.micro_batch) == (8, 1024, 0.05, 16)
    with pytest.raises(UnknownNameError, match="did you mean 'lora_r'"):
        build_config(RetrieverConfig, {"lora_rr": "8"})
    with pytest.raises(Exception, match="projection_init"):
        build_config(RetrieverConfig, {"projection_init": "zeros"})
    with pytest.raises(Exception, match="negative_sampling"):
        build_config(RerankerConfig, {"negative_sampling": "farthest"})


def test_defaults_state_the_papers_global_batch():
    assert (RetrieverConfig().authors_per_batch, RetrieverConfig().grad_accumulation) == (64, 1)  # 16 a GPU x 4
    assert (RerankerConfig().queries_per_batch, RerankerConfig().grad_accumulation) == (4, 10)  # 1 a GPU x 4, x 10
    assert RerankerConfig().negative_sampling == "sampled" and RetrieverConfig().similarity == "dot"


def test_the_reranker_plugin_labels_its_runs():
    assert describe_run({"strategy": "q+p+r"}) == "n(d_q) + n(d_q+) + n(r)"  # runs recorded before sampling
    assert (
        describe_run({"strategy": "q", "negative_sampling": "sampled", "negative_pool": 64})
        == "n(d_q), sampled from the 64 nearest"
    )
    assert describe_run({"strategy": "r", "negative_sampling": "sampled", "negative_pool": 64}) == "n(r)"
    assert describe_run({}) == ""
