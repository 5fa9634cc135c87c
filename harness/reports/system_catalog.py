"""The registered systems' metadata as the pages read it: which runs are baselines, how a baseline is
drawn, what a backbone weighs, which paper recipe a system follows.

The pages know no system by name: each fact here is a plugin's declaration (SystemSpec.meta,
harness.system_meta). A run of a system no longer registered (its plugin removed or blocked) reads
as a retriever with a model and nothing declared.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from harness.specs import SystemSpec
from harness.system_meta import Backbone, SystemMeta

_log = logging.getLogger(__name__)

UNDECLARED = SystemMeta()
# A baseline that declares no plot style: the grey of the baselines, with a marker of its own kind.
BASELINE_GREY = ("#555555", "o")


@dataclass(frozen=True)
class Catalog:
    """system name -> its spec, for the pages."""

    specs: Mapping[str, SystemSpec] = field(default_factory=dict)

    def meta(self, system: str) -> SystemMeta:
        spec = self.specs.get(system)
        return spec.meta if spec is not None else UNDECLARED

    def is_baseline(self, system: str) -> bool:
        return self.meta(system).role == "baseline"

    def plot_style(self, system: str) -> tuple[str, str]:
        style = self.meta(system).plot_style
        return (style[0], style[1]) if style else BASELINE_GREY

    def baselines(self, runs: Mapping, collection: str, names: Sequence[str]) -> list[str]:
        """The collection's runs whose system's role is baseline, in the order of `names`. The pages
        pass run order (by system name, then run name), so "the baseline" is the first of these."""
        return [
            n for n in names if (collection, n) in runs and self.is_baseline(runs[(collection, n)][0].get("system", ""))
        ]

    def baseline(self, runs: Mapping, collection: str, names: Sequence[str]) -> str | None:
        """The run the pages compare every row with: the first baseline run (None: the collection has none)."""
        return next(iter(self.baselines(runs, collection, names)), None)

    def with_capability(self, capability: str) -> list[str]:
        """The systems that declare `capability`, by name."""
        return sorted(n for n, s in self.specs.items() if capability in s.capabilities)

    def backbone(self, system: str, ident: str) -> Backbone | None:
        """What is declared about a backbone: by the run's own system first, then by any other (first by
        name): a checkpoint's size does not depend on which system loads it."""
        own = self.meta(system).backbone_facts(ident)
        if own is not None or not ident:
            return own
        return next(
            (b for n in sorted(self.specs) if (b := self.specs[n].meta.backbone_facts(ident)) is not None), None
        )


def registered() -> Catalog:
    """The catalog of the registered systems; a system naming a recipe the paper does not have is
    warned about once and its rows say "not in the paper"."""
    from harness.plugins import load_registry

    return catalog_of(load_registry().systems)


def catalog_of(specs: Mapping[str, SystemSpec]) -> Catalog:
    from harness.reports.paper_recipes import PAPER_RECIPES

    for name, spec in sorted(specs.items()):
        if spec.meta.recipe and spec.meta.recipe not in PAPER_RECIPES:
            _log.warning(
                "system %r follows the recipe %r, which the paper does not have (its recipes: %s); its rows "
                'say "not in the paper"',
                name,
                spec.meta.recipe,
                ", ".join(PAPER_RECIPES),
            )
    return Catalog(dict(specs))
