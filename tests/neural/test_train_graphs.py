"""The graphed training forward (harness.neural.fast.graphed_train): the padded layout its
graphs are fixed to, and that a padded pack gives the real rows what the unpadded pack gives
(CPU, fp32, the layers run eagerly: a capture needs CUDA, and the GPU test below does that)."""

import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")


def _groups(rng, n):
    return [
        ([1] * rng.randint(1, 300), [[2] * rng.randint(1, 300) for _ in range(rng.randint(1, 6))]) for _ in range(n)
    ]


def test_a_padded_pack_keeps_its_tokens_first_and_pads_in_sequences_the_kernel_can_take():
    """Packs of rows (keys their own tokens) and shared-prefix packs (keys gathered): the padded
    pack is the pack, then pad sequences of 1..max_q tokens whose keys are pad tokens only; tokens
    and gathered keys are multiples of the grain; the number of sequences depends on the rows'
    count, the longest query and the grain only, so one graph serves every pack of that shape."""
    from harness.neural.fast.graphed_train import LONGEST_GRAIN, HostPack, pad_pack
    from harness.neural.fast.prefix_train import shared_prefix_pack

    rng = random.Random(0)
    sequences: dict[tuple, int] = {}
    for i in range(1500):
        grain = rng.choice([64, 256, 1024])
        if i % 2:
            pack = HostPack.of_rows([[3] * rng.randint(1, 600) for _ in range(rng.randint(1, 40))])
        else:
            pack = shared_prefix_pack(_groups(rng, rng.randint(1, 4)))[0]
        got = pad_pack(pack, grain)
        t, s = len(pack.ids), len(pack.cu_q) - 1
        assert len(got.ids) % grain == 0 and len(got.positions) == len(got.ids)
        assert (got.ids[:t] == pack.ids).all() and (got.positions[:t] == pack.positions).all()
        assert (got.cu_q[: s + 1] == pack.cu_q).all() and (got.cu_k[: s + 1] == pack.cu_k).all()
        assert got.cu_q[-1] == len(got.ids) and got.max_q % LONGEST_GRAIN == 0
        assert pack.max_q <= got.max_q < pack.max_q + LONGEST_GRAIN and pack.max_k <= got.max_k
        q_len, k_len = got.cu_q[1:] - got.cu_q[:-1], got.cu_k[1:] - got.cu_k[:-1]
        assert (q_len >= 1).all() and (q_len <= got.max_q).all() and (k_len >= q_len).all()
        assert (k_len <= got.max_k).all()
        assert (got.ids[t:] == 0).all()
        for j in range(s, len(q_len)):  # a pad sequence: positions from 0, its keys pad tokens
            lo, hi = got.cu_q[j], got.cu_q[j + 1]
            assert (got.positions[lo:hi] == range(hi - lo)).all()
            if got.gather is not None:
                assert (got.gather[got.cu_k[j] : got.cu_k[j + 1]] >= t).all()
        if pack.gather is None:
            assert got.gather is None and (got.cu_q == got.cu_k).all()
        else:
            assert len(got.gather) == got.cu_k[-1] and len(got.gather) % grain == 0
            assert (got.gather[: len(pack.gather)] == pack.gather).all() and got.gather.max() < len(got.ids)
        shape = (grain, s, pack.gather is None, got.max_q)
        assert sequences.setdefault(shape, len(q_len)) == len(q_len)
    with pytest.raises(ValueError):
        HostPack.of_rows([[3], []])


def _peft(seed=0):
    from aa_harness_bench.archs import build_model
    from aa_harness_bench.reference import with_lora

    torch.manual_seed(seed)
    peft = with_lora(build_model("tiny-qwen3", "cpu", torch.float32, seed=seed))
    peft.train()
    return peft


def _rows(n, lo, hi, seed):
    from aa_harness_bench.workload import random_rows

    return random_rows(n, lo, hi, 512, seed)


class EagerGraphs:
    """TrainGraphs with its capture replaced by the eager module it would capture (CPU)."""

    def __new__(cls, decoder, monkeypatch):
        from harness.neural.fast import graphed_train

        graphs = graphed_train.TrainGraphs(decoder, torch.device("cpu"), grain=64)
        captured = []

        def capture(tensors, padded):
            captured.append((len(padded.ids), padded.max_q))
            return graphed_train._Forward(decoder, graphs.params, padded.max_q, padded.max_k)

        monkeypatch.setattr(graphs, "_capture", capture)
        monkeypatch.setattr(graphed_train.TrainGraphs, "usable", staticmethod(lambda d, dev: True))
        return graphs, captured


