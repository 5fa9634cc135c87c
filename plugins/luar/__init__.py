"""LUAR: episodes of 32-token chunks, per-chunk mean pooling, self-attention, max, linear to 512."""

from __future__ import annotations

from harness.api import SystemSpec, hookimpl


@hookimpl
def register_systems(register):
    register(
        SystemSpec(
            name="luar",
            factory="plugins.luar.system:LUARSystem",
            config="plugins.luar.config:LUARConfig",
            description="LUAR (Rivera-Soto et al. 2021): released MUD/CRUD checkpoints by hub id, or trained with SupCon",
            capabilities=("encode", "train"),
            trainer="plugins.luar.system:train",
            meta={
                "recipe": "LUAR",
                "backbones": {"sentence-transformers/all-mpnet-base-v2": {"parameters": "109M"}},  # this harness's runs
            },
        )
    )
