"""docs/claims.md is what docs/gen_claims.py writes from the committed runs now."""

import importlib.util

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_committed_claims_page_is_current():
    spec = importlib.util.spec_from_file_location("gen_claims", ROOT / "docs" / "gen_claims.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert (ROOT / "docs" / "claims.md").read_text(encoding="utf-8") == gen.render(), (
        "docs/claims.md is stale: run `python docs/gen_claims.py`"
    )
    assert "author clusters" in gen.render() and "(seed, query author)" in gen.render()
