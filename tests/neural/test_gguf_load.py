"""A GGUF backbone really carries the file's weights (harness.neural.hf.load_backbone).

Transformers 5.x loads a GGUF file through `AutoModel` (the bare base model) without a word of
error but with every weight left at its random initialisation; `AutoModelForCausalLM` loads them.
tests/neural/test_gguf_cache.py mocks `from_pretrained` and cannot see this, so here a tiny Qwen2 is
written as a genuine GGUF file (llama.cpp's tensor names and metadata, F32) and the backbone
`load_backbone` returns, first from the file and then from its dequantized cache, must hold
exactly the weights written.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
gguf = pytest.importorskip("gguf")

# llama.cpp's name for each per-layer module of a Qwen2 (gguf's TensorNameMap, which transformers reverses)
LAYER_NAMES = {
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "input_layernorm": "attn_norm",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}
EOS = "<|endoftext|>"


def _gguf_name(hf_name: str) -> str:
    top = {
        "model.embed_tokens.weight": "token_embd.weight",
        "model.norm.weight": "output_norm.weight",
        "lm_head.weight": "output.weight",
    }
    if hf_name in top:
        return top[hf_name]
    _, _, layer, rest = hf_name.split(".", 3)  # model.layers.N.<module>.<weight|bias>
    module, kind = rest.rsplit(".", 1)
    return f"blk.{layer}.{LAYER_NAMES[module]}.{kind}"


def _byte_level_vocab():
    """A gpt2-style byte-level BPE: the 256 byte symbols, a few merges, one control token."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    merges = ["Ġ t", "h e", "Ġt he", "a n"]
    tokens = [bytes_to_unicode()[b] for b in range(256)] + [m.replace(" ", "") for m in merges] + [EOS]
    token_types = [1] * (len(tokens) - 1) + [3]  # 1 NORMAL, 3 CONTROL
    return tokens, token_types, merges


def write_tiny_qwen2_gguf(path):
    """A random 2-layer Qwen2 written to `path` as GGUF; returns the source Qwen2ForCausalLM."""
    tokens, token_types, merges = _byte_level_vocab()
    cfg = transformers.Qwen2Config(
        vocab_size=len(tokens),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
        rope_theta=10000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    source = transformers.Qwen2ForCausalLM(cfg).eval()
    with torch.no_grad():  # norms start at one and biases at zero: a fresh init would match them by chance
        for name, param in source.named_parameters():
            if "norm" in name or name.endswith(".bias"):
                param.normal_()

    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_name("tiny-qwen2")
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_head_count(cfg.num_attention_heads)
    writer.add_head_count_kv(cfg.num_key_value_heads)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(token_types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokens.index(EOS))
    writer.add_eos_token_id(tokens.index(EOS))
    # Qwen2 has no tensor processor in transformers, so q/k go unpermuted; the writer reverses
    # each numpy shape into GGUF's order and the reader reverses it back.
    for name, tensor in source.state_dict().items():
        writer.add_tensor(_gguf_name(name), tensor.detach().numpy())
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return source


def _not_loaded(model, expected: dict) -> list[str]:
    got = model.state_dict()
    assert got.keys() == expected.keys()  # the bare base model: no LM head
    # F32 round-trips bit for bit, so any difference means a weight did not come from the file
    return [k for k in expected if not torch.equal(got[k], expected[k])]


def test_gguf_backbone_holds_the_files_weights(tmp_path, isolated_cache):
    from harness.neural.hf import dequantized_folder, load_backbone

    folder = tmp_path / "tiny-qwen2-gguf"
    folder.mkdir()
    source = write_tiny_qwen2_gguf(folder / "model.gguf")
    expected = source.model.state_dict()

    first, tok, path = load_backbone(str(folder), torch.float32)
    assert path == str(folder)
    wrong = _not_loaded(first, expected)
    assert not wrong, f"weights not the file's (left at their initialisation?): {wrong}"
    assert tok.eos_token == EOS and tok.pad_token_id is not None

    # the second load reads the dense copy the first one kept, not the GGUF file
    cached = dequantized_folder(str(folder), "model.gguf", torch.float32)
    assert cached.is_relative_to(isolated_cache) and (cached / "config.json").is_file()
    second, _, _ = load_backbone(str(folder), torch.float32)
    wrong = _not_loaded(second, expected)
    assert not wrong, f"the cached copy's weights are not the file's: {wrong}"


def test_the_load_check_rejects_weights_a_bare_automodel_left_unloaded(tmp_path):
    """The check `load_backbone` makes against the file fails a model whose layers were not
    loaded (what a bare AutoModel gives here), not only one with nothing loaded."""
    from harness.errors import HarnessError
    from harness.neural.hf import check_loaded_from_gguf

    folder = tmp_path / "tiny-qwen2-gguf"
    folder.mkdir()
    source = write_tiny_qwen2_gguf(folder / "model.gguf")
    check_loaded_from_gguf(source.model, folder / "model.gguf")  # the true weights pass
    bare = transformers.AutoModel.from_pretrained(str(folder), gguf_file="model.gguf", dtype=torch.float32)
    if not _not_loaded(bare, source.model.state_dict()):
        pytest.skip("this transformers loads GGUF into a bare AutoModel: nothing to reject")
    with pytest.raises(HarnessError, match="not the file's"):
        check_loaded_from_gguf(bare, folder / "model.gguf")


def test_a_dequantized_copy_being_written_by_another_process_is_left_alone(tmp_path, isolated_cache):
    """Two steps side by side load the same GGUF file: one's half-written copy is not removed
    under it by the other, which keeps its own."""
    from harness.neural.hf import dequantized_folder, load_backbone

    folder = tmp_path / "tiny-qwen2-gguf"
    folder.mkdir()
    write_tiny_qwen2_gguf(folder / "model.gguf")
    cached = dequantized_folder(str(folder), "model.gguf", torch.float32)
    cached.parent.mkdir(parents=True, exist_ok=True)
    other = cached.with_name(cached.name + ".partial-1-other")
    other.mkdir()
    (other / "model.safetensors").write_bytes(b"half written")
    load_backbone(str(folder), torch.float32)
    assert (other / "model.safetensors").read_bytes() == b"half written"
    assert (cached / "config.json").is_file()
