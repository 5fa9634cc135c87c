"""What the wheel holds: pyproject.toml lists the packages (one lives outside harness/), and the
read-only record is the checkout's top-level `splits/`, installed or only put on the path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from tests.conftest import ROOT


def test_the_listed_packages_are_the_source_trees_and_the_record():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    found = {
        ".".join(Path(folder).relative_to(ROOT).parts)
        for top in ("harness", "plugins")
        for folder, _, names in os.walk(ROOT / top)
        if "__init__.py" in names
    }
    assert set(setuptools["packages"]) == found | {"harness.splits"}, "a package is missing from pyproject.toml"
    assert setuptools["package-dir"] == {"harness.splits": "splits"}
    assert (ROOT / "splits" / "__init__.py").is_file() and (ROOT / "splits" / "demo" / "seed-0.json").is_file()


def test_the_record_is_the_top_level_splits_folder_installed_or_on_the_path():
    from harness.foundation.locations import record_splits_dir

    assert record_splits_dir().resolve() == (ROOT / "splits").resolve()
    # Without site (no editable install's finder), as a source tree put on PYTHONPATH is read.
    code = "from harness.foundation.locations import record_splits_dir; print(record_splits_dir())"
    out = subprocess.run(
        [sys.executable, "-S", "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=ROOT.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(out).resolve() == (ROOT / "splits").resolve()
