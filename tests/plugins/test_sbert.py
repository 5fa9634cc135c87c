import numpy as np
import pytest

pytest.importorskip("sentence_transformers")

from harness.data.documents import Document  # noqa: E402


@pytest.mark.slow
def test_sbert_from_a_local_folder_encodes_unit_vectors_and_ranks(minilm, isolated_cache):
    from harness.protocols import as_ranker
    from plugins.sbert.config import SBERTConfig
    from plugins.sbert.system import SBERTSystem

    system = SBERTSystem(SBERTConfig(model=str(minilm), batch_size=4))
    docs = [
        Document("a", ("x",), "The cat sat on the mat.", "g"),
        Document("b", ("y",), "Stock markets fell sharply.", "g"),
        Document("c", ("z",), "A kitten was sitting on a rug.", "h"),
    ]
    vecs = system.encode(docs)
    assert vecs.shape == (3, 384) and np.allclose(np.linalg.norm(vecs, axis=1), 1, atol=1e-5)
    ranked = as_ranker(system).rank([docs[0]], docs[1:], 100)["a"]
    assert ranked[0][0] == "c"
    assert system.describe()["weights_sha256"]


def test_model_resolution_prefers_local_copies(tmp_path, monkeypatch):
    from harness.neural.models import resolve_model

    (tmp_path / "all-mpnet-base-v2").mkdir()
    monkeypatch.setenv("AA_HARNESS_MODEL_DIR", str(tmp_path))
    assert resolve_model("sentence-transformers/all-mpnet-base-v2") == str(tmp_path / "all-mpnet-base-v2")
    monkeypatch.setattr("harness.neural.models.hub_reachable", lambda ref, timeout=None: True)
    assert resolve_model("org/other-model") == "org/other-model"  # only the hub has it, and the hub answers
