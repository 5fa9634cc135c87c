"""What plugins register: light descriptions with lazy "module:attr" strings.

Nothing here imports a system's code; listing systems and collections stays torch-free.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

# The system name of results made from rankings a user submitted (`aa-harness submit`) rather than
# by a registered system: reserved, so no plugin can register it and pass its runs off as submissions.
SUBMITTED = "submitted"


def load_object(ref: str) -> Any:
    """Import "package.module:attr"."""
    module, _, attr = ref.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class SystemSpec:
    """A registered system.

    factory: "module:Callable" taking the config dataclass and returning the system.
    config:  "module:Dataclass" whose defaults are the recipe; imported without torch.
    capabilities: what the system can do -- "rank", "encode", "rerank", "train".
    trainer: "module:function" called as trainer(config, train_documents, out_dir) -> model folder,
             for systems that can be trained (`aa-harness train`).
    describe_run: "module:function" called as describe_run(config dict of a recorded run) -> a short
             label for report pages (e.g. a reranker's negatives); "" for none. Imported lazily, torch-free.
    report_note: a sentence the report pages print where this system's runs are shown.
    """

    name: str
    factory: str
    config: str
    description: str = ""
    capabilities: tuple[str, ...] = ("rank",)
    trainer: str = ""
    describe_run: str = ""
    report_note: str = ""
    plugin: str = field(default="", compare=False)  # filled in by the registry:
    distribution: str = field(default="", compare=False)  # the installed package that provides it
    version: str = field(default="", compare=False)  # ... and its version (recorded in provenance)

    def origin(self) -> dict[str, str]:
        """Where the system comes from, for a result's provenance."""
        return {"name": self.plugin, "distribution": self.distribution, "version": self.version}


@dataclass(frozen=True)
class CollectionSpec:
    """A registered collection.

    loader: "module:function" called as loader(*args, data_dir) -> Collection, where
            data_dir is the --data-dir flag (None when not given).
    data: where its data comes from, shown by `aa-harness collections`.
    locate: optional "module:function" called as locate(*args, data_dir) -> the path where the
            data was found; it raises HarnessError (its message says what is missing) when not.
            `aa-harness collections` shows the answer.
    """

    name: str
    loader: str
    description: str = ""
    data: str = ""
    args: tuple = ()
    plugin: str = field(default="", compare=False)
    distribution: str = field(default="", compare=False)
    version: str = field(default="", compare=False)
    locate: str = ""

    def load(self, data_dir=None):
        fn: Callable = load_object(self.loader)
        return fn(*self.args, data_dir)

    def find(self, data_dir=None) -> tuple[bool | None, str]:
        """(found, where or why not); found is None when the plugin gives no `locate`."""
        from harness.errors import HarnessError

        if not self.locate:
            return None, self.data or "(the plugin does not say)"
        try:
            return True, str(load_object(self.locate)(*self.args, data_dir))
        except HarnessError as e:
            return False, str(e)
