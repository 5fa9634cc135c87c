"""Build a registered system from its name and `--set` overrides, through the registry alone."""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from harness.config import build_config
from harness.data.documents import Document
from harness.errors import HarnessError
from harness.plugins import Registry
from harness.specs import SystemSpec, load_object


class BuiltSystem(NamedTuple):
    spec: SystemSpec
    config: Any
    system: Any


def build_system(registry: Registry, name: str, overrides: Mapping[str, Any] | None = None) -> BuiltSystem:
    """(spec, config, system) for a registered system; unknown names and keys fail before any model loads."""
    spec = registry.system(name)
    config = build_config(load_object(spec.config), overrides)
    return BuiltSystem(spec, config, load_object(spec.factory)(config))


def reference_embedder(registry: Registry, *, required: bool = True) -> str:
    """The system curation embeds with: the registered one that declares the reference-embedder capability
    (several: the first by name). None registered: an error when required, else ""."""
    names = sorted(n for n, s in registry.systems.items() if "reference-embedder" in s.capabilities)
    if not names and required:
        raise HarnessError(
            "no registered system declares the reference-embedder capability, and curation embeds with one; "
            "register one, or give the pairs of an earlier curation (--pairs)"
        )
    return names[0] if names else ""


def text_embedder(
    registry: Registry, name: str, overrides: Mapping[str, Any] | None = None
) -> Callable[[list[str]], np.ndarray]:
    """texts -> vectors through any registered system that can encode; the system is built on first use."""
    spec = registry.system(name)
    if "encode" not in spec.capabilities:
        raise HarnessError(f"system {name!r} cannot encode (it can: {', '.join(spec.capabilities)}); pick one that can")
    built: list = []

    def embed(texts: list[str]) -> np.ndarray:
        if not built:
            built.append(build_system(registry, name, overrides).system)
        docs = [Document(f"text-{i}", ("unknown",), t, "") for i, t in enumerate(texts)]
        return np.asarray(built[0].encode(docs), dtype=np.float32)

    return embed
