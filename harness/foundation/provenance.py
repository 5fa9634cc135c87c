"""Where a result came from: package versions, git commit, device, time."""

from __future__ import annotations

import datetime as dt
import importlib.metadata as md
import os
import platform
import re
import subprocess
import sys
from pathlib import Path
from typing import Mapping

PACKAGES = (
    "aa-harness",
    "numpy",
    "scipy",
    "scikit-learn",
    "rank-bm25",
    "torch",
    "transformers",
    "sentence-transformers",
    "peft",
    "faiss-cpu",
    "faiss-gpu",
)

CODE_PATHS = ("harness", "plugins", "pyproject.toml")


def package_versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    if "torch" not in out and "torch" in sys.modules:  # e.g. a torch not installed by pip
        out["torch"] = getattr(sys.modules["torch"], "__version__", "?")
    return out


def development_checkout() -> Path | None:
    """The harness's own git checkout when it runs from one (a git work tree whose pyproject
    names aa-harness, right above the package); None when installed (site-packages)."""
    root = Path(__file__).resolve().parents[2]  # <root>/harness/foundation/provenance.py
    try:
        if not (root / ".git").exists():
            return None
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if re.search(r'^name\s*=\s*"aa-harness"\s*$', text, re.M) else None


def _built_version() -> tuple[str, str]:
    """(version, commit) that setuptools-scm wrote into harness/_version.py at build time."""
    import importlib

    try:
        _version = importlib.import_module("harness._version")
    except ImportError:
        return "unknown", "unknown"
    commit = str(getattr(_version, "__commit__", "") or "").removeprefix("g")
    return str(getattr(_version, "__version__", "unknown")), commit or "unknown"


def harness_version() -> str:
    """The installed harness's version (build-time metadata; "unknown" in a checkout never built)."""
    version, _ = _built_version()
    if version == "unknown":
        try:
            version = md.version("aa-harness")
        except md.PackageNotFoundError:
            pass
    return version


def git_commit() -> str:
    """The harness's own commit: $AA_HARNESS_GIT_COMMIT; else in a development checkout its HEAD,
    with "-dirty" if the code (not results or splits) has uncommitted changes; else the commit
    recorded at build time. Never the commit of a repository the user runs it in.
    """
    if os.environ.get("AA_HARNESS_GIT_COMMIT"):
        return os.environ["AA_HARNESS_GIT_COMMIT"]
    checkout = development_checkout()
    if checkout is None:
        return _built_version()[1]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS],
            cwd=checkout,
            capture_output=True,
            text=True,
            timeout=10,
        )
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def device_name(system=None) -> str:
    """The system's own account of its device if it has one, else the CPU."""
    name = getattr(system, "device_name", None)
    if callable(name):
        name = name()
    return name or f"cpu: {cpu_name()} ({os.cpu_count()} cores)"


def provenance(system=None, wall_seconds: float | None = None, plugin: Mapping[str, str] | None = None) -> dict:
    """plugin: {"name", "distribution", "version"} of the plugin that registered the system, if known."""
    out = {
        "packages": package_versions(),
        "harness_version": harness_version(),
        "git_commit": git_commit(),
        "device": device_name(system),
        "platform": platform.platform(),
        "wall_seconds": None if wall_seconds is None else round(wall_seconds, 3),
        "finished_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    if plugin:
        out["plugin"] = dict(plugin)
    return out
