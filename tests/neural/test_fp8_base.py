"""fp8 swaps exactly the frozen base's projections of a decoder for FP8 products and the fused
paths read them: tiny Qwen3 (and Qwen2, with q/k/v biases) built from configs, CPU, fp32, where
the products compute their reference. The fused paths are compared with the Hugging Face forward
of the same quantized model (its projections one by one through the same FP8 modules).

Rounding to e4m3 is a step function: two paths whose inputs differ by fp32 rounding (another
summation order) can round an element to neighbouring e4m3 values, a whole step apart, which no
fp32 tolerance covers. So the exact comparisons keep the weights FP8 and scale the activations
without rounding them (`smooth_activations`): fp32's tolerances then hold. With the rounding on,
the paths are held to e4m3's half step, 2^-4, relative. FP8 against bf16 is a measurement
(`aa-harness bench encode --fp8`)."""

import gc
import weakref

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def _model(arch="tiny-qwen3", seed=0):
    from aa_harness_bench.archs import build_model

    return build_model(arch, "cpu", torch.float32, seed=seed)


def _tiny_qwen2(seed=0):
    from transformers import AutoModel, Qwen2Config

    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=512,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        attn_implementation="sdpa",
    )
    return AutoModel.from_config(cfg, dtype=torch.float32).eval()


@pytest.fixture
def smooth_activations(monkeypatch):
    """install(): from then on the products scale their inputs per row as FP8 does but do not round
    them (the weights, quantized before, stay e4m3)."""
    from harness.neural.fast import fp8_linear

    def scaled(x):
        x = x.float()
        scale = x.abs().amax(dim=-1, keepdim=True).clamp(min=fp8_linear.AMAX_FLOOR) / fp8_linear.E4M3_MAX
        return x / scale, scale

    return lambda: monkeypatch.setattr(fp8_linear, "quantize_rows", scaled)


def _rel(a, b):
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    return float((torch.linalg.norm(a - b, dim=-1) / torch.linalg.norm(b, dim=-1)).max())


def _rows(n, lo, hi, seed):
    from aa_harness_bench.workload import random_rows

    return random_rows(n, lo, hi, 512, seed)


def test_the_swap_replaces_exactly_the_frozen_projections_under_lora():
    """Under PEFT LoRA: each of the 7 targets' base layer becomes an Fp8Linear, nothing else changes;
    LoRA still trains, nothing else does, and the bf16 (here fp32) weights are dropped."""
    from aa_harness_bench.reference import with_lora
    from harness.neural.fast.fp8_linear import Fp8Linear, quantize_frozen_base

    peft = with_lora(_model())
    before = {name: type(m) for name, m in peft.named_modules()}
    lora_before = {n: p for n, p in peft.named_parameters() if p.requires_grad}
    old = weakref.ref(peft.get_base_model().layers[0].self_attn.q_proj.base_layer.weight)
    assert quantize_frozen_base(peft) == 2 * len(TARGETS)
    after = {name: type(m) for name, m in peft.named_modules()}
    changed = {name for name in before if before[name] is not after.get(name)}
    want = {f"base_model.model.layers.{i}.{part}.{t}.base_layer" for i in range(2) for part, t in _parts()}
    assert changed == want and set(after) == set(before)
    assert all(after[name] is Fp8Linear for name in want)
    trainable = {n: p for n, p in peft.named_parameters() if p.requires_grad}
    assert trainable.keys() == lora_before.keys() and all(trainable[n] is lora_before[n] for n in trainable)
    assert all("lora_" in n for n in trainable)
    assert not any(n.endswith(f"{t}.base_layer.weight") for n, _ in peft.named_parameters() for t in TARGETS)
    gc.collect()
    assert old() is None  # no copy of the unquantized weight stays resident
    assert quantize_frozen_base(peft) == 0  # once only


def _parts():
    return [("self_attn", t) for t in TARGETS[:4]] + [("mlp", t) for t in TARGETS[4:]]


def test_the_swap_on_a_bare_model_keeps_biases_and_refuses_a_training_base():
    from harness.errors import HarnessError
    from harness.neural.fast.fp8_linear import Fp8Linear, quantize_frozen_base

    model = _tiny_qwen2()
    bias = model.layers[0].self_attn.k_proj.bias.detach().clone()
    with pytest.raises(HarnessError, match="weight trains; only a frozen base"):
        quantize_frozen_base(model)  # a bare model's weights require grad until frozen
    model.requires_grad_(False)
    assert quantize_frozen_base(model) == 2 * len(TARGETS)
    k = model.layers[0].self_attn.k_proj
    assert isinstance(k, Fp8Linear) and torch.equal(k.bias_bf16, bias.to(torch.bfloat16))
    assert model.layers[0].self_attn.o_proj.bias_bf16 is None


@pytest.mark.parametrize("build", [_model, _tiny_qwen2], ids=["qwen3", "qwen2"])
@pytest.mark.parametrize("layout", ["packed", "padded"])
def test_fused_decoder_over_an_fp8_base_is_the_models_fp8_forward(build, layout, smooth_activations):
    """Embedding through enable_fast_path(fp8=True) is the Hugging Face forward of the model it
    quantized: to fp32's rounding with the activations unrounded, to e4m3's half step with them
    rounded; and it is not the unquantized model's."""
    from aa_harness_bench.encode import harness_encoder, naive_encode
    from harness.neural.encoder import embed_features
    from harness.neural.fast.fp8_linear import quantize_frozen_base

    model = build()
    rows = _rows(6, 3, 40, seed=1)
    plain = naive_encode(model, rows, torch.device("cpu"))
    model.requires_grad_(False)
    enc = harness_encoder(model, layout, fp8=True)
    assert enc.path == layout
    fused = embed_features(enc, rows, torch.device("cpu"), amp=False)
    hf = naive_encode(enc.backbone, rows, torch.device("cpu"))  # its projections are the FP8 modules now
    assert _rel(fused, hf) < 2.0**-4 and _rel(fused, plain) > 1e-4
    smooth = build()
    smooth.requires_grad_(False)
    quantize_frozen_base(smooth)
    smooth_activations()
    enc = harness_encoder(smooth, layout, fp8=True)  # quantized already: the swap finds nothing left
    fused = embed_features(enc, rows, torch.device("cpu"), amp=False)
    assert _rel(fused, naive_encode(enc.backbone, rows, torch.device("cpu"))) < 1e-5


