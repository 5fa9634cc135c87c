"""A GGUF backbone is dequantized once: later loads read the cached dense copy (harness.neural.hf)."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


@pytest.fixture
def fake_gguf(tiny_qwen3_dir, tmp_path, monkeypatch, isolated_cache):
    """A folder holding one .gguf file; loading it with gguf_file= yields the tiny Qwen3, marked
    quantized and refusing save_pretrained as transformers does for GGUF models."""
    folder = tmp_path / "model-gguf"
    folder.mkdir()
    (folder / "model.gguf").write_bytes(b"GGUF fake weights")
    real_model, real_tok = transformers.AutoModel.from_pretrained, transformers.AutoTokenizer.from_pretrained
    real_lm = transformers.AutoModelForCausalLM.from_pretrained
    calls = []

    def model_from_pretrained(path, *args, gguf_file=None, **kwargs):
        calls.append(("model", gguf_file))
        assert gguf_file is None, "a GGUF file is read through the causal LM (a bare AutoModel leaves it unloaded)"
        return real_model(path, *args, **kwargs)

    def lm_from_pretrained(path, *args, gguf_file=None, **kwargs):
        calls.append(("model", gguf_file))
        if gguf_file is None:
            return real_lm(path, *args, **kwargs)
        model = real_lm(tiny_qwen3_dir, *args, **kwargs)
        model.config.quantization_config = {"quant_method": "gguf"}

        def refuse(*a, **k):
            raise ValueError("The model is quantized with gguf and is not serializable")

        model.save_pretrained = refuse
        return model

    def tok_from_pretrained(path, *args, gguf_file=None, **kwargs):
        calls.append(("tokenizer", gguf_file))
        return real_tok(tiny_qwen3_dir if gguf_file else path, *args, **kwargs)

    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", model_from_pretrained)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", lm_from_pretrained)
    # the bytes are no GGUF file; the check against a real one is tests/neural/test_gguf_load.py's
    monkeypatch.setattr("harness.neural.hf.check_loaded_from_gguf", lambda model, file: None)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", tok_from_pretrained)
    return folder, calls


def test_second_load_reads_the_dequantized_copy(fake_gguf, isolated_cache):
    from harness.neural.hf import dequantized_folder, load_backbone

    folder, calls = fake_gguf
    first, tok1, path1 = load_backbone(str(folder))
    cached = dequantized_folder(str(folder), "model.gguf", torch.float32)
    assert cached.is_relative_to(isolated_cache) and (cached / "model.safetensors").is_file()
    assert not list(cached.parent.glob("*.partial"))
    calls.clear()
    second, tok2, path2 = load_backbone(str(folder))
    assert all(gguf is None for _, gguf in calls)  # no GGUF read the second time
    assert path1 == path2 == str(folder)  # the identity stays the GGUF folder
    a, b = first.state_dict(), second.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert "quantization_config" not in second.config.to_dict()
    assert tok1("a b c")["input_ids"] == tok2("a b c")["input_ids"] and tok2.pad_token_id is not None


def test_cache_is_keyed_by_the_gguf_bytes_and_dtype(fake_gguf):
    from harness.neural.hf import dequantized_folder

    folder, _ = fake_gguf
    before = dequantized_folder(str(folder), "model.gguf", torch.float32)
    assert before != dequantized_folder(str(folder), "model.gguf", torch.bfloat16)
    (folder / "model.gguf").write_bytes(b"GGUF other weights")
    assert dequantized_folder(str(folder), "model.gguf", torch.float32) != before
