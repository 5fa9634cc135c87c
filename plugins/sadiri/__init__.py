"""SADIRI: a transformer bi-encoder (RoBERTa-large in the paper) trained with hard-negative batches."""

from __future__ import annotations

from harness.api import SystemSpec, hookimpl


@hookimpl
def register_systems(register):
    register(
        SystemSpec(
            name="sadiri",
            factory="plugins.sadiri.system:SADIRISystem",
            config="plugins.sadiri.config:SADIRIConfig",
            description="SADIRI bi-encoder: mean pooling, SupCon with hard-negative batches (untrained backbone without model=)",
            capabilities=("encode", "train"),
            trainer="plugins.sadiri.system:train",
            meta={
                "recipe": "SADIRI",
                "backbones": {  # the encoders this harness's runs trained (the paper: RoBERTa-large)
                    "sentence-transformers/all-mpnet-base-v2": {"parameters": "109M"},
                    "sentence-transformers/all-MiniLM-L6-v2": {"parameters": "23M"},
                },
            },
        )
    )
