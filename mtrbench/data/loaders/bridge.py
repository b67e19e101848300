"""BRIDGE (HF ``DISLab/BRIDGE``, GitHub ``DISL-Lab/BRIDGE-Benchmark``): completed qrels for seven IR subsets.

Not conversational: every row is one single-turn query (history empty). SCHEMAS.md §6.

BRIDGE publishes only queries and the **refined** relevant sets; corpora and the **original** qrels come
from the source datasets:

* ``MSMARCO``, ``NQ``: a BEIR folder (``corpus.jsonl``, ``qrels/<split>.tsv``; msmarco ``dev``, nq ``test``);
* ``Lifestyle``, ``Recreation``, ``Science``, ``Technology``, ``Writing``: RobustQA's LoTTE build,
  ``<subset>/test/documents.jsonl`` (``doc_id``, ``title``, ``text``) and ``annotations.jsonl``
  (``qid``, ``documents[{doc_id}]``).

Layouts accepted (``--data-dir`` / ``--corpus``):

* ``--data-dir ROOT`` where ``ROOT/DISLab-BRIDGE`` is the BRIDGE copy and ``ROOT/sources`` the source
  datasets (``sources/beir_msmarco``, ``sources/robustqa/lifestyle/test``: the fixture layout), or
* ``--data-dir BRIDGE`` (a copy of the Hub repository, or a folder of ``<subset>_test.jsonl`` /
  ``<subset>.jsonl`` files as ``datasets/qrels/get_data.py`` writes them) plus ``--corpus SOURCE``:
  the BEIR folder (or a folder holding ``beir_<subset>/``), or the RobustQA ``data`` folder (or the
  ``<subset>/test`` folder itself).

Without any of these, the queries come from the Hub (card ``source``) and, for the BEIR subsets, the
corpus and original qrels from the Hub datasets named in ``loader_options`` (``corpus_hub``,
``qrels_hub``). Each query's ``qrels`` is the refined set; ``TaskData.extra_qrels`` holds
``{"original": ..., "refined": ...}`` (qid -> doc -> grade) so holes (refined minus original) can be
scored. Rows with an empty ``doc_id`` list are kept with no qrels (excluded from metrics, counted).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from mtrbench.data.cards import TaskCard
from mtrbench.data.hub import load_split
from mtrbench.data.loaders import LoadRequest, register
from mtrbench.data.loaders.common import corpus_from_rows, load_qrels
from mtrbench.data.loaders.common import read_jsonl_records as _read_jsonl
from mtrbench.data.model import ConversationalQuery, Corpus, TaskData
from mtrbench.data.validate import check_corpus, check_queries
from mtrbench.data.validate import check_queries_without_corpus as _check_without_corpus
from mtrbench.formats.beir import BeirFolder, qrels_from_rows
from mtrbench.formats.qrels import BEIR
from mtrbench.infra.errors import DataError, HubUnavailableError

BEIR_SUBSETS = {"msmarco": "dev", "nq": "test"}  # subset -> split of the BEIR qrels holding the original judgments
LOTTE_SUBSETS = ("lifestyle", "recreation", "science", "technology", "writing")
EMPTY_REFINED = "queries with an empty refined doc_id list (kept, excluded from metrics)"


@register("bridge")
def load(card: TaskCard, request: LoadRequest) -> TaskData:
    opts = card.loader_options
    subset = str(opts.get("subset") or "").lower()
    if subset not in BEIR_SUBSETS and subset not in LOTTE_SUBSETS:
        raise DataError(
            f"{card.card_path}: loader_options.subset must be one of "
            f"{sorted([*BEIR_SUBSETS, *LOTTE_SUBSETS])}, got '{subset}'"
        )
    config = opts.get("config") or subset.capitalize()
    warnings: Counter = Counter()

    folder = request.data_dir or card.local_path()
    sources: Path | None = request.corpus_path
    revision = None
    if folder is not None:
        folder = Path(folder)
        bridge_dir = folder / "DISLab-BRIDGE" if (folder / "DISLab-BRIDGE").is_dir() else folder
        if sources is None and (folder / "sources").is_dir():
            sources = folder / "sources"
        rows, origin = _local_rows(bridge_dir, subset, config, card.name)
    else:
        revision = card.source.revision
        origin = f"{card.source.hub} ({config}, test)"
        data = load_split(card.source.hub, config=config, split="test", revision=revision, what=f"{card.name} queries")
        rows = list(enumerate(data))

    queries = _queries(rows, origin, subset, warnings)

    corpus: Corpus | None = None
    original: dict[str, dict[str, int]] | None = None
    if sources is not None:
        corpus, original = _local_sources(Path(sources), subset, opts, warnings, card.name)
    elif subset in BEIR_SUBSETS and opts.get("corpus_hub") and request.require_corpus:
        try:
            corpus, original = _hub_sources(opts, subset, card.name)
        except HubUnavailableError:
            raise DataError(
                f"{_missing_corpus_message(card.name, subset)}; its Hub copy {opts['corpus_hub']} is unreachable"
            ) from None
    elif request.require_corpus:
        raise DataError(_missing_corpus_message(card.name, subset))
    else:
        warnings["original qrels unavailable (no source dataset given)"] += 1

    if corpus is not None:
        check_corpus(corpus, f"{card.name} source corpus")
        check_queries(queries, corpus, origin, warnings)
    else:
        corpus = Corpus(ids=[], titles=[], texts=[])
        _check_without_corpus(queries, origin)

    refined = {q.qid: dict(q.qrels) for q in queries if q.qrels}
    extra = {"refined": refined}
    if original is not None:
        extra["original"] = _original_for(queries, original, corpus, warnings)
    else:
        extra["original"] = {}
    return TaskData(
        name=card.name,
        split=request.split,
        corpus=corpus,
        queries=queries,
        dataset_revision=revision,
        warnings=warnings,
        extra_qrels=extra,
    )


# ------------------------------------------------------------------------------------------ queries


def _local_rows(bridge_dir: Path, subset: str, config: str, task: str) -> tuple[list[tuple[int, Any]], str]:
    """The subset's rows from a local copy: ``<subset>_test.jsonl`` / ``<subset>.jsonl``, else README configs."""
    if not bridge_dir.exists():
        raise DataError(f"{task}: data folder {bridge_dir} does not exist")
    wanted = (f"{subset}_test.jsonl", f"{subset}.jsonl")
    if bridge_dir.is_file():
        return _read_jsonl(bridge_dir, f"{task} queries"), str(bridge_dir)
    for name in wanted:
        matches = sorted(p for p in bridge_dir.rglob("*.jsonl") if p.name.lower() == name)
        if len(matches) > 1:
            raise DataError(f"{task}: several {name} files under {bridge_dir}: {[str(m) for m in matches]}")
        if matches:
            return _read_jsonl(matches[0], f"{task} queries"), str(matches[0])
    if not (bridge_dir / "README.md").is_file():
        raise DataError(
            f"{task}: no {wanted[0]} (or {wanted[1]}) under {bridge_dir}, and no README.md with "
            f"dataset configs; pass --data-dir with a copy of DISLab/BRIDGE"
        )
    data = load_split(bridge_dir, config=config, split="test", what=f"{task} queries ({config})")
    return list(enumerate(data)), f"{bridge_dir} ({config}, test)"


