"""Model lookup: local copies first, a bounded hub probe, one line when nothing has the model."""

from __future__ import annotations

import time

import pytest

from harness.cli import main


@pytest.fixture
def no_models(tmp_path, monkeypatch):
    """No local copy anywhere and no hub: an empty model dir, an empty HF cache, a dead endpoint."""

    monkeypatch.setenv("AA_HARNESS_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("AA_HARNESS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path


def test_missing_model_fails_fast_in_one_line_naming_where_and_how(no_models):
    from harness.errors import HarnessError
    from harness.neural.models import ModelNotFoundError, resolve_model

    with pytest.raises(ModelNotFoundError) as e:
        resolve_model("sentence-transformers/all-mpnet-base-v2")
    msg = str(e.value)
    assert isinstance(e.value, HarnessError) and "\n" not in msg
    assert "all-mpnet-base-v2" in msg and str(no_models / "models") in msg
    assert "huggingface-cli download sentence-transformers/all-mpnet-base-v2" in msg and "AA_HARNESS_MODEL_DIR" in msg
    assert "shared" not in msg and "fetch_pretrained" not in msg  # no development-only advice


def test_hub_probe_is_bounded(no_models, monkeypatch):
    from harness.neural.models import hub_reachable

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_ENDPOINT", "http://10.255.255.1")  # unroutable: the connection hangs
    start = time.perf_counter()
    assert not hub_reachable("org/model", timeout=0.5)
    assert time.perf_counter() - start < 5


def test_model_lookup_order(no_models, monkeypatch):
    import harness.neural.models as models
    from harness.neural.models import resolve_model

    cached = no_models / "cache" / "models" / "m"
    cached.mkdir(parents=True)
    assert resolve_model("org/m") == str(cached)  # <cache>/models
    env = no_models / "models" / "m"
    env.mkdir(parents=True)
    assert resolve_model("org/m") == str(env)  # $AA_HARNESS_MODEL_DIR first
    snap = no_models / "hf" / "hub" / "models--org--n" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    assert resolve_model("org/n") == str(snap)  # then the HF cache
    monkeypatch.setattr(models, "hub_reachable", lambda ref, timeout=None: True)
    assert resolve_model("org/other") == "org/other"  # the hub last, when it answers


def test_cli_run_without_a_model_copy_is_one_line(no_models, tmp_path, capsys):
    code = main(
        ["run", "sbert", "--collection", "demo", "--seeds", "0", "--runs-dir", str(tmp_path / "runs"), "--no-progress"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "huggingface-cli download" in err[0]
