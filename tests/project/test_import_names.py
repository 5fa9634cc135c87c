"""The generic top-level names the harness installs (`harness`, `plugins`): a shadowed `plugins`
package is one clear line naming where it came from, not a traceback per built-in system."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT


def test_the_plugins_package_beside_harness_passes():
    from harness.plugins import check_import_names

    check_import_names()


def test_a_plugins_package_in_the_current_folder_is_one_clear_error(tmp_path):
    """`python -m harness` puts the current folder first on the path; a project's own `plugins`
    package there once broke every built-in system with an import error of its own."""
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "__init__.py").write_text("", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "AA_HARNESS_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [sys.executable, "-m", "harness", "systems"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("aa-harness: error: the top-level package 'plugins' resolves to")
    assert str(tmp_path / "plugins") in lines[0] and "Traceback" not in done.stderr
