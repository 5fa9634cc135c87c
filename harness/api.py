"""The plugin API: what a system, collection or page plugin imports from the harness, in one place.

    from harness.api import hookimpl, SystemSpec, Document, top_k

Everything here is part of the harness's contract with plugins; the rest of `harness` may move.
Neural systems also find the shared model machinery here (model loading, encoders, the training
loop, losses, the embedding cache, devices, the speed layer), which needs the `neural` extra. Those
names are imported on first use, so importing this module imports no torch; a plugin imports them
where its model code runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from harness.config import config_sections
from harness.data.collection import Collection, load_collection
from harness.data.documents import Document
from harness.errors import DataError, HarnessError
from harness.evaluation.ranking import check_finite, top_k
from harness.foundation.atomic import atomic_open, atomic_write_text
from harness.foundation.markdown_table import Markdown, markdown_table
from harness.foundation.provenance import device_name
from harness.hookspecs import hookimpl
from harness.specs import CollectionSpec, PageSpec, SystemSpec
from harness.system_meta import Backbone, SystemMeta

# The shared model machinery for neural systems: name -> the module that defines it, imported on
# first use (PEP 562) so that listing systems or computing metrics never loads torch.
_NEURAL = {
    "autocast": "harness.neural.device",
    "device_label": "harness.neural.device",
    "pick_device": "harness.neural.device",
    "sync_grads": "harness.neural.distributed",
    "world_size": "harness.neural.distributed",
    "EmbeddingCache": "harness.neural.embed_cache",
    "cache_root": "harness.neural.embed_cache",
    "cached_encode": "harness.neural.embed_cache",
    "default_cache_root": "harness.neural.embed_cache",
    "model_key": "harness.neural.embed_cache",
    "TextEncoder": "harness.neural.encoder",
    "TokenEncoder": "harness.neural.encoder",
    "checkpoint_backbone": "harness.neural.encoder",
    "embed_features": "harness.neural.encoder",
    "enable_fast_path": "harness.neural.fast.enable",
    "score_fused_continuations": "harness.neural.fast.fused_paths",
    "score_fused_continuations_on_device": "harness.neural.fast.fused_paths",
    "fused_embed_batch": "harness.neural.fast.lora_train",
    "score_continuations": "harness.neural.fast.prefix_scoring",
    "shared_prefix_score_groups": "harness.neural.fast.prefix_train",
    "require_fp8": "harness.neural.fast.fp8_linear",
    "load_backbone": "harness.neural.hf",
    "load_tokenizer": "harness.neural.hf",
    "candidates_loss": "harness.neural.losses",
    "resolve_model": "harness.neural.models",
    "weights_fingerprint": "harness.neural.models",
    "retry_on_oom": "harness.neural.oom",
    "mean_pool": "harness.neural.pooling",
    "ContrastiveRecipe": "harness.neural.recipe",
    "ContrastiveTraining": "harness.neural.recipe",
    "Runtime": "harness.neural.recipe",
    "Section": "harness.neural.recipe",
    "TrainedModel": "harness.neural.recipe",
    "TrainingRecipe": "harness.neural.recipe",
    "TrainingRun": "harness.neural.recipe",
    "EncoderSystem": "harness.neural.system",
    "train_system": "harness.neural.system",
    "StepResult": "harness.neural.training",
    "default_embed_batch": "harness.neural.training",
    "train_loop": "harness.neural.training",
}

if TYPE_CHECKING:  # what a type checker and an editor see; at run time __getattr__ imports them
    from harness.neural.device import autocast, device_label, pick_device
    from harness.neural.distributed import sync_grads, world_size
    from harness.neural.embed_cache import EmbeddingCache, cache_root, cached_encode, default_cache_root, model_key
    from harness.neural.encoder import TextEncoder, TokenEncoder, checkpoint_backbone, embed_features
    from harness.neural.fast.enable import enable_fast_path
    from harness.neural.fast.fp8_linear import require_fp8
    from harness.neural.fast.fused_paths import score_fused_continuations, score_fused_continuations_on_device
    from harness.neural.fast.lora_train import fused_embed_batch
    from harness.neural.fast.prefix_scoring import score_continuations
    from harness.neural.fast.prefix_train import shared_prefix_score_groups
    from harness.neural.hf import load_backbone, load_tokenizer
    from harness.neural.losses import candidates_loss
    from harness.neural.models import resolve_model, weights_fingerprint
    from harness.neural.oom import retry_on_oom
    from harness.neural.pooling import mean_pool
    from harness.neural.recipe import (
        ContrastiveRecipe,
        ContrastiveTraining,
        Runtime,
        Section,
        TrainedModel,
        TrainingRecipe,
        TrainingRun,
    )
    from harness.neural.system import EncoderSystem, train_system
    from harness.neural.training import StepResult, default_embed_batch, train_loop

__all__ = [
    "Backbone",
    "Collection",
    "CollectionSpec",
    "DataError",
    "Document",
    "HarnessError",
    "Markdown",
    "PageSpec",
    "SystemMeta",
    "SystemSpec",
    "atomic_open",
    "atomic_write_text",
    "check_finite",
    "config_sections",
    "device_name",
    "hookimpl",
    "load_collection",
    "markdown_table",
    "top_k",
    # the shared model machinery (the `neural` extra), imported on first use
    "ContrastiveRecipe",
    "ContrastiveTraining",
    "EmbeddingCache",
    "EncoderSystem",
    "Runtime",
    "Section",
    "StepResult",
    "TextEncoder",
    "TokenEncoder",
    "TrainedModel",
    "TrainingRecipe",
    "TrainingRun",
    "autocast",
    "cache_root",
    "cached_encode",
    "candidates_loss",
    "checkpoint_backbone",
    "default_cache_root",
    "default_embed_batch",
    "device_label",
    "embed_features",
    "enable_fast_path",
    "fused_embed_batch",
    "load_backbone",
    "load_tokenizer",
    "mean_pool",
    "model_key",
    "pick_device",
    "require_fp8",
    "resolve_model",
    "retry_on_oom",
    "score_continuations",
    "score_fused_continuations",
    "score_fused_continuations_on_device",
    "shared_prefix_score_groups",
    "sync_grads",
    "train_loop",
    "train_system",
    "weights_fingerprint",
    "world_size",
]


def __getattr__(name: str) -> Any:
    """One of the neural names, imported now (and kept, so the next lookup is plain)."""
    module = _NEURAL.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
