"""The harness's layers: every import (module-level or inside a function) points down, no cycles.

Layers, bottom to top (ARCHITECTURE.md): foundation (the `harness.foundation` package, with the
contract modules errors, specs, system_meta, hookspecs); data; evaluation; the neural core;
its speed layer (`neural/fast`); the system contract, registry and neural assemblies; runs;
reports; experiments (the step graph over the jobs); the CLI. The harness never imports a plugin package.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

# Layer 0: the package, the contract modules every layer reads (errors, specs, system_meta,
# hookspecs), the read-only record, and the foundation package (harness/foundation/, every module in it).
FOUNDATION = {
    "harness",
    "harness.errors",
    "harness.specs",
    "harness.system_meta",
    "harness.hookspecs",
    "harness.splits",
}
FOUNDATION_PACKAGE = "harness.foundation"

ASSEMBLY = {
    "harness.api",
    "harness.protocols",
    "harness.config",
    "harness.plugins",
    "harness.neural.system",
    "harness.neural.training",
}


def layer(module: str) -> int:
    if module in FOUNDATION or module == FOUNDATION_PACKAGE or module.startswith(FOUNDATION_PACKAGE + "."):
        return 0
    if module in ASSEMBLY:
        return 5
    for prefix, rank in (
        ("harness.data", 1),
        ("harness.evaluation", 2),
        ("harness.neural.fast", 4),
        ("harness.neural", 3),
        ("harness.runs", 6),
        ("harness.reports", 7),
        ("harness.experiments", 8),
    ):
        if module == prefix or module.startswith(prefix + "."):
            return rank
    if module in ("harness.cli", "harness.__main__"):
        return 9
    raise AssertionError(f"{module} is in no layer: add it to tests/project/test_layering.py and ARCHITECTURE.md")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Every module named by an import in the file, at any depth (lazy imports count)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            # `from harness.neural.fast import causal_attention` imports a module too
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in (ROOT / "harness").rglob("*.py")}
    return {m: {i for i in imports(p) if i in modules and i != m} for m, p in modules.items()}


def test_every_import_points_down_the_layers():
    up = [
        f"{m} (layer {layer(m)}) imports {t} (layer {layer(t)})"
        for m, targets in graph().items()
        for t in targets
        if layer(t) > layer(m)
    ]
    assert not up, "\n".join(up)


def test_no_import_cycles():
    g = graph()
    state: dict[str, int] = {}
    cycles = []

    def visit(m, stack):
        state[m] = 1
        for t in sorted(g[m]):
            if state.get(t) == 1:
                cycles.append(" -> ".join(stack[stack.index(t) :] + [t]))
            elif t not in state:
                visit(t, stack + [t])
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m, [m])
    assert not cycles, "\n".join(cycles)


def test_the_foundation_package_imports_only_itself_and_the_errors():
    """harness/foundation/ sits at the bottom: from the harness it reads only its own modules and
    harness.errors (nothing of the contract, the data or anything above)."""
    allowed = {"harness", "harness.errors"}
    found = [
        f"{m} imports {t}"
        for m, targets in graph().items()
        if m == FOUNDATION_PACKAGE or m.startswith(FOUNDATION_PACKAGE + ".")
        for t in targets
        if t not in allowed and t != FOUNDATION_PACKAGE and not t.startswith(FOUNDATION_PACKAGE + ".")
    ]
    assert not found, "\n".join(found)


def test_the_harness_imports_no_plugin():
    found = [
        f"{module_name(p)} imports {i}"
        for p in (ROOT / "harness").rglob("*.py")
        for i in imports(p)
        if i == "plugins" or i.startswith("plugins.")
    ]
    assert not found, "\n".join(found)
