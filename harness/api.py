"""The plugin API: what a system or collection plugin imports from the harness, in one place.

    from harness.api import hookimpl, SystemSpec, Document, top_k

Everything here is part of the harness's contract with plugins; the rest of `harness` may move.
Plugins whose systems are neural also use the shared model machinery under `harness.neural`
(encoders, training loop, losses, model loading), which needs the `neural` extra. Importing this
module imports no torch.
"""

from __future__ import annotations

from harness.atomic import atomic_open, atomic_write_text
from harness.config import config_sections
from harness.data.collection import Collection, load_collection
from harness.data.documents import Document
from harness.errors import DataError, HarnessError
from harness.evaluation.ranking import check_finite, top_k
from harness.hookspecs import hookimpl
from harness.provenance import device_name
from harness.specs import CollectionSpec, SystemSpec
from harness.system_meta import Backbone, SystemMeta

__all__ = [
    "Backbone",
    "Collection",
    "CollectionSpec",
    "DataError",
    "Document",
    "HarnessError",
    "SystemMeta",
    "SystemSpec",
    "atomic_open",
    "atomic_write_text",
    "check_finite",
    "config_sections",
    "device_name",
    "hookimpl",
    "load_collection",
    "top_k",
]