def test_fp8_is_refused_where_the_fused_decoder_cannot_run(tiny_bert_dir):
    from transformers import AutoModel

    from aa_harness_bench.encode import harness_encoder
    from harness.errors import HarnessError
    from harness.neural.encoder import TokenEncoder
    from harness.neural.fast.enable import enable_fast_path

    with pytest.raises(HarnessError, match="fused decoder only") as err:
        harness_encoder(_model(), "aa_causal", fp8=True)
    assert "\n" not in str(err.value)
    enc = TokenEncoder(AutoModel.from_pretrained(tiny_bert_dir), None, pad_id=0)
    with pytest.raises(HarnessError, match="fused decoder only"):
        enable_fast_path(enc, fp8=True)


@pytest.mark.parametrize("checkpoint", [False, True])
@pytest.mark.parametrize("rounded", [False, True], ids=["scaled", "rounded"])
def test_fp8_lora_step_matches_peft_over_the_same_fp8_base(checkpoint, rounded, smooth_activations):
    """The fused LoRA step over an FP8 base: the loss and every LoRA gradient of PEFT's forward over
    the same quantized model (its LoRA layers' base layers the FP8 modules): fp32's tolerances with
    the activations unrounded, e4m3's half step with them rounded."""
    from aa_harness_bench.reference import first_step_check, naive_retriever_loss, with_lora
    from harness.neural.fast.fp8_linear import quantize_frozen_base
    from harness.neural.fast.lora_train import LoraFusedDecoder, retriever_loss

    peft = with_lora(_model(seed=2))
    quantize_frozen_base(peft)
    if not rounded:
        smooth_activations()
    proj = torch.nn.Linear(64, 32)
    rows = _rows(8, 3, 40, seed=3)
    a, b = rows[:4], rows[4:]
    dec = LoraFusedDecoder(peft, compile=False, checkpoint=checkpoint)
    check = first_step_check(
        peft,
        lambda: naive_retriever_loss(peft, proj, a, b, torch.device("cpu"), tau=0.05),
        lambda: retriever_loss(dec, proj, a, b, torch.device("cpu"), tau=0.05),
        extra=list(proj.parameters()),
    )
    g = check["gradients"]
    assert not g["mismatched_names"] and g["tensors"] == 2 * len(TARGETS) * 2 + 2
    if rounded:
        assert check["loss_rel_error"] < 2.0**-4 and g["rel_error"] < 2.0**-4
    else:
        assert check["loss_rel_error"] < 1e-5
        assert g["rel_error"] < 1e-5 and g["rel_error_worst_tensor"] < 1e-4


def test_the_training_hooks_quantize_once_and_never_fall_back_with_fp8(monkeypatch):
    """fp8 through the trainers' hooks: the base is quantized at the first call (on a device that
    runs FP8 products; the CPU is let through here to run the reference) and the step runs; where the
    fused step cannot run (under DDP) it is one line, though a fallback is given."""
    from types import SimpleNamespace

    from aa_harness_bench.reference import with_lora
    from harness.errors import HarnessError
    from harness.neural.fast import fp8_linear
    from harness.neural.fast.lora_train import fused_embed_batch
    from harness.neural.fast.prefix_train import shared_prefix_score_groups

    rows = _rows(4, 3, 20, seed=4)
    plain = SimpleNamespace(backbone=with_lora(_model()), pooling="mean", finish=lambda v: v)
    with pytest.raises(HarnessError, match="fp8=true") as err:  # the CPU refuses FP8 products
        fused_embed_batch(fp8=True, compile=False)(plain, plain, rows, torch.device("cpu"))
    assert "\n" not in str(err.value)
    monkeypatch.setattr(fp8_linear, "fp8_unsupported", lambda device: None)
    hook = fused_embed_batch(fp8=True, compile=False, fallback=lambda *a: pytest.fail("fell back"))
    out = hook(plain, plain, rows, torch.device("cpu"))
    assert out.shape == (4, 64) and out.requires_grad
    assert isinstance(plain.backbone.get_base_model().layers[1].mlp.down_proj.base_layer, fp8_linear.Fp8Linear)

    class FakeDDP(torch.nn.parallel.DistributedDataParallel):
        def __init__(self):  # never initialised: only its type is read
            pass

    scorer = SimpleNamespace(backbone=with_lora(_model()), finish=lambda h: h[:, :1])
    groups = [(rows[0], rows[1:3])]
    with pytest.raises(HarnessError, match="fp8=true: the shared-prefix step cannot run") as err:
        shared_prefix_score_groups(fp8=True, compile=False, fallback=lambda *a: pytest.fail("fell back"))(
            FakeDDP(), scorer, groups, torch.device("cpu")
        )
    assert "\n" not in str(err.value) and "drop --set fp8=true" in str(err.value)
    scores = shared_prefix_score_groups(fp8=True, compile=False)(scorer, scorer, groups, torch.device("cpu"))
    assert [s.shape for s in scores] == [(2,)]
