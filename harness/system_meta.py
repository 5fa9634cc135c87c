"""What a system is, declared beside it: role, backbone, size, the paper recipe it follows, plot style.

A plugin declares this on its spec (`SystemSpec(meta=...)`) and the report pages read it, so the
core names no system: the baseline is whichever system says it is one, a row's parameter count is
its plugin's word. Validated on construction, MTEB `ModelMeta` style: a value outside its closed set,
a malformed size or an unknown field is one line naming the field (and the system, when the spec
builds the metadata from a dict). Nothing here imports more than the standard library.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Mapping

from harness.errors import HarnessError

# What a system is for the pages. baseline: a reference row (the significance marks and the
# "vs baseline" column compare against the first one); retriever: ranks a pool; reranker: reorders
# a first stage's top k.
ROLES = ("baseline", "retriever", "reranker")
# What a system can do (SystemSpec.capabilities): the protocols rank, encode, rerank, train, and
# reference-embedder: an untrained general-purpose text encoder whose config takes `model`, `device`
# and `batch_size` (curation's dissimilar-pair step defaults to it; collection pages measure how
# close the haystack is under it).
CAPABILITIES = ("rank", "encode", "rerank", "train", "reference-embedder")
# Markers a baseline may plot with (matplotlib's filled ones); other runs take the palette's.
MARKERS = ("o", "s", "^", "v", "<", ">", "D", "d", "p", "P", "X", "h", "H", "*", "8")

_SIZE = re.compile(r"\d+(\.\d+)?[KMB]")  # as the pages print it: "23M", "109M", "1.54B"
_COLOUR = re.compile(r"#[0-9a-fA-F]{6}")


class MetaError(HarnessError):
    """A system's metadata breaks a rule; the message names the field (and the system, when known)."""


@dataclass(frozen=True)
class Backbone:
    """Facts about one backbone checkpoint that no result records.

    parameters: as the pages print it ("109M", "1.54B"), from the model's own card.
    quantization: the weights' format when not dense ("Q4_K_M GGUF"); "" for dense weights.
    variant: how the checkpoint was tuned ("code-tuned instruct"); "" for a base model or an encoder.
    """

    parameters: str = ""
    quantization: str = ""
    variant: str = ""

    def __post_init__(self) -> None:
        for name in ("parameters", "quantization", "variant"):
            _need_str(f"backbone {name}", getattr(self, name))
        if self.parameters and not _SIZE.fullmatch(self.parameters):
            raise MetaError(f"parameters {self.parameters!r} is not a size like '109M' or '1.54B'")


@dataclass(frozen=True)
class SystemMeta:
    """A system's metadata.

    role: one of ROLES.
    has_model: False for a system with no learned model (BM25, TF-IDF): its rows show no backbone.
    backbone, revision: the checkpoint its runs load when their config names none, by hub id and revision.
    parameters, quantization: that backbone's size ("109M") and weight format ("" for dense).
    backbones: other checkpoints its runs may name (a per-run `backbone`), id -> Backbone (or a dict of
        Backbone's fields), so a row's size and quantization come from the plugin, not the core.
    recipe: the paper recipe it follows, by the paper's name (harness.reports.paper_recipes.PAPER_RECIPES);
        "" when it follows none (its rows say "not in the paper").
    own_settings: config keys the paper states no value for: each row shows this harness's value.
    plot_style: (colour "#rrggbb", marker) for a baseline's dashed curve; () for the default grey.
    """

    role: str = "retriever"
    has_model: bool = True
    backbone: str = ""
    revision: str = ""
    parameters: str = ""
    quantization: str = ""
    backbones: Mapping[str, Backbone] = field(default_factory=dict, hash=False)
    recipe: str = ""
    own_settings: tuple[str, ...] = ()
    plot_style: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise MetaError(f"role {self.role!r} is not one of: {', '.join(ROLES)}")
        if not isinstance(self.has_model, bool):
            raise MetaError(f"has_model must be true or false, got {self.has_model!r}")
        for name in ("backbone", "revision", "parameters", "quantization", "recipe"):
            _need_str(name, getattr(self, name))
        if self.parameters and not _SIZE.fullmatch(self.parameters):
            raise MetaError(f"parameters {self.parameters!r} is not a size like '109M' or '1.54B'")
        if (self.parameters or self.quantization) and not self.backbone:
            raise MetaError("parameters and quantization describe `backbone`, which is not given")
        if not isinstance(self.backbones, Mapping):
            raise MetaError(f"backbones must map backbone ids to their facts, got {type(self.backbones).__name__}")
        backbones = {}
        for ident, facts in self.backbones.items():
            _need_str("backbones key", ident)
            try:
                backbones[ident] = facts if isinstance(facts, Backbone) else Backbone(**_fields_of(Backbone, facts))
            except MetaError as e:
                raise MetaError(f"backbones[{ident!r}]: {e}") from None
        object.__setattr__(self, "backbones", MappingProxyType(backbones))  # frozen all the way down
        for name in ("own_settings", "plot_style"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(x, str) for x in value):
                raise MetaError(f"{name} must be a tuple of strings, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        if self.plot_style:
            colour, *marker = self.plot_style
            if len(marker) != 1 or not _COLOUR.fullmatch(colour) or marker[0] not in MARKERS:
                raise MetaError(
                    f"plot_style {self.plot_style!r} is not (colour '#rrggbb', marker), marker one of {' '.join(MARKERS)}"
                )
        if self.plot_style and self.role != "baseline":
            raise MetaError(f"plot_style is for baselines; role is {self.role!r}")

    def backbone_facts(self, ident: str) -> Backbone | None:
        """What this system declares about the backbone `ident` (None: nothing)."""
        if ident and ident == self.backbone and (self.parameters or self.quantization):
            return Backbone(self.parameters, self.quantization)
        return self.backbones.get(ident)


def system_meta(system: str, value: SystemMeta | Mapping[str, Any]) -> SystemMeta:
    """`value` as a SystemMeta: a SystemMeta as it is, a dict checked field by field; every error names
    the system (an unknown field with the closest known one)."""
    if isinstance(value, SystemMeta):
        return value
    try:
        return SystemMeta(**_fields_of(SystemMeta, value))
    except MetaError as e:
        raise MetaError(f"system {system!r}: meta {e}") from None


def _fields_of(cls: type, value: object) -> dict[str, Any]:
    """A dict's items, each a field of `cls`; anything else is one MetaError."""
    if not isinstance(value, Mapping):
        raise MetaError(f"must be a {cls.__name__} or a dict of its fields, got {type(value).__name__}")
    known = [f.name for f in fields(cls)]
    for key in value:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (fields: {', '.join(known)})"
            raise MetaError(f"has no field {key!r}{hint}")
    return dict(value)


def _need_str(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise MetaError(f"{name} must be a string, got {type(value).__name__}")