def _queries(rows: list[tuple[int, Any]], origin: str, subset: str, warnings: Counter) -> list[ConversationalQuery]:
    queries = []
    for n, row in rows:
        if not isinstance(row, dict):
            raise DataError(f"{origin} record {n}: expected a JSON object, got {type(row).__name__}")
        qid = row.get("q_id")
        if qid is None or (isinstance(qid, str) and not qid.strip()):
            raise DataError(f"{origin} record {n}: missing 'q_id'")
        qid = str(qid)
        where = f"{origin} record {n} ({qid})"
        text = row.get("query")
        if not isinstance(text, str):
            raise DataError(f"{where}: 'query' must be a string")
        doc_ids = row.get("doc_id")
        if doc_ids is None:
            doc_ids = []
        if not isinstance(doc_ids, list) or not all(
            isinstance(d, (str, int)) and not isinstance(d, bool) for d in doc_ids
        ):
            raise DataError(f"{where}: 'doc_id' must be a list of document ids (strings or integers)")
        qrels: dict[str, int] = {}
        for d in doc_ids:
            if str(d) in qrels:
                warnings["duplicate ids within a doc_id list (merged)"] += 1
            qrels[str(d)] = 1
        if not qrels:
            warnings[EMPTY_REFINED] += 1
        answers = row.get("answers")
        if answers is None:
            answers = []
        elif isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list):
            raise DataError(f"{where}: 'answers' must be a list of strings")
        queries.append(
            ConversationalQuery(
                qid=qid,
                conversation_id=qid,
                turn_id=1,
                history=(),
                query=text,
                gold_rewrite=None,
                answers=tuple(str(a) for a in answers),
                qrels=qrels,
                meta={"subset": subset},
            )
        )
    return queries


# ------------------------------------------------------------------------------------------ sources


