"""`mtrbench export`: a task as BEIR files or a Hub-ready Hugging Face dataset folder."""

from __future__ import annotations

import argparse
import sys

from mtrbench.cli.common import unescape
from mtrbench.data import load_task, resolve_card
from mtrbench.infra.atomic import ensure_folder
from mtrbench.infra.errors import MtrbenchError, UserInputError
from mtrbench.interop.export import QueryTexts, export_beir, export_hf
from mtrbench.retrieve import RetrieverOptions, build_retriever, resolve
from mtrbench.serialize.history import QueryFormat, check_strategy_applies, get_strategy
from mtrbench.serialize.truncate import Truncator


def _cmd_export(args: argparse.Namespace) -> int:
    from mtrbench.measures.protocols import check_choice  # deferred: loads pytrec_eval
    from mtrbench.measures.protocols import for_card as protocol_for_card  # deferred: loads pytrec_eval

    if args.protocol is not None:
        check_choice(args.protocol)
    strategy = get_strategy(args.history)
    fmt = QueryFormat(
        user_prefix=unescape(args.user_prefix),
        assistant_prefix=unescape(args.assistant_prefix),
        separator=unescape(args.separator),
        order=args.order,
    )
    side = _truncation(args)
    if args.model_kind and not args.model:
        raise UserInputError("--model-kind names the kind of --model's checkpoint: give --model too")
    model = resolve(args.model, args.model_kind) if args.model else None  # unknown names fail before loading
    out = ensure_folder(args.out)  # an --out that is a file (or cannot be made) fails before the task loads
    card = resolve_card(args.task)
    protocol = protocol_for_card(args.protocol, card)
    if protocol.prefix_first_turn:  # the official MTR-SUITE texts, as eval serializes them under that protocol
        strategy = strategy.with_first_turn_prefixed()
    task = load_task(card, split=args.split, data_dir=args.data_dir, corpus_path=args.corpus)
    check_strategy_applies(strategy, task.name, task.has_rewrites)
    tokenizer, max_length, prompt = None, None, ""
    if model is not None:
        retriever = build_retriever(
            model, RetrieverOptions.of(device="cpu", max_length=args.max_length, show_progress=False)
        )
        tokenizer, max_length, prompt = retriever.tokenizer, retriever.max_length, retriever.query_prompt
    truncator = Truncator(tokenizer, max_length, prompt=prompt, side=side)
    texts = {q.qid: truncator(strategy(q, fmt)) for q in task.queries}
    settings = {
        "history": strategy.name,
        "truncate": truncator.side,
        "model": args.model,
        "max_length": max_length if truncator.side != "none" else None,
        "query_prompt": prompt or None,
        "user_prefix": fmt.user_prefix,
        "assistant_prefix": fmt.assistant_prefix,
        "separator": fmt.separator,
        "order": fmt.order,
        "protocol": protocol.setting,
    }
    query_texts = QueryTexts(texts, settings)
    paths = export_beir(task, out, query_texts) if args.format == "beir" else export_hf(task, card, out, query_texts)
    if prompt:
        print(
            f"note: {args.model} encodes queries with the prompt {prompt!r}; the exported text leaves it out "
            f"(its tokens were counted when truncating)",
            file=sys.stderr,
        )
    if not args.model:
        print(
            "note: query texts written whole (--truncate none, recorded in the export): a retriever with a token "
            "limit cuts them itself, on long conversations from the question's end; --model M truncates as "
            "`mtrbench eval --model M` does",
            file=sys.stderr,
        )
    if protocol.is_official and not protocol.prefix_first_turn:
        print(
            f"note: the texts are the same under every protocol; scored by beir or mteb they follow trec_eval's "
            f"conventions, not the official {protocol.name} ones (`mtrbench eval` or `mtrbench score` apply those)",
            file=sys.stderr,
        )
    truncated = f"{truncator.stats.truncated} truncated" if args.model else "untruncated, as asked"
    print(
        f"exported {task.name} ({task.split}: {len(task.queries)} queries, {len(task.corpus)} documents; "
        f"history={strategy.name}, truncate={truncator.side}, {truncated}, protocol {protocol.setting}) to "
        + ", ".join(str(p) for p in paths)
    )
    return 0


def _truncation(args: argparse.Namespace) -> str:
    """The truncation side: eval's for --model; without a model only an explicit --truncate none."""
    if args.model:
        return args.truncate or "left"
    if args.max_length is not None:
        raise MtrbenchError("--max-length needs --model (the tokenizer that counts the tokens)")
    if args.truncate is None:
        raise MtrbenchError(
            "export writes each query as a retriever will read it, and without --model it cannot "
            "truncate as `mtrbench eval` does: pass --model M (the model that will score the export), "
            "or --truncate none to write the texts whole (recorded in the export)"
        )
    if args.truncate != "none":
        raise MtrbenchError(
            f"--truncate {args.truncate} needs --model (the tokenizer that counts the tokens); "
            f"without one, --truncate none writes the texts whole"
        )
    return "none"
