"""The fast LoRA training steps compute the naive Hugging Face + PEFT step's loss and gradients:
the retriever's packed, fused step and the reranker's shared-prefix step (against concatenated
pairs). CPU, fp32, tiny Qwen3 and Mistral built from configs, LoRA dropout off for the comparison."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")


def _peft(arch, seed=0):
    from aa_harness_bench.archs import build_model
    from aa_harness_bench.reference import with_lora

    torch.manual_seed(seed)
    return with_lora(build_model(arch, "cpu", torch.float32, seed=seed))


def _rows(n, lo, hi, seed):
    from aa_harness_bench.workload import random_rows

    return random_rows(n, lo, hi, 512, seed)


@pytest.mark.parametrize("arch", ["tiny-qwen3", "tiny-mistral"])
@pytest.mark.parametrize("checkpoint", [False, True])
def test_retriever_step_matches_peft(arch, checkpoint):
    from aa_harness_bench.reference import first_step_check, naive_retriever_loss
    from harness.neural.fast.lora_train import LoraFusedDecoder, retriever_loss

    peft = _peft(arch)
    proj = torch.nn.Linear(64, 32)
    rows = _rows(8, 3, 40, seed=1)
    a, b = rows[:4], rows[4:]
    dec = LoraFusedDecoder(peft, compile=False, checkpoint=checkpoint)
    check = first_step_check(
        peft,
        lambda: naive_retriever_loss(peft, proj, a, b, torch.device("cpu"), tau=0.05),
        lambda: retriever_loss(dec, proj, a, b, torch.device("cpu"), tau=0.05),
        extra=list(proj.parameters()),
    )
    assert check["loss_rel_error"] < 1e-5
    g = check["gradients"]
    assert not g["mismatched_names"] and g["tensors"] == 2 * 7 * 2 + 2
    assert g["rel_error"] < 1e-5 and g["rel_error_worst_tensor"] < 1e-4


@pytest.mark.parametrize("arch", ["tiny-qwen3", "tiny-mistral"])
def test_shared_prefix_reranker_step_matches_concatenated_pairs(arch):
    from aa_harness_bench.reference import first_step_check, naive_reranker_loss
    from harness.neural.fast.lora_train import LoraFusedDecoder
    from harness.neural.fast.prefix_train import reranker_loss

    peft = _peft(arch, seed=1)
    head = torch.nn.Linear(64, 1, bias=False)
    groups = [
        (_rows(1, 20, 20, seed=2)[0], _rows(5, 2, 30, seed=3)),
        (_rows(1, 7, 7, seed=4)[0], _rows(3, 1, 9, seed=5)),
    ]
    dec = LoraFusedDecoder(peft, compile=False, checkpoint=True)
    check = first_step_check(
        peft,
        lambda: naive_reranker_loss(peft, head, groups, torch.device("cpu")),
        lambda: reranker_loss(dec, head, groups, torch.device("cpu")),
        extra=[head.weight],
    )
    assert check["loss_rel_error"] < 1e-5
    assert check["gradients"]["rel_error"] < 1e-5 and check["gradients"]["rel_error_worst_tensor"] < 1e-4


@pytest.mark.parametrize("native_gqa", [True, False])
def test_checkpointed_fast_steps_on_the_gpu_attention_path_match_peft(cpu_varlen_kernel, native_gqa):
    """The trainers' hooks with checkpointing on (grad_checkpointing's default) on the GPU's attention
    path (torch's varlen kernel, emulated on the CPU): backward runs, and the loss and every
    gradient are PEFT's. Regression: on an H100 (torch 2.11, no enable_gqa) the first varlen call,
    inside layer 0's checkpointed forward, probed grouped-query support with autograd on; the
    recomputation found it decided and saved fewer tensors, a CheckpointError at the first backward."""
    from types import SimpleNamespace

    from aa_harness_bench.reference import first_step_check, naive_reranker_loss, naive_retriever_loss
    from aa_harness_bench.train import harness_reranker_loss
    from harness.neural.fast import fused_decoder
    from harness.neural.fast.lora_train import fused_embed_batch
    from harness.neural.fast.prefix_train import shared_prefix_score_groups
    from harness.neural.losses import supcon_loss

    calls = cpu_varlen_kernel(native_gqa)
    cpu = torch.device("cpu")
    peft = _peft("tiny-mistral", seed=1)
    head = torch.nn.Linear(64, 1, bias=False)
    groups = [
        (_rows(1, 20, 20, seed=2)[0], _rows(5, 2, 30, seed=3)),
        (_rows(1, 7, 7, seed=4)[0], _rows(3, 1, 9, seed=5)),
    ]
    scorer = SimpleNamespace(backbone=peft, finish=head)
    check = first_step_check(
        peft,
        lambda: naive_reranker_loss(peft, head, groups, cpu),
        lambda: harness_reranker_loss(shared_prefix_score_groups(checkpoint=True), scorer, groups, cpu),
        extra=[head.weight],
    )
    assert calls and fused_decoder._GQA_NATIVE is native_gqa
    assert check["loss_rel_error"] < 1e-5
    assert check["gradients"]["rel_error"] < 1e-5 and check["gradients"]["rel_error_worst_tensor"] < 1e-4

    fused_decoder._GQA_NATIVE = None  # the retriever's first call probes too
    proj = torch.nn.Linear(64, 32)
    rows = _rows(8, 3, 40, seed=1)
    encoder = SimpleNamespace(backbone=peft, pooling="mean", finish=proj)
    embed = fused_embed_batch(checkpoint=True)

    def fast():
        emb = embed(peft, encoder, rows, cpu)
        return supcon_loss(emb[:4], emb[4:], 0.05, cosine=False)

    check = first_step_check(
        peft,
        lambda: naive_retriever_loss(peft, proj, rows[:4], rows[4:], cpu, tau=0.05),
        fast,
        extra=list(proj.parameters()),
    )
    assert fused_decoder._GQA_NATIVE is native_gqa
    assert check["loss_rel_error"] < 1e-5
    g = check["gradients"]
    assert not g["mismatched_names"] and g["tensors"] == 2 * 7 * 2 + 2
    assert g["rel_error"] < 1e-5 and g["rel_error_worst_tensor"] < 1e-4


@pytest.mark.parametrize("step", ["reranker", "retriever"])
def test_checkpointed_steps_with_lora_dropout_equal_the_steps_without(cpu_varlen_kernel, step):
    """In train mode with LoRA dropout, on the GPU's attention path (emulated) with its first-call
    probe inside the checkpointed forward, checkpointing changes nothing: the recomputation draws
    the forward's dropout masks and saves the forward's tensors, so loss and gradients are equal."""
    from aa_harness_bench.reference import lora_gradients
    from harness.neural.fast import fused_decoder
    from harness.neural.fast.lora_train import LoraFusedDecoder, retriever_loss
    from harness.neural.fast.prefix_train import reranker_loss

    cpu_varlen_kernel()
    cpu = torch.device("cpu")
    peft = _peft("tiny-qwen3", seed=5)
    peft.train()
    finish = torch.nn.Linear(64, 1 if step == "reranker" else 32, bias=False)
    groups = [(_rows(1, 12, 12, seed=12)[0], _rows(4, 2, 20, seed=13))]
    rows = _rows(6, 3, 30, seed=14)
    runs = []
    for checkpoint in (False, True):
        fused_decoder._GQA_NATIVE = None
        peft.zero_grad(set_to_none=True)
        finish.weight.grad = None
        dec = LoraFusedDecoder(peft, compile=False, checkpoint=checkpoint)
        torch.manual_seed(7)
        if step == "reranker":
            loss = reranker_loss(dec, finish, groups, cpu)
        else:
            loss = retriever_loss(dec, finish, rows[:3], rows[3:], cpu, tau=0.05)
        loss.backward()
        runs.append((float(loss.detach()), lora_gradients(peft, [finish.weight])))
    (la, ga), (lb, gb) = runs
    assert lb == pytest.approx(la, rel=1e-6)
    assert ga.keys() == gb.keys() and len(ga) == 2 * 7 * 2 + 1
    assert all(torch.allclose(ga[n], gb[n], rtol=1e-5, atol=1e-7) for n in ga)


def test_shared_prefix_scores_equal_concatenated_pairs_in_train_mode_without_dropout():
    from harness.neural.batching import right_padded
    from harness.neural.fast.lora_train import LoraFusedDecoder
    from harness.neural.fast.prefix_train import shared_prefix_scores
    from harness.neural.pooling import last_token_pool

    peft = _peft("tiny-qwen3", seed=2)
    peft.eval()
    head = torch.nn.Linear(64, 1, bias=False)
    prefix, cands = _rows(1, 11, 11, seed=6)[0], _rows(4, 1, 25, seed=7)
    got = shared_prefix_scores(LoraFusedDecoder(peft, compile=False), head, [(prefix, cands)], torch.device("cpu"))[0]
    ids, mask = right_padded([prefix + c for c in cands], 0)
    want = head(last_token_pool(peft(input_ids=ids, attention_mask=mask).last_hidden_state, mask))[:, 0]
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)


def test_lora_dropout_trains_one_mask_per_target():
    """In train mode the fast path draws LoRA dropout (loss differs from the dropout-free one) and
    every LoRA tensor still gets a gradient."""
    from harness.neural.fast.lora_train import LoraFusedDecoder, retriever_loss

    peft = _peft("tiny-qwen3", seed=3)
    proj = torch.nn.Linear(64, 32)
    rows = _rows(6, 3, 30, seed=8)
    dec = LoraFusedDecoder(peft, compile=False)
    peft.eval()
    clean = float(retriever_loss(dec, proj, rows[:3], rows[3:], torch.device("cpu"), tau=0.05))
    peft.train()
    loss = retriever_loss(dec, proj, rows[:3], rows[3:], torch.device("cpu"), tau=0.05)
    loss.backward()
    assert float(loss) != clean
    lora = [p for n, p in peft.named_parameters() if "lora_" in n]
    assert lora and all(p.grad is not None and torch.isfinite(p.grad).all() for p in lora)


def _builds(arch, seed=0):
    """A seeded build for the bench, called once a path; records, at each call, which models of
    earlier calls are still alive (weak references)."""
    import weakref

    from aa_harness_bench.archs import build_model

    refs, alive_at_build = [], []

    def build():
        alive_at_build.append([r() is not None for r in refs])
        model = build_model(arch, "cpu", torch.float32, seed=seed)
        refs.append(weakref.ref(model))
        return model

    return build, refs, alive_at_build


def _reranker_groups():
    return [(_rows(1, 8, 8, seed=10 + i)[0], _rows(13, 8, 8, seed=20 + i)) for i in range(2)]


def test_bench_train_runs_on_cpu(tmp_path):
    from aa_harness_bench.train import bench_train_reranker, bench_train_retriever

    dev = torch.device("cpu")
    r = r_ret = bench_train_retriever(
        _builds("tiny-qwen3")[0], _rows(16, 5, 20, seed=9), dev, authors=4, steps=1, warmup=1, log=lambda *_: None
    )
    assert r["first_step"]["gradients"]["rel_error"] < 1e-5 and r["speedup"] > 0
    assert set(r["projection"]["harness"]["hours"]) == {"1", "4", "8"}
    r = bench_train_reranker(
        _builds("tiny-mistral")[0], _reranker_groups(), dev, steps=1, warmup=1, log=lambda *_: None
    )
    assert r["first_step"]["gradients"]["rel_error"] < 1e-5
    assert r["token_ratio"] == pytest.approx(13 * 16 / (8 + 13 * 8), rel=1e-3)
    from aa_harness_bench.performance import performance_page
    from aa_harness_bench.results import write_result

    facts = {"device_name": "Test Card"}
    write_result("train-retriever", "tiny-qwen3", facts, {"arch": "tiny-qwen3"}, r_ret, tmp_path / "a.json")
    write_result("train-reranker", "tiny-mistral", facts, {"arch": "tiny-mistral"}, r, tmp_path / "b.json")
    page = performance_page(tmp_path)
    assert "| retriever, tiny-qwen3 | naive (padded, ckpt)" in page and "reranker, tiny-mistral" in page
    assert "Retriever training step" in page and "Reranker training step" in page
    # the paper's own hours stand beside the projected epochs
    assert "The paper: 15 h for its 12B retriever" in page and "The paper: 60 h per reranker" in page


@pytest.mark.parametrize("model", ["retriever", "reranker"])
def test_bench_train_runs_one_model_at_a_time_with_the_first_step_of_one_shared_model(model):
    """The bench builds the naive model, takes its first step, times it and drops it before it
    builds the harness's model (a weak reference to the naive one is dead by then); the first
    step it reports is the one the earlier bench computed with both paths on one shared model."""
    from types import SimpleNamespace

    from aa_harness_bench.archs import build_model
    from aa_harness_bench.reference import first_step_check, naive_reranker_loss, naive_retriever_loss, with_lora
    from aa_harness_bench.train import bench_train_reranker, bench_train_retriever, harness_reranker_loss
    from harness.neural.fast.lora_train import LoraFusedDecoder, retriever_loss
    from harness.neural.fast.prefix_train import shared_prefix_score_groups

    cpu = torch.device("cpu")
    arch = "tiny-qwen3" if model == "retriever" else "tiny-mistral"
    build, refs, alive_at_build = _builds(arch)
    rows, groups = _rows(16, 5, 20, seed=9), _reranker_groups()
    if model == "retriever":
        got = bench_train_retriever(build, rows, cpu, authors=4, steps=1, warmup=1, log=lambda *_: None)
    else:
        got = bench_train_reranker(build, groups, cpu, steps=1, warmup=1, log=lambda *_: None)
    assert alive_at_build == [[], [False]]  # two builds; the naive model was gone before the second
    assert all(r() is None for r in refs)
    assert got["one_model_at_a_time"] and got["first_step"]["same_weights"]
    for path in ("naive", "harness"):
        assert "error" not in got[path] and got[path]["path_peak_memory_gib"] is None  # no CUDA peak on the CPU

    # the earlier bench: one model, both paths' first steps on it (eval mode), before any optimiser step
    peft = with_lora(build_model(arch, cpu, torch.float32, seed=0))
    peft.train()
    torch.manual_seed(0)
    if model == "retriever":
        layer = torch.nn.Linear(64, 32, bias=True)
        finish = lambda pooled: layer(pooled.float())  # noqa: E731
        a, b = rows[:4], rows[4:8]
        dec = LoraFusedDecoder(peft, compile=False, checkpoint=True)
        want = first_step_check(
            peft,
            lambda: naive_retriever_loss(peft, finish, a, b, cpu, tau=0.01),
            lambda: retriever_loss(dec, finish, a, b, cpu, tau=0.01),
            extra=list(layer.parameters()),
        )
    else:
        layer = torch.nn.Linear(64, 1, bias=False)
        head = lambda last: layer(last.float())  # noqa: E731
        scorer = SimpleNamespace(backbone=peft, finish=head)
        want = first_step_check(
            peft,
            lambda: naive_reranker_loss(peft, head, groups[:1], cpu),
            lambda: harness_reranker_loss(shared_prefix_score_groups(checkpoint=True), scorer, groups[:1], cpu),
            extra=list(layer.parameters()),
        )
    check = got["first_step"]
    assert check["naive_loss"] == pytest.approx(want["naive_loss"], rel=1e-6)
    assert check["harness_loss"] == pytest.approx(want["harness_loss"], rel=1e-6)
    assert check["loss_rel_error"] < 1e-5 and want["loss_rel_error"] < 1e-5
    g, w = check["gradients"], want["gradients"]
    assert g["tensors"] == w["tensors"] and not g["mismatched_names"]
    assert g["rel_error"] < 1e-5 and g["rel_error_worst_tensor"] < 1e-4
    assert g["rel_error"] == pytest.approx(w["rel_error"], rel=0.5, abs=1e-7)


def test_naive_first_step_recomputes_its_checkpointed_layers_with_dropout_off():
    """The naive first step runs as its timed steps do, Hugging Face's gradient checkpointing on
    (it runs only in train mode; in eval mode the 8B and 12B first steps kept every layer's
    activations), with LoRA dropout off: the eval-mode loss and gradients, each layer run twice."""
    from aa_harness_bench.reference import first_step, naive_retriever_loss

    cpu = torch.device("cpu")
    peft = _peft("tiny-qwen3", seed=6)
    peft.train()
    base = peft.get_base_model()
    base.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    base.config.use_cache = False
    proj = torch.nn.Linear(64, 32)
    rows = _rows(6, 3, 30, seed=15)
    calls, mlp = [], base.layers[0].mlp
    forward = mlp.forward
    mlp.forward = lambda *a, **k: calls.append(1) or forward(*a, **k)  # hooks do not see the recomputation
    loss = lambda: naive_retriever_loss(peft, proj, rows[:3], rows[3:], cpu, tau=0.05)  # noqa: E731
    kept = first_step(peft, loss, list(proj.parameters()), keep_train=True)
    ran_kept, calls[:] = len(calls), []
    evald = first_step(peft, loss, list(proj.parameters()))
    del mlp.forward
    assert (ran_kept, len(calls)) == (2, 1)  # forward + recomputation, against the forward alone
    assert peft.training and all(m.training for m in peft.modules())  # modes restored
    assert kept["loss"] == pytest.approx(evald["loss"], rel=1e-6)
    assert kept["gradients"].keys() == evald["gradients"].keys()
    assert all(g.device.type == "cpu" for g in kept["gradients"].values())
    assert all(
        torch.allclose(kept["gradients"][k], evald["gradients"][k], rtol=1e-5, atol=1e-7) for k in kept["gradients"]
    )


@pytest.mark.parametrize("failing", ["naive build", "harness build", "naive timed steps"])
def test_bench_train_records_a_path_out_of_memory_and_still_runs_the_other(failing, monkeypatch, tmp_path):
    """A CUDA out-of-memory error in one path is that path's record (error, stage, peak memory);
    the other path still runs and is written, and the performance page shows the failure."""
    from aa_harness_bench import train
    from aa_harness_bench.performance import performance_page
    from aa_harness_bench.results import write_result

    build, refs, _ = _builds("tiny-qwen3")
    calls = {"build": 0, "time": 0}

    def failing_build():
        calls["build"] += 1
        if failing == f"{'naive' if calls['build'] == 1 else 'harness'} build":
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (test)")
        return build()

    real_time_steps = train.time_steps

    def failing_time_steps(*a, **k):
        calls["time"] += 1
        if failing == "naive timed steps" and calls["time"] == 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (test)")
        return real_time_steps(*a, **k)

    monkeypatch.setattr(train, "time_steps", failing_time_steps)
    lines = []
    r = train.bench_train_retriever(
        failing_build, _rows(16, 5, 20, seed=9), torch.device("cpu"), authors=4, steps=1, warmup=1, log=lines.append
    )
    bad, good = ("naive", "harness") if failing.startswith("naive") else ("harness", "naive")
    assert r[bad]["error"] == "out of memory" and r[bad]["stage"] == failing.split(" ", 1)[1]
    assert "peak_memory_gib" in r[bad] and r[bad]["batch"] in ("padded", "packed")
    assert "error" not in r[good] and r[good]["documents_per_s"] > 0
    assert r["speedup"] is None and set(r["projection"]) == {good}
    assert any(line.startswith(f"{bad}: out of memory") for line in lines)
    assert all(ref() is None for ref in refs)
    if failing == "naive timed steps":  # its first step was taken, so the check still ran
        assert r["first_step"]["gradients"]["rel_error"] < 1e-5 and r["first_step"]["same_weights"]
    else:
        assert r["first_step"]["compared"] is False
    write_result(
        "train-retriever", "tiny-qwen3", {"device_name": "Test Card"}, {"arch": "tiny-qwen3"}, r, tmp_path / "a.json"
    )
    page = performance_page(tmp_path)
    assert f"| {bad} (" in page and "out of memory in the" in page


@pytest.mark.slow
def test_compiled_layers_match_and_compile_once_for_all_layers():
    """torch.compile (inductor on the CPU here, as on the GPU) computes the same step, and the layers
    share their compiled graphs: no recompilation per layer or length (the LoRA tensors are plain inputs)."""
    from torch._dynamo.utils import counters

    from aa_harness_bench.reference import first_step_check, naive_retriever_loss
    from harness.neural.fast.lora_train import LoraFusedDecoder, retriever_loss

    torch._dynamo.reset()
    counters.clear()
    peft = _peft("tiny-qwen3", seed=4)
    proj = torch.nn.Linear(64, 32)
    rows = _rows(8, 3, 40, seed=11)
    dec = LoraFusedDecoder(peft, compile=True, checkpoint=True)
    check = first_step_check(
        peft,
        lambda: naive_retriever_loss(peft, proj, rows[:4], rows[4:], torch.device("cpu"), tau=0.05),
        lambda: retriever_loss(dec, proj, rows[:4], rows[4:], torch.device("cpu"), tau=0.05),
        extra=list(proj.parameters()),
    )
    assert check["loss_rel_error"] < 1e-5 and check["gradients"]["rel_error"] < 1e-4
    peft.train()
    for seed in (12, 13):  # other lengths, dropout on
        more = _rows(8, 3, 40, seed=seed)
        retriever_loss(dec, proj, more[:4], more[4:], torch.device("cpu"), tau=0.05).backward()
    # the compiled pieces (norms, q/k norm + rotary, residual + norm, SwiGLU, residual) differ only by
    # eval / train and layer 0 (input from the frozen embedding, no grad) / later layers: 8 graphs
    # here, a bound of 10 whatever the depth or lengths
    assert counters["stats"]["unique_graphs"] <= 10, dict(counters["stats"])


def test_training_compile_follows_the_request_else_compiles_big_or_graphed_models_on_cuda_only(monkeypatch):
    from harness.neural.fast import lora_train

    peft = _peft("tiny-qwen3")
    assert lora_train.training_compile(peft, True) is True and lora_train.training_compile(peft, False) is False
    assert lora_train.training_compile(peft, None) is False  # small, and on the CPU
    monkeypatch.setattr(lora_train, "COMPILE_ABOVE", 0)
    assert lora_train.training_compile(peft, None) is False  # big enough now, but not on CUDA
    assert lora_train.training_compile(peft, None, graphed=True) is False  # nor graphed, on the CPU
    # on CUDA (a stand-in model whose one parameter says so): small ones compile only when graphed
    from types import SimpleNamespace

    small = SimpleNamespace(parameters=lambda: iter([SimpleNamespace(device=torch.device("cuda"), numel=lambda: 10)]))
    monkeypatch.setattr(lora_train, "COMPILE_ABOVE", 10**12)
    assert lora_train.training_compile(small, None) is False
    assert lora_train.training_compile(small, None, graphed=True) is True
    assert lora_train.training_compile(small, False, graphed=True) is False  # the request wins
    monkeypatch.setattr(lora_train, "COMPILE_ABOVE", 5)
    assert lora_train.training_compile(small, None) is True