def _local_sources(
    path: Path, subset: str, opts: dict[str, Any], warnings: Counter, task: str
) -> tuple[Corpus, dict[str, dict[str, int]]]:
    if subset in BEIR_SUBSETS:
        folder = _first_dir(
            path, [path, path / f"beir_{subset}", path / subset], lambda d: BeirFolder(d).corpus.is_file()
        )
        if folder is None:
            raise DataError(
                f"{task}: no BEIR {subset} corpus.jsonl in {path} (looked in {path}, "
                f"{path / f'beir_{subset}'}, {path / subset}); pass --corpus with BEIR's {subset} folder"
            )
        beir = BeirFolder(folder)
        corpus_file = beir.corpus
        rows = load_split(
            corpus_file, builder="json", data_files=str(corpus_file), split="train", what=f"{task} corpus"
        )
        corpus = corpus_from_rows(rows, str(corpus_file))
        split = str(opts.get("original_qrels_split") or BEIR_SUBSETS[subset])
        qrels_file = beir.qrels(split)
        if not qrels_file.is_file():
            warnings[f"original qrels file missing ({qrels_file}); extra_qrels['original'] empty"] += 1
            return corpus, {}
        return corpus, load_qrels(qrels_file, BEIR, f"{task} original qrels")
    folder = _first_dir(
        path,
        [
            path,
            path / subset / "test",
            path / "robustqa" / subset / "test",
            path / "data" / subset / "test",
            path / "test",
        ],
        lambda d: (d / "documents.jsonl").is_file(),
    )
    if folder is None:
        raise DataError(
            f"{task}: no RobustQA documents.jsonl for '{subset}' under {path} (looked for "
            f"{subset}/test/documents.jsonl); pass --corpus with RobustQA's data folder"
        )
    documents = folder / "documents.jsonl"
    rows = load_split(documents, builder="json", data_files=str(documents), split="train", what=f"{task} corpus")
    id_field = next((f for f in ("doc_id", "_id") if f in rows.column_names), None)
    if id_field is None:
        raise DataError(f"{documents}: documents need a 'doc_id' column (RobustQA), found {rows.column_names}")
    corpus = corpus_from_rows(rows, str(documents), id_field=id_field)
    annotations = folder / "annotations.jsonl"
    if not annotations.is_file():
        warnings[f"original qrels file missing ({annotations}); extra_qrels['original'] empty"] += 1
        return corpus, {}
    original: dict[str, dict[str, int]] = {}
    for n, row in _read_jsonl(annotations, f"{task} original annotations"):
        qid = row.get("qid") if isinstance(row, dict) else None
        docs = row.get("documents") if isinstance(row, dict) else None
        if qid is None or not isinstance(docs, list):
            raise DataError(f"{annotations} record {n}: needs 'qid' and a 'documents' list")
        judged = original.setdefault(str(qid), {})
        for j, doc in enumerate(docs):
            if not isinstance(doc, dict) or doc.get("doc_id") is None:
                raise DataError(f"{annotations} record {n} ({qid}): documents[{j}] has no 'doc_id'")
            judged[str(doc["doc_id"])] = 1
    return corpus, original


def _hub_sources(opts: dict[str, Any], subset: str, task: str) -> tuple[Corpus, dict[str, dict[str, int]]]:
    hub = opts["corpus_hub"]
    rows = load_split(
        hub,
        config=opts.get("corpus_config", "corpus"),
        split=opts.get("corpus_split", "corpus"),
        revision=opts.get("corpus_revision"),
        what=f"{task} source corpus",
    )
    corpus = corpus_from_rows(rows, hub)
    original: dict[str, dict[str, int]] = {}
    if opts.get("qrels_hub"):
        qrels = load_split(
            opts["qrels_hub"],
            split=opts.get("qrels_split", BEIR_SUBSETS[subset]),
            revision=opts.get("qrels_revision"),
            what=f"{task} original qrels",
        )
        original = qrels_from_rows(qrels, opts["qrels_hub"])
    return corpus, original


def _original_for(
    queries: list[ConversationalQuery], original: dict[str, dict[str, int]], corpus: Corpus, warnings: Counter
) -> dict[str, dict[str, int]]:
    """Original judgments of BRIDGE's queries only, pruned to the corpus like the refined set."""
    out: dict[str, dict[str, int]] = {}
    for q in queries:
        judged = original.get(q.qid)
        if not judged:
            warnings["queries without original qrels"] += 1
            continue
        kept = {d: g for d, g in judged.items() if not len(corpus) or d in corpus}
        if len(kept) != len(judged):
            warnings["original qrels naming unknown documents (dropped)"] += len(judged) - len(kept)
        missing = [d for d, g in kept.items() if g > 0 and d not in q.qrels]
        if missing and q.qrels:
            warnings["original relevant documents absent from the refined set"] += len(missing)
        if kept:
            out[q.qid] = kept
    return out


def _missing_corpus_message(task: str, subset: str) -> str:
    if subset in BEIR_SUBSETS:
        return (
            f"{task} needs the BEIR {subset} corpus (corpus.jsonl + qrels/{BEIR_SUBSETS[subset]}.tsv from "
            f"https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/{subset}.zip, as the BRIDGE "
            f"README says): pass `--corpus PATH` (the unzipped {subset} folder)"
        )
    return (
        f"{task} needs RobustQA's LoTTE {subset} test corpus ({subset}/test/documents.jsonl + annotations.jsonl, "
        f"built with github.com/awslabs/robustqa-acl23 as the BRIDGE README says): pass `--corpus PATH` "
        f"(RobustQA's data folder)"
    )


# ------------------------------------------------------------------------------------------ helpers


def _first_dir(path: Path, candidates: list[Path], ok) -> Path | None:
    if path.is_file():
        return path.parent if ok(path.parent) else None
    return next((c for c in candidates if c.is_dir() and ok(c)), None)
