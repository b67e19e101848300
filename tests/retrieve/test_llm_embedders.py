"""Decoder LLM embedders: the checkpoint's own prompts, instruction templates, last-token pooling with left padding
(padded and packed batches), the end-of-sequence token, truncation that keeps the instruction and the question,
and the bad inputs. References: sentence-transformers' own encode_query / encode_document / similarity, and a
plain transformers forward pass."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from cli_run import run_cli
from sentence_transformers import SentenceTransformer
from tiny_model import DECODER_QUERY_PROMPT, make_tiny_decoder_embedder

from mtrbench.data import load_task, resolve_card
from mtrbench.encode.engine import EncodingEngine, EngineOptions
from mtrbench.encode.towers import SENTENCE_TRANSFORMERS, SentenceTransformerTower, TowerSpec, append_eos_token
from mtrbench.formats.run import read_run
from mtrbench.infra.errors import UserInputError
from mtrbench.models.spec import ModelSpec
from mtrbench.retrieve.dense import DenseRetriever
from mtrbench.retrieve.options import LoadingOptions, ScaleOptions
from mtrbench.serialize.history import HISTORY_FIRST, QueryFormat, Serialized
from mtrbench.serialize.instructions import (
    DEFAULT_TASK,
    InstructionRequest,
    checkpoint_doc_prompt,
    checkpoint_query_prompt,
    choose_prompts,
)
from mtrbench.serialize.truncate import Truncator

# sentence-transformers 6 gives every loaded model an empty "document" prompt unless it has one, so a checkpoint's
# "passage" prompt is never the one encode_document picks: this one is "document"
MISTRAL_PROMPTS = {"query": "Represent the question: ", "document": "Passage: "}
PROBES = ["a", "three words here", "a longer text about rivers, bridges and the towns along them " * 3, ""]


@pytest.fixture(scope="session")
def decoders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("decoders")
    return {
        "qwen3": make_tiny_decoder_embedder(root / "qwen3", "qwen3"),
        "mistral": make_tiny_decoder_embedder(root / "mistral", "mistral", prompts=MISTRAL_PROMPTS, seed=1),
    }


def _result(out: Path) -> dict:
    [path] = [p for p in out.rglob("history=rewrite/*.json") if p.name != "model_meta.json"]
    return json.loads(path.read_text()) | {"_path": str(path)}


@pytest.mark.parametrize("arch", ["qwen3", "mistral"])
def test_eval_scores_equal_sentence_transformers(decoders, arch, tmp_path):
    folder = decoders[arch]
    out = tmp_path / "results"
    args = ["eval", "--model", str(folder), "--history", "rewrite", "--output-dir", str(out)]
    proc = run_cli(*args, "--cache-dir", str(tmp_path / "cache"), "--quiet")
    assert proc.returncode == 0, proc.stderr
    result = _result(out)
    settings = result["mtrbench"]["settings"]["retriever"]
    # the checkpoint's own prompts, chosen as encode_query / encode_document choose them
    expected_doc = "" if arch == "qwen3" else MISTRAL_PROMPTS["document"]
    expected_query = DECODER_QUERY_PROMPT if arch == "qwen3" else MISTRAL_PROMPTS["query"]
    assert (settings["query_prompt"], settings["doc_prompt"]) == (expected_query, expected_doc)

    task = load_task(resolve_card("mtrbench-sample"), split="test")
    model = SentenceTransformer(str(folder), device="cpu")
    corpus = task.corpus
    docs = model.encode_document(
        [corpus.document_text(i) for i in range(len(corpus))], convert_to_tensor=True, batch_size=64
    )
    queries = model.encode_query([q.gold_rewrite for q in task.queries], convert_to_tensor=True, batch_size=64)
    similarity = model.similarity(queries, docs)
    row = {q.qid: i for i, q in enumerate(task.queries)}
    column = {doc_id: j for j, doc_id in enumerate(corpus.ids)}
    run = read_run(Path(result["_path"]).with_name(result["mtrbench"]["files"]["run"]))
    assert set(run) == set(row)
    compared = 0
    for qid, scored in run.items():
        assert len(scored) == 100
        for doc_id, score in scored.items():
            assert score == pytest.approx(float(similarity[row[qid], column[doc_id]]), abs=1e-5)
            compared += 1
        # the run holds the 100 best by sentence-transformers' similarity (ties aside)
        assert min(scored.values()) >= float(similarity[row[qid]].topk(100).values[-1]) - 1e-5
    assert compared == 100 * len(row)


def _hand_last_token(folder: Path, texts: list[str], prompt: str) -> torch.Tensor:
    """One text at a time, no padding at all: the hidden state of the last token, L2-normalized."""
    from transformers import AutoModel, AutoTokenizer

    raw = folder.parent / f"{folder.name}-decoder"
    tokenizer, model = AutoTokenizer.from_pretrained(raw), AutoModel.from_pretrained(raw).eval()
    vectors = []
    with torch.inference_mode():
        for text in texts:
            ids = tokenizer(prompt + text, return_tensors="pt", truncation=True, max_length=64)["input_ids"]
            assert int(ids[0, -1]) == tokenizer.eos_token_id
            vectors.append(model(input_ids=ids).last_hidden_state[0, -1])
    return F.normalize(torch.stack(vectors), dim=-1)


@pytest.mark.parametrize("arch", ["qwen3", "mistral"])
def test_left_padding_and_packed_batches_pool_the_last_real_token(decoders, arch):
    folder = decoders[arch]
    expected = _hand_last_token(folder, PROBES, DECODER_QUERY_PROMPT)
    model = SentenceTransformer(str(folder), device="cpu")
    assert model.tokenizer.padding_side == "left"
    tower = SentenceTransformerTower(model, TowerSpec(SENTENCE_TRANSFORMERS, str(folder)))
    for unpad in ("off", "on"):
        engine = EncodingEngine(tower, EngineOptions(unpad=unpad))
        # packed: causal attention restarting per sequence; a non-causal kernel fails the self-check and pads
        assert engine.packed is (unpad == "on")
        ours = engine.encode(PROBES, DECODER_QUERY_PROMPT, normalize=False)
        torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-4)


def test_sliding_window_models_pack_only_within_the_window(decoders):
    model = SentenceTransformer(str(decoders["mistral"]), device="cpu")
    model[0].auto_model.config.sliding_window = 8  # Mistral's attention reads it on every call
    spec = TowerSpec(SENTENCE_TRANSFORMERS, "probe")
    assert not EncodingEngine(SentenceTransformerTower(model, spec), EngineOptions(unpad="on")).packed
    model.max_seq_length = 8  # no sequence longer than the window: packing is exact again
    engine = EncodingEngine(SentenceTransformerTower(model, spec), EngineOptions(unpad="on"))
    assert engine.packed
    expected = model.encode_query(PROBES, convert_to_tensor=True)
    torch.testing.assert_close(engine.encode(PROBES, model.prompts["query"]), expected, atol=1e-5, rtol=1e-4)


def test_append_eos_token_ends_every_text_with_it(decoders):
    from tokenizers import processors

    model = SentenceTransformer(str(decoders["qwen3"]), device="cpu")
    tokenizer = model.tokenizer
    cls = tokenizer.cls_token_id
    # a tokenizer.json that adds only the beginning token, as e5-mistral's under transformers 5
    tokenizer.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A", special_tokens=[("[CLS]", cls)]
    )
    assert tokenizer("three words here")["input_ids"][-1] != tokenizer.eos_token_id
    append_eos_token(tokenizer, "probe")
    model.max_seq_length = 8
    tower = SentenceTransformerTower(model, TowerSpec(SENTENCE_TRANSFORMERS, "probe", append_eos=True))
    short, long = tower.tokenize(["three words here", "word " * 40])
    words = tokenizer("three words here", add_special_tokens=False)["input_ids"]
    assert short == [cls, *words, tokenizer.eos_token_id]
    assert len(long) == 8 and long[0] == cls and long[-1] == tokenizer.eos_token_id
    assert tower.signature()["pipeline"][0] == {"module": "AppendEos"}


def test_left_truncation_keeps_the_instruction_and_the_question(decoders):
    model = SentenceTransformer(str(decoders["qwen3"]), device="cpu")
    prompt = "Instruct: " + DEFAULT_TASK + "\nQuery: "
    question = "User: which bridge over the river was rebuilt after the flood of the old town"
    history = tuple(
        f"{'User' if i % 2 else 'Agent'}: turn {i} talks about mills and weirs at length" for i in range(40)
    )
    serialized = Serialized(history, question, QueryFormat(order=HISTORY_FIRST), question=question)
    limit = model.max_seq_length  # what the retriever hands the truncator (and what the encoder cuts at)
    truncator = Truncator(model.tokenizer, limit, prompt=prompt, side="left")
    text = truncator(serialized)
    assert truncator.stats.truncated == 1 and truncator.stats.question_cut == 0
    assert text.endswith(question) and len(text) < len(serialized.text())
    ids = model.preprocess([text], prompt=prompt)["input_ids"][0].tolist()
    assert len(ids) <= limit and ids[-1] == model.tokenizer.eos_token_id  # nothing cut by the encoder
    decoded = model.tokenizer.decode(ids, skip_special_tokens=True)
    assert decoded.startswith(model.tokenizer.decode(model.tokenizer(prompt, add_special_tokens=False)["input_ids"]))
    assert decoded.endswith(model.tokenizer.decode(model.tokenizer(question, add_special_tokens=False)["input_ids"]))


@pytest.mark.parametrize(
    ("prompts", "default"),
    [
        ({"query": "q: ", "document": "d: ", "passage": "p: "}, None),
        ({"query": "q: ", "passage": "p: ", "corpus": "c: "}, None),
        ({"corpus": "c: ", "other": "o: "}, "other"),
        ({"s2p_query": "s: "}, "s2p_query"),
        ({"s2p_query": "s: "}, None),
    ],
)
def test_checkpoint_prompts_follow_encode_query_and_encode_document(decoders, prompts, default):
    model = SentenceTransformer(str(decoders["qwen3"]), device="cpu", prompts=prompts, default_prompt_name=default)
    texts = PROBES[:3]
    for ours, reference in (
        (checkpoint_query_prompt(model.prompts, model.default_prompt_name), model.encode_query),
        (checkpoint_doc_prompt(model.prompts, model.default_prompt_name), model.encode_document),
    ):
        expected = reference(texts, convert_to_tensor=True)
        torch.testing.assert_close(model.encode(texts, prompt=ours, convert_to_tensor=True), expected)


def test_instruction_template_precedence():
    checkpoint = {"query": "web search: ", "document": "doc: "}

    def choose(alias_query="", template="", request=None):
        return choose_prompts(alias_query, "", template, request or InstructionRequest(), checkpoint, None, "m")

    assert (choose().query, choose().doc, choose().query_source) == ("web search: ", "doc: ", "checkpoint")
    filled = choose(template="Instruct: {task}\nQuery: ")
    assert filled.query == f"Instruct: {DEFAULT_TASK}\nQuery: " and filled.doc == "doc: "
    assert filled.recorded() == {"instruction_template": "Instruct: {task}\nQuery: ", "instruction": DEFAULT_TASK}
    asked = choose(template="T {task} {x}", request=InstructionRequest("find it"))
    assert asked.query == "T find it {x}"  # other braces stay as written
    flag = choose(template="alias {task}", request=InstructionRequest("x", "flag {task}: "))
    assert flag.query == "flag x: "
    assert choose(alias_query="mine: ", template="alias {task}").query == "mine: "
    assert choose().recorded() == {}
    with pytest.raises(UserInputError, match="has no \\{task\\} placeholder"):
        choose(template="Instruct: retrieve\nQuery: ")
    with pytest.raises(UserInputError, match="has none"):
        choose(request=InstructionRequest("x"))


def test_unused_checkpoint_prompts_warn(decoders, caplog):
    model = SentenceTransformer(str(decoders["qwen3"]), device="cpu", prompts={"s2p_query": "s: "})
    model.prompts = {"s2p_query": "s: "}
    with caplog.at_level(logging.WARNING, logger="mtrbench.retrieve.dense"):
        retriever = DenseRetriever.from_sentence_transformer(
            model, "probe", None, LoadingOptions(device="cpu", use_cache=False), ScaleOptions()
        )
    assert (retriever.query_prompt, retriever.doc_prompt) == ("", "")
    assert any("'s2p_query'" in r.getMessage() and "evaluated with none" in r.getMessage() for r in caplog.records)
    spec = ModelSpec("probe", "dense", "probe", query_prompt_name="s2p_query")
    retriever.spec = spec
    caplog.clear()
    retriever._adopt_prompts(model, LoadingOptions())
    assert retriever.query_prompt == "s: " and not caplog.records


def _one_error_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert lines[-1].startswith("error: ") and "Traceback" not in proc.stderr
    return lines[-1]


def test_bad_inputs_end_in_one_error_line(decoders, tmp_path):
    folder = str(decoders["qwen3"])
    common = ["--history", "rewrite", "--output-dir", str(tmp_path / "r"), "--no-cache", "--quiet"]
    line = _one_error_line(
        run_cli("eval", "--model", folder, "--instruction-template", "Instruct: x\\nQuery: ", *common)
    )
    assert "{task}" in line and "--instruction-template" in line
    line = _one_error_line(run_cli("eval", "--model", folder, "--max-length", "513", *common))
    assert "--max-length 513 exceeds the 512 positions" in line
    remote = tmp_path / "remote"
    shutil.copytree(folder, remote)
    config = json.loads((remote / "config.json").read_text())
    config["auto_map"] = {"AutoModel": "modeling_custom.CustomModel"}
    (remote / "config.json").write_text(json.dumps(config))
    line = _one_error_line(run_cli("eval", "--model", str(remote), *common))
    assert "--trust-remote-code" in line and "auto_map" in line


def test_task_card_instruction_fills_the_template_unless_the_flag_is_given(tmp_path):
    import yaml

    from mtrbench.pipeline.card_instruction import with_card_instruction as _with_card_instruction
    from mtrbench.retrieve import RetrieverOptions, resolve

    card = resolve_card("mtrbench-sample").to_dict()
    assert "instruction" not in card  # cards without one read as before the field existed
    card |= {"name": "sample-with-instruction", "instruction": "Find what the traveller asks last"}
    path = tmp_path / "card.yaml"
    path.write_text(yaml.safe_dump(card))
    templated = resolve(ModelSpec("t", "dense", "probe", instruction_template="I: {task}\nQ: "))
    plain = resolve(ModelSpec("p", "dense", "probe"))
    assert _with_card_instruction(RetrieverOptions(), templated, str(path)).loading.instruction == card["instruction"]
    flag = RetrieverOptions.of(instruction="from the flag")
    assert _with_card_instruction(flag, templated, str(path)) == flag
    assert _with_card_instruction(RetrieverOptions(), plain, str(path)) == RetrieverOptions()  # no template
    with_template = RetrieverOptions.of(instruction_template="T {task}")
    assert _with_card_instruction(with_template, plain, str(path)).loading.instruction == card["instruction"]
    assert _with_card_instruction(RetrieverOptions(), templated, "mtrbench-sample") == RetrieverOptions()


def test_evaluate_fills_the_template_with_each_cards_instruction(decoders, tmp_path):
    """mtrbench.evaluate applies a card's instruction as `eval` does (it used to apply it on the command line
    only): the recorded query prompt is the template filled with it; a card without one gets the default."""
    import yaml

    import mtrbench
    from mtrbench.serialize.instructions import DEFAULT_TASK

    sample = resolve_card("mtrbench-sample")
    card = sample.to_dict()
    card |= {"name": "sample-with-instruction", "instruction": "Find what the traveller asks last"}
    card["source"] = {**card["source"], "path": str(sample.local_path())}  # the sample's data, from a card elsewhere
    path = tmp_path / "card.yaml"
    path.write_text(yaml.safe_dump(card))
    results = mtrbench.evaluate(
        str(decoders["qwen3"]),
        [str(path), "mtrbench-sample"],
        history="rewrite",
        output_dir=tmp_path / "results",
        limit=2,
        device="cpu",
        use_cache=False,
        show_progress=False,
        instruction_template="I: {task}\nQ: ",
    )
    prompts = [r.settings["retriever"]["query_prompt"] for r in results]
    assert prompts == [f"I: {card['instruction']}\nQ: ", f"I: {DEFAULT_TASK}\nQ: "]
