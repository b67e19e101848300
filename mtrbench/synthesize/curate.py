"""Stage 1, curation (MTR-SUITE §4.1, App. A.5.1): strip non-text, chunk recursively, drop near-duplicates
with MinHash-LSH, keep what the quality scorer calls high quality.

Chunking is langchain's ``RecursiveCharacterTextSplitter`` with the seed's Table 8 separators in their
priority order, toward a target of ~1,024 characters (App. A.8.3). Near-duplicates: datasketch MinHash
over word 5-gram shingles, LSH at a Jaccard threshold; the first chunk of a near-duplicate group is kept.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from mtrbench.infra.errors import DataError
from mtrbench.synthesize.quality import QualityScorer, QualityVerdict, build_scorer
from mtrbench.synthesize.reading import RawDocument, read_documents, source_fingerprint
from mtrbench.synthesize.workdir import finished_summary, read_jsonl, write_jsonl, write_summary

# Table 8 of the seed, in priority order.
TABLE8_SEPARATORS: tuple[str, ...] = ("\n\n", "\n", " ", ".", ",", "\u200b", "\uff0c", "\u3001", "\uff0e", "\u3002", "")
CHUNKS = "chunks.jsonl"


@dataclass(frozen=True)
class CurateOptions:
    chunk_size: int = 1024  # target characters per chunk
    chunk_overlap: int = 0
    min_chunk_chars: int = 200  # shorter chunks (a document's tail, a heading) are dropped
    minhash_threshold: float = 0.8  # Jaccard similarity of word 5-gram sets above which chunks are duplicates
    minhash_permutations: int = 128
    shingle_words: int = 5
    quality: str = "heuristic"
    device: str = "cpu"  # for the transformers quality classifiers
    seed: int = 0  # MinHash permutation seed
    corpus_split: str = "train"  # for a Hub dataset

    def settings(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Chunk:
    chunk_id: str
    source_doc: str
    title: str
    text: str


_HTML_BLOCK = re.compile(r"<(script|style)\b.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_HTML_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_URL = re.compile(r"https?://\S+")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SPACES = re.compile(r"[ \t\u00a0]+")
_BLANK_LINES = re.compile(r"\n{3,}")


def strip_non_text(text: str) -> str:
    """Markup, images, link targets, URLs and control characters out; paragraph breaks kept."""
    text = _HTML_BLOCK.sub(" ", text)
    text = _HTML_TAG.sub(" ", text)
    text = html.unescape(text)
    text = _MD_IMAGE.sub(" ", text)
    text = _MD_LINK.sub(r"\1", text)
    text = _URL.sub(" ", text)
    text = _CONTROL.sub(" ", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def make_splitter(chunk_size: int, chunk_overlap: int = 0):
    from langchain_text_splitters import RecursiveCharacterTextSplitter  # deferred: slow to import, curate only

    return RecursiveCharacterTextSplitter(
        separators=list(TABLE8_SEPARATORS),
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        length_function=len,
        strip_whitespace=True,
    )


def shingles(text: str, n: int) -> set[str]:
    words = re.findall(r"\w+", text.lower())
    if len(words) < n:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def near_duplicates(
    texts: list[str], threshold: float, permutations: int, shingle_words: int, seed: int = 0
) -> list[int]:
    """Positions of texts that are near-duplicates of an earlier kept text (MinHash-LSH)."""
    from datasketch import MinHash, MinHashLSH  # deferred: slow to import (scipy), curate only

    lsh = MinHashLSH(threshold=threshold, num_perm=permutations)
    dropped = []
    for i, text in enumerate(texts):
        signature = MinHash(num_perm=permutations, seed=seed)
        for shingle in shingles(text, shingle_words):
            signature.update(shingle.encode("utf-8"))
        if lsh.query(signature):
            dropped.append(i)
            continue
        lsh.insert(str(i), signature)
    return dropped


def chunk_documents(
    documents: list[RawDocument], options: CurateOptions, counts: Counter, show_progress: bool = False
) -> list[Chunk]:
    splitter = make_splitter(options.chunk_size, options.chunk_overlap)
    chunks: list[Chunk] = []
    for document in tqdm(documents, desc="Curate: chunking", unit="doc", disable=not show_progress):
        text = strip_non_text(document.text)
        if not text:
            counts["documents empty after stripping"] += 1
            continue
        for piece in splitter.split_text(text):
            if len(piece) < options.min_chunk_chars:
                counts["chunks shorter than min_chunk_chars"] += 1
                continue
            chunks.append(
                Chunk(chunk_id=f"c{len(chunks):07d}", source_doc=document.doc_id, title=document.title, text=piece)
            )
    return chunks


def run_curate(
    corpus: str, folder: Path, options: CurateOptions, show_progress: bool = True, scorer: QualityScorer | None = None
) -> dict[str, Any]:
    """Curate ``corpus`` into ``folder/chunks.jsonl``; the summary counts kept and dropped chunks per reason."""
    settings = {"corpus": str(corpus), "corpus_fingerprint": source_fingerprint(corpus), **options.settings()}
    done = finished_summary(folder, settings)
    if done is not None and (folder / CHUNKS).is_file():
        return done
    read = read_documents(corpus, options.corpus_split)
    if not read.documents:
        raise DataError(
            f"corpus {corpus}: no documents"
            + (f" ({', '.join(f'{n} {k}' for k, n in read.warnings.items())})" if read.warnings else "")
        )
    counts: Counter = Counter()
    chunks = chunk_documents(read.documents, options, counts, show_progress)
    n_chunked = len(chunks) + counts["chunks shorter than min_chunk_chars"]
    duplicates = set(
        near_duplicates(
            [c.text for c in chunks],
            options.minhash_threshold,
            options.minhash_permutations,
            options.shingle_words,
            options.seed,
        )
    )
    counts["near-duplicates (MinHash-LSH)"] = len(duplicates)
    unique = [c for i, c in enumerate(chunks) if i not in duplicates]
    scorer = scorer or build_scorer(options.quality, options.device)
    verdicts = score_quality([c.text for c in unique], scorer, show_progress)
    kept = [(c, v) for c, v in zip(unique, verdicts) if v.kept]
    counts["low quality"] = len(unique) - len(kept)
    if not kept:
        reasons = ", ".join(f"{n} {k}" for k, n in {**read.warnings, **counts}.items() if n)
        raise DataError(
            f"corpus {corpus}: every chunk was filtered out ({reasons or 'no text'}); "
            "lower --min-chunk-chars, or try --quality none"
        )
    folder.mkdir(parents=True, exist_ok=True)
    quality_note = f"{scorer.name} (offline stand-in for the seed's classifiers)" if scorer.stand_in else scorer.name
    write_jsonl(
        folder / CHUNKS,
        [
            {
                "chunk_id": c.chunk_id,
                "source_doc": c.source_doc,
                "title": c.title,
                "text": c.text,
                "quality": round(v.score, 4),
                "quality_label": v.label,
            }
            for c, v in kept
        ],
    )
    summary = {
        "documents": len(read.documents),
        "chunks": n_chunked,
        "kept": len(kept),
        **_counts_summary(counts, read.warnings),
        "minhash": {
            "threshold": options.minhash_threshold,
            "num_perm": options.minhash_permutations,
            "shingle": f"word {options.shingle_words}-grams",
        },
        "quality_scorer": quality_note,
        "quality_stand_in": scorer.stand_in,
        "separators": list(TABLE8_SEPARATORS),
    }
    return write_summary(folder, settings, summary)


QUALITY_BATCH = 256


def score_quality(texts: list[str], scorer: QualityScorer, show_progress: bool = False) -> list[QualityVerdict]:
    verdicts: list[QualityVerdict] = []
    for start in tqdm(
        range(0, len(texts), QUALITY_BATCH),
        desc=f"Curate: quality ({scorer.name})",
        unit="batch",
        disable=not show_progress,
    ):
        verdicts.extend(scorer.score(texts[start : start + QUALITY_BATCH]))
    return verdicts


def _counts_summary(counts: Counter, read_warnings: dict[str, int]) -> dict[str, dict[str, int]]:
    """Dropped chunks per reason; warnings: the reader's, and documents left empty by stripping (none dropped)."""
    empty = counts["documents empty after stripping"]
    return {
        "dropped": {k: n for k, n in counts.items() if n and k != "documents empty after stripping"},
        "warnings": dict(read_warnings) | ({"documents empty after stripping": empty} if empty else {}),
    }


def read_chunks(folder: Path) -> list[Chunk]:
    return [Chunk(r["chunk_id"], r["source_doc"], r["title"], r["text"]) for r in read_jsonl(folder / CHUNKS)]
