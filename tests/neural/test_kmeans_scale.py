"""k-means++ on the device: deterministic per seed, and drawing several centroids a round
(the large-k default) seeds about as well as one a round (exact k-means++)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def one_thread():
    """Many tiny ops: threads only add contention on a shared CPU."""
    was = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(was)


def _data(n=6000, dim=24, centres=300, seed=0):
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, dim)).astype(np.float32)
    x = c[rng.integers(0, centres, n)] + 0.35 * rng.standard_normal((n, dim)).astype(np.float32)
    return torch.nn.functional.normalize(torch.as_tensor(x), dim=1)


def _inertia(pts, cent):
    from harness.neural.kmeans import _assign

    return float((1 - _assign(pts, cent)[1]).sum())


def test_same_seed_same_clusters():
    from harness.neural.kmeans import spherical_kmeans

    x = _data(n=1500).numpy()
    a = spherical_kmeans(x, 600, seed=5, backend="torch", restarts=2)  # 600 > 256: batched seeding
    b = spherical_kmeans(x, 600, seed=5, backend="torch", restarts=2)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, spherical_kmeans(x, 600, seed=6, backend="torch", restarts=2))


def test_batched_seeding_is_as_good_as_one_centroid_a_round():
    from harness.neural.kmeans import _generator, _plus_plus, _torch_lloyd

    pts = _data(n=4000, centres=200)
    k = 800
    exact, batched = [], []
    for r in range(3):
        for batch, out in ((1, exact), (None, batched)):  # None: k // 256 = 3 a round
            g = _generator(pts.device, r)
            init = _plus_plus(pts, k, g, batch)
            assert len(init) == k
            out.append((_inertia(pts, init), _inertia(pts, _torch_lloyd(pts, init, 10, g))))
    seed_exact, seed_batched = np.mean([e[0] for e in exact]), np.mean([b[0] for b in batched])
    final_exact, final_batched = np.mean([e[1] for e in exact]), np.mean([b[1] for b in batched])
    assert seed_batched <= 1.05 * seed_exact
    assert final_batched <= 1.02 * final_exact


def test_assignment_in_blocks_equals_whole(monkeypatch):
    import harness.neural.kmeans as km

    pts = _data(n=1000)
    cent = pts[:37]
    whole = (pts @ cent.T).max(dim=1)
    monkeypatch.setattr(km, "_BLOCK_ELEMENTS", 37 * 64)
    ids, sims = km._assign(pts, cent)
    assert torch.equal(ids, whole.indices) and torch.allclose(sims, whole.values)


def test_projection_on_device_equals_numpy():
    from harness.neural.hard_negatives import random_projection

    x = np.random.default_rng(0).standard_normal((50, 30)).astype(np.float32)
    got = random_projection(x, 10, 3, device=torch.device("cpu")).numpy()
    assert np.allclose(got, random_projection(x, 10, 3), rtol=1e-5, atol=1e-6)