def test_a_padded_pack_gives_the_real_rows_their_unpadded_loss_and_gradients(monkeypatch):
    """The retriever loss through the padded layout equals the unpadded one, and so does every LoRA
    gradient, accumulated over two micro-batches of different shapes into the gradients the
    graphs own (a flat buffer, zeroed once a step). fp32 on the CPU: the products' rows are
    independent of the padding, so only summation order differs (bound 1e-5 relative)."""
    from harness.neural.fast.graphed_train import HostPack, pad_pack
    from harness.neural.fast.lora_train import LoraFusedDecoder, retriever_loss

    cpu = torch.device("cpu")
    peft = _peft()
    for m in peft.modules():  # no dropout: the two paths would draw different masks
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    proj = torch.nn.Linear(64, 32)
    dec = LoraFusedDecoder(peft, compile=False)
    batches = [_rows(8, 3, 40, seed=1), _rows(6, 60, 150, seed=2)]
    params = [p for p in peft.parameters() if p.requires_grad]

    def step(graphs):
        peft.zero_grad(set_to_none=True)
        losses = []
        for rows in batches:
            n = len(rows) // 2
            loss = retriever_loss(dec, proj, rows[:n], rows[n:], cpu, tau=0.05, graphs=graphs)
            loss.backward()
            losses.append(loss.item())
        return losses, [p.grad.clone() for p in params]

    want_losses, want = step(None)
    graphs, captured = EagerGraphs(dec, monkeypatch)
    got_losses, got = step(graphs)
    layouts = [pad_pack(HostPack.of_rows(rows), 64) for rows in batches]
    assert layouts[0].key != layouts[1].key
    assert captured == [(len(lay.ids), lay.max_q) for lay in layouts]
    assert got_losses == pytest.approx(want_losses, rel=1e-5)
    worst = max(((g - w).norm() / w.norm()).item() for g, w in zip(got, want))
    assert worst < 1e-5
    # the gradients are views of the one buffer the graphs own, never of a graph's output
    flat = graphs.grads
    assert flat is not None and all(
        p.grad.untyped_storage().data_ptr() == flat.untyped_storage().data_ptr() for p in params
    )
    # a pack of the same shape reuses its graph; it is keyed by the rows too (the pooling's split)
    rows = batches[0]
    retriever_loss(dec, proj, rows[:4], rows[4:], cpu, tau=0.05, graphs=graphs)
    assert len(captured) == 2
    assert graphs.calls == 3 and graphs.captured_at == [1, 2]  # what the bench reads to tell a capture from a replay


def test_a_padded_shared_prefix_pack_gives_the_candidates_their_unpadded_loss_and_gradients(monkeypatch):
    """The reranker's shared-prefix step through the padded pack (its gather index padded too)
    equals the unpadded step: loss and every LoRA gradient (fp32, CPU, the layers eager)."""
    from harness.neural.fast.lora_train import LoraFusedDecoder
    from harness.neural.fast.prefix_train import reranker_loss

    cpu = torch.device("cpu")
    peft = _peft(seed=1)
    for m in peft.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    head = torch.nn.Linear(64, 1, bias=False)
    groups = [
        (_rows(1, 20, 20, seed=2)[0], _rows(5, 2, 30, seed=3)),
        (_rows(1, 7, 7, seed=4)[0], _rows(3, 1, 9, seed=5)),
    ]
    dec = LoraFusedDecoder(peft, compile=False)
    params = [p for p in peft.parameters() if p.requires_grad]

    def step(graphs):
        peft.zero_grad(set_to_none=True)
        loss = reranker_loss(dec, head, groups, cpu, graphs=graphs)
        loss.backward()
        return loss.item(), [p.grad.clone() for p in params]

    want_loss, want = step(None)
    graphs, captured = EagerGraphs(dec, monkeypatch)
    got_loss, got = step(graphs)
    assert len(captured) == 1
    assert got_loss == pytest.approx(want_loss, rel=1e-5)
    assert max(((g - w).norm() / w.norm()).item() for g, w in zip(got, want)) < 1e-5


def test_new_shapes_are_captured_only_below_the_shape_count_and_the_memory_share():
    """Each graph keeps its own activations, so capturing stops at MAX_GRAPHS shapes or once the
    allocator holds GRAPH_MEMORY_SHARE of the card, whichever comes first; the reason is one line."""
    from harness.neural.fast.graphed_train import GRAPH_MEMORY_SHARE, MAX_GRAPHS, capture_refused

    total = 80 * 2**30
    below = int(GRAPH_MEMORY_SHARE * total) - 1
    assert capture_refused(0, 0, total) is None
    assert capture_refused(MAX_GRAPHS - 1, below, total) is None
    assert capture_refused(MAX_GRAPHS, 0, total) == f"{MAX_GRAPHS} pack shapes graphed already"
    refused = capture_refused(3, below + 1, total)
    assert refused is not None and "of the card's 80.0" in refused and "50%" in refused
