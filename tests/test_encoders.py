"""Backbone text profiles and the offline TextEncoder with its content-hash cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agentbalance.catalog import Catalog
from agentbalance.encoders import TextEncoder, backbone_profiles
from agentbalance.errors import AgentBalanceError


def test_profiles_name_benchmarks_prices_and_type() -> None:
    catalog = Catalog.load()
    thinking = next(b for b in catalog if b.reasoning)
    performance, price, model_type = backbone_profiles(thinking)
    assert "MMLU" in performance and "MATH" in performance and "HumanEval" in performance
    assert f"{thinking.price_out:g}" in price and "per million output tokens" in price
    assert "reasoning" in model_type and thinking.family in model_type
    plain = next(b for b in catalog if not b.reasoning)
    assert "non-reasoning" in backbone_profiles(plain)[2]


@pytest.fixture(scope="module")
def offline_encoder(tmp_path_factory: pytest.TempPathFactory) -> TextEncoder:
    patch = pytest.MonkeyPatch()
    patch.setenv("HF_HUB_OFFLINE", "1")
    patch.setenv("TRANSFORMERS_OFFLINE", "1")
    encoder = TextEncoder(cache_dir=tmp_path_factory.mktemp("embeddings"))
    encoder.encode(["warm up"])
    patch.undo()
    return encoder


def test_encoder_loads_offline_and_gives_normalised_meaningful_embeddings(offline_encoder: TextEncoder) -> None:
    vectors = offline_encoder.encode(
        ["Solve for x: 2x + 3 = 7.", "Find x such that 2x + 3 equals 7.", "Who painted the Mona Lisa?"]
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_profile_embeddings_have_three_vectors_per_backbone(offline_encoder: TextEncoder) -> None:
    catalog = Catalog.load()
    profiles = offline_encoder.encode_profiles(catalog.backbones[:4])
    assert profiles.shape == (4, 3, 384)


def test_disk_cache_serves_a_new_encoder_without_loading_the_model(
    offline_encoder: TextEncoder, tmp_path: Path
) -> None:
    texts = ["What is the capital of France?", "def add(a, b):"]
    first = TextEncoder(cache_dir=tmp_path)
    first._model = offline_encoder._load()  # share the loaded model to keep the test fast
    expected = first.encode(texts)

    second = TextEncoder(cache_dir=tmp_path)

    def refuse_to_load() -> None:
        raise AssertionError("the model was loaded although every text is cached")

    second._load = refuse_to_load  # type: ignore[method-assign]
    assert np.array_equal(second.encode(texts), expected)
    assert np.array_equal(second.encode(texts[::-1]), expected[::-1])


@pytest.mark.slow
def test_an_embedding_does_not_depend_on_the_batch_it_was_computed_in(offline_encoder: TextEncoder) -> None:
    """Which texts a cache already holds decides what is encoded together; the vectors, and so every
    result trained on them, must not depend on it (in float32 they did, in the last bits, for ~10% of
    texts: padding to a batch's longest text changes the rounding)."""
    # 30 texts of 1 to 9 clauses: in float32, 6 of the first 12 alone and 4 of the staggered 30 differed
    texts = [f"Question {i}: what is {i} * {i + 7}{' and why' * (i % 9)}?" for i in range(30)]
    model = offline_encoder._load()

    def fresh() -> TextEncoder:
        encoder = TextEncoder(use_disk_cache=False, batch_size=16)
        encoder._model = model  # share the loaded model, not its cache
        return encoder

    together = fresh().encode(texts)
    alone = np.stack([fresh().encode([text])[0] for text in texts[:12]])
    staggered = fresh()
    staggered.encode(texts[1::3])  # a cache holding a third of them: the rest are batched differently
    assert np.array_equal(alone, together[:12])
    assert np.array_equal(staggered.encode(texts), together)


def test_a_memory_limit_keeps_the_newest_embeddings_and_every_answer_whole(offline_encoder: TextEncoder) -> None:
    texts = ["What is 2 + 2?", "Who wrote Hamlet?", "def add(a, b):", "Name a prime."]
    bounded = TextEncoder(use_disk_cache=False, memory_limit=2)
    bounded._model = offline_encoder._load()  # share the loaded model to keep the test fast
    assert np.array_equal(bounded.encode(texts), offline_encoder.encode(texts))  # a batch over the limit, whole
    assert len(bounded._memory) == 2 and set(bounded._memory) == {bounded.key(t) for t in texts[2:]}
    with pytest.raises(AgentBalanceError, match="memory_limit"):
        TextEncoder(use_disk_cache=False, memory_limit=0)


def test_a_text_longer_than_the_window_is_told_apart_by_its_end(offline_encoder: TextEncoder) -> None:
    """Few-shot prompts share their first window (the examples) and differ in the question, last: cut at
    the window's end they were one vector, and the controller could not tell the queries apart. A short
    text is embedded exactly as the model embeds it."""
    model = offline_encoder._load()
    examples = " ".join(f"Example {i}: the sky is blue, so the answer is (A)." for i in range(60))
    assert len(model.tokenizer(examples)["input_ids"]) > model.max_seq_length
    questions = [f"{examples} Question: {q}" for q in ("what is 2 + 2?", "who wrote Hamlet?", "where is Peru?")]
    encoder = TextEncoder(use_disk_cache=False)
    encoder._model = model
    vectors = encoder.encode(questions)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert max(float(vectors[i] @ vectors[j]) for i in range(3) for j in range(i)) < 0.999
    first_windows = model.encode(questions, normalize_embeddings=True)
    assert np.allclose(first_windows[0], first_windows[1], atol=1e-6), "the model alone sees only the examples"
    assert model.tokenizer.truncation_side == "right"
    short = "What is the capital of France?"
    assert np.allclose(encoder.encode([short])[0], model.encode([short], normalize_embeddings=True)[0], atol=1e-6)
