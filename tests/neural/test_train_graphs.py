"""The graphed training forward (harness.neural.fast.graphed_train): the padded layout its
graphs are fixed to, and that a padded pack gives the real rows what the unpadded pack gives
(CPU, fp32, the layers run eagerly: a capture needs CUDA, and the GPU test below does that)."""

import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")


def test_pad_layout_pads_to_the_grain_in_pieces_the_attention_kernel_can_take():
    from harness.neural.fast.graphed_train import LONGEST_GRAIN, pad_layout

    rng = random.Random(0)
    seen: dict[tuple, int] = {}
    for _ in range(2000):
        grain = rng.choice([64, 256, 1024, 4096])
        lengths = [rng.randint(1, 600) for _ in range(rng.randint(1, 40))]
        got = pad_layout(lengths, grain)
        real = sum(lengths)
        assert got.tokens % grain == 0 and got.tokens == real + sum(got.pads)
        assert got.longest % LONGEST_GRAIN == 0 and max(lengths) <= got.longest < max(lengths) + LONGEST_GRAIN
        assert all(1 <= p <= got.longest for p in got.pads), (lengths, got)
        assert sum(got.pads) < grain + len(got.pads)  # never a grain of padding more than needed
        # the number of pieces, so the cu_seqlens shape, depends on the longest row and the grain only
        assert seen.setdefault((grain, got.longest), len(got.pads)) == len(got.pads)
    with pytest.raises(ValueError):
        pad_layout([3, 0])


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

        def capture(packed, longest):
            captured.append((packed.ids.numel(), longest))
            return graphed_train._Forward(decoder, graphs.params, longest)

        monkeypatch.setattr(graphs, "_capture", capture)
        monkeypatch.setattr(graphed_train.TrainGraphs, "usable", staticmethod(lambda d, dev: True))
        return graphs, captured


def test_a_padded_pack_gives_the_real_rows_their_unpadded_loss_and_gradients(monkeypatch):
    """The retriever loss through the padded layout equals the unpadded one, and so does every LoRA
    gradient, accumulated over two micro-batches of different shapes into the gradients the
    graphs own (a flat buffer, zeroed once a step). fp32 on the CPU: the products' rows are
    independent of the padding, so only summation order differs (bound 1e-5 relative)."""
    from harness.neural.fast.graphed_train import pad_layout
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
    layouts = [pad_layout([len(r) for r in rows], 64) for rows in batches]
    assert layouts[0].key != layouts[1].key
    assert captured == [(lay.tokens, lay.longest) for lay in layouts]
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
