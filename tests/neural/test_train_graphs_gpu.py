"""CUDA graphs of the fused training step on a GPU (marked gpu: `pytest -m gpu`; skipped without
CUDA): the graphed step gives the eager step's losses and LoRA gradients, step after step,
over packs of several shapes and with gradients accumulated over micro-batches; with LoRA
dropout on, each replay draws new masks.

bf16 under autocast with fp32 LoRA weights, as the trainer runs: the padded pack changes the
products' shapes, so their kernels and reduction orders, and the two steps differ by bf16
rounding (2^-8 relative per product, a few products deep in a two-layer model): losses within
1e-2 relative and gradients within 5e-2, where a wrong row, mask or accumulation is off by O(1).
"""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def _setup(dropout: float):
    from aa_harness_bench.archs import build_model
    from aa_harness_bench.reference import with_lora
    from harness.neural.fast.lora_train import LoraFusedDecoder

    cuda = torch.device("cuda")
    torch.manual_seed(0)
    peft = with_lora(build_model("tiny-qwen3", cuda, torch.bfloat16, seed=0))
    for p in peft.parameters():
        if p.requires_grad:
            p.data = p.data.float()  # fp32 master weights, bf16 inside autocast
    for m in peft.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = dropout
    peft.train()
    proj = torch.nn.Linear(64, 32).to(cuda)
    return peft, proj, LoraFusedDecoder(peft, compile=False)


def _batches():
    from aa_harness_bench.workload import random_rows

    return [random_rows(8, lo, hi, 512, seed) for seed, (lo, hi) in enumerate([(3, 40), (60, 150), (3, 40), (20, 90)])]


def _steps(peft, proj, dec, graphs, batches, accumulate):
    from harness.neural.fast.lora_train import retriever_loss

    cuda = torch.device("cuda")
    params = [p for p in peft.parameters() if p.requires_grad]
    out = []
    for i in range(0, len(batches), accumulate):
        peft.zero_grad(set_to_none=True)
        losses = []
        for rows in batches[i : i + accumulate]:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = retriever_loss(dec, proj, rows[:4], rows[4:], cuda, tau=0.05, graphs=graphs)
            loss.backward()
            losses.append(loss.item())
        out.append((losses, [p.grad.clone() for p in params]))
    return out


@pytest.mark.parametrize("accumulate", [1, 2])
def test_the_graphed_step_gives_the_eager_steps_losses_and_gradients(accumulate):
    from harness.neural.fast.graphed_train import TrainGraphs

    peft, proj, dec = _setup(0.0)
    batches = _batches()
    want = _steps(peft, proj, dec, None, batches, accumulate)
    graphs = TrainGraphs(dec, torch.device("cuda"), grain=256)
    got = _steps(peft, proj, dec, graphs, batches, accumulate)
    assert 2 <= len(graphs.graphs) <= 3  # batches 0 and 2 share a shape
    for (gl, gg), (wl, wg) in zip(got, want):
        assert gl == pytest.approx(wl, rel=1e-2)
        worst = max(((g - w).norm() / w.norm()).item() for g, w in zip(gg, wg))
        print(f"losses {gl} vs {wl}; worst gradient rel. error {worst:.2e}")
        assert worst < 5e-2


def test_lora_dropout_draws_new_masks_at_each_replay():
    from harness.neural.fast.graphed_train import TrainGraphs
    from harness.neural.fast.lora_train import retriever_loss

    peft, proj, dec = _setup(0.1)
    graphs = TrainGraphs(dec, torch.device("cuda"), grain=256)
    rows = _batches()[0]
    losses = []
    for _ in range(3):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            losses.append(
                retriever_loss(dec, proj, rows[:4], rows[4:], torch.device("cuda"), tau=0.05, graphs=graphs).item()
            )
    assert len(graphs.graphs) == 1 and len(set(losses)) == 3


def test_the_graphed_shared_prefix_step_gives_the_eager_steps_losses_and_gradients():
    """The reranker's step (keys gathered from the prefix), graphed against eager, over packs of
    two shapes and one shape again."""
    from aa_harness_bench.workload import random_rows
    from harness.neural.fast.graphed_train import TrainGraphs
    from harness.neural.fast.prefix_train import reranker_loss

    peft, _, dec = _setup(0.0)
    cuda = torch.device("cuda")
    head = torch.nn.Linear(64, 1, bias=False).to(cuda)
    packs = [
        [(random_rows(1, lo, lo, 512, s)[0], random_rows(5, 2, hi, 512, s + 1)) for s in (seed, seed + 10)]
        for seed, (lo, hi) in enumerate([(20, 30), (90, 200), (20, 30)])
    ]
    params = [p for p in peft.parameters() if p.requires_grad]

    def steps(graphs):
        out = []
        for groups in packs:
            peft.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = reranker_loss(dec, head, groups, cuda, graphs=graphs)
            loss.backward()
            out.append((loss.item(), [p.grad.clone() for p in params]))
        return out

    want = steps(None)
    graphs = TrainGraphs(dec, cuda, grain=256)
    got = steps(graphs)
    assert len(graphs.graphs) == 2  # packs 0 and 2 share a shape
    for (gl, gg), (wl, wg) in zip(got, want):
        worst = max(((g - w).norm() / w.norm()).item() for g, w in zip(gg, wg))
        print(f"loss {gl} vs {wl}; worst gradient rel. error {worst:.2e}")
        assert gl == pytest.approx(wl, rel=1e-2) and worst < 5e-2
