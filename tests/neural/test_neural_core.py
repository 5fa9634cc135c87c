"""Shared neural machinery: batching, loss, clustering, hard-negative batches, search, cache."""

import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from harness.evaluation.metrics import order  # noqa: E402
from harness.neural.batching import token_budget_batches  # noqa: E402
from harness.neural.hard_negatives import hard_negative_batches, random_batches  # noqa: E402
from harness.neural.kmeans import spherical_kmeans  # noqa: E402
from harness.neural.losses import supcon_loss  # noqa: E402
from harness.neural.search import top_k_by_backend  # noqa: E402


def test_token_budget_batches_cover_everything_within_budget():
    rng = random.Random(0)
    lengths = [rng.randint(5, 512) for _ in range(500)]
    batches = token_budget_batches(lengths, max_tokens=4096, max_batch=64)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(500))
    for b in batches:
        assert len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 4096
        assert len(b) <= 64
        assert [lengths[i] for i in b] == sorted((lengths[i] for i in b), reverse=True)


def test_supcon_loss_matches_a_naive_computation():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(5, 8, generator=g), torch.randn(5, 8, generator=g)
    tau = 0.1
    z = torch.nn.functional.normalize(torch.cat([a, b]), dim=-1)
    total = 0.0
    for i in range(10):
        pos = (i + 5) % 10
        denom = sum(torch.exp(z[i] @ z[c] / tau) for c in range(10) if c != i)
        total += -torch.log(torch.exp(z[i] @ z[pos] / tau) / denom)
    assert supcon_loss(a, b, tau, cosine=True).item() == pytest.approx(total.item() / 10, rel=1e-5)


def test_supcon_loss_is_low_when_pairs_match():
    a = torch.eye(6)
    assert supcon_loss(a, a.clone(), 0.05, cosine=True) < 1e-3 < supcon_loss(a, a.roll(1, 0), 0.05, cosine=True)


def _blobs(n_groups=8, per_group=10, dim=16, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(n_groups, dim)) * 5
    vecs, authors, group_of = [], [], {}
    for g in range(n_groups):
        for a in range(per_group):
            name = f"g{g}a{a}"
            group_of[name] = g
            for _ in range(2):
                vecs.append(centers[g] + rng.normal(size=dim) * 0.1)
                authors.append(name)
    return np.array(vecs, dtype=np.float32), authors, group_of


@pytest.mark.parametrize("backend", ["torch", "faiss"])
def test_spherical_kmeans_recovers_separated_clusters(backend):
    if backend == "faiss":
        pytest.importorskip("faiss")
    x, authors, group_of = _blobs()
    assign = spherical_kmeans(x, 8, seed=0, backend=backend)
    by_group = {}
    for a, c in zip(authors, assign):
        by_group.setdefault(group_of[a], set()).add(int(c))
    assert all(len(cs) == 1 for cs in by_group.values())
    assert len({next(iter(cs)) for cs in by_group.values()}) == 8


def test_hard_negative_batches_group_the_known_clusters():
    """8 groups of 10 authors, batches of 20, s = 2: each batch is exactly two whole groups."""
    x, authors, group_of = _blobs()
    batches = hard_negative_batches(x, authors, 20, cluster_factor=2.0, seed=3)
    assert sorted(a for b in batches for a in b) == sorted(set(authors))
    for b in batches:
        groups = {group_of[a] for a in b}
        assert len(b) == 20 and len(groups) == 2
        assert all(sum(group_of[a] == g for a in b) == 10 for g in groups)
    # random batching, for contrast, mixes groups
    mixed = random_batches(sorted(set(authors)), 20, seed=3)
    assert max(len({group_of[a] for a in b}) for b in mixed) > 2


def test_hard_negative_batches_with_projection_and_uneven_sizes():
    x, authors, _ = _blobs(n_groups=5, per_group=7, dim=48)
    batches = hard_negative_batches(x, authors, 16, cluster_factor=3.5, project_to=16, seed=0)
    assert sorted(a for b in batches for a in b) == sorted(set(authors))
    assert all(2 <= len(b) <= 16 for b in batches)


@pytest.mark.parametrize("backend", ["torch", "faiss"])
def test_exact_search_applies_the_tie_rule(backend):
    if backend == "faiss":
        pytest.importorskip("faiss")
    rng = np.random.default_rng(0)
    cands = rng.integers(-2, 3, size=(300, 4)).astype(np.float32)  # many exact ties
    queries = rng.integers(-2, 3, size=(12, 4)).astype(np.float32)
    ids = [f"c{i:03d}" for i in rng.permutation(300)]
    got = top_k_by_backend(queries, cands, ids, 10, backend=backend)
    for q, ranked in zip(queries, got):
        assert [c for c, _ in ranked] == order(zip(ids, (cands @ q).tolist()))[:10]


def test_backbone_without_gradient_checkpointing_trains_without_it():
    """MPNet (all-mpnet-base-v2, the SADIRI stand-in) has no gradient checkpointing: training
    goes on without it instead of failing."""
    from transformers import MPNetConfig, MPNetModel

    from harness.neural.encoder import checkpoint_backbone

    mpnet = MPNetModel(
        MPNetConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    )
    assert checkpoint_backbone(mpnet) is False


def test_the_old_encoder_names_are_gone():
    """TextEncoder and TokenEncoder were BiEncoder and TokenBiEncoder (the reranker's cross-encoder is
    one too); the old names were kept a while as deprecated aliases and are now removed."""
    import harness.neural.encoder as encoder

    for old in ("BiEncoder", "TokenBiEncoder"):
        assert not hasattr(encoder, old)
    assert issubclass(encoder.TokenEncoder, encoder.TextEncoder)
