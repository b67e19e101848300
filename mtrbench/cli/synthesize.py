"""`mtrbench synthesize`: MTR-PIPELINE, a corpus in, a conversational retrieval benchmark out."""

from __future__ import annotations

import argparse
from pathlib import Path

from mtrbench.cli.flag_types import (
    check_relation,
)
from mtrbench.cli.flags.synthesize import AGENT_NAMES, DEFAULT_HARD_SWITCHES
from mtrbench.cli.llm_flags import cache_from_args, request_overrides
from mtrbench.infra.atomic import check_folder_target
from mtrbench.infra.errors import MtrbenchError, UserInputError
from mtrbench.llm.config import JudgeConfig, load_judges
from mtrbench.synthesize.curate import CurateOptions
from mtrbench.synthesize.write import WriteOptions


def _agents(args: argparse.Namespace):
    from mtrbench.synthesize.generate import Agents  # deferred: loads openai

    per_agent = {a: getattr(args, f"{a}_model") for a in AGENT_NAMES}
    if args.agents:
        if args.llm_model or any(per_agent.values()) or args.base_url:
            raise MtrbenchError("--agents FILE names every agent's model and endpoint; drop the model/URL flags")
        judges = {j.name: j for j in load_judges(args.agents)}
        missing = [a for a in AGENT_NAMES if a not in judges]
        extra = sorted(set(judges) - set(AGENT_NAMES))
        if missing or extra:
            raise MtrbenchError(
                f"{args.agents}: judges must be named questioner, responder and polisher"
                + (f"; missing {missing}" if missing else "")
                + (f"; unknown {extra}" if extra else "")
            )
        agents = Agents(**{a: judges[a] for a in AGENT_NAMES})
    else:
        models = {a: per_agent[a] or args.llm_model for a in AGENT_NAMES}
        if not all(models.values()):
            if args.stage in ("curate", "cluster"):
                return None
            missing = [a for a in AGENT_NAMES if not models[a]]
            raise MtrbenchError(
                f"no model for the {', '.join(missing)}: pass --llm-model (all three agents), "
                f"--{missing[0]}-model, or --agents FILE"
            )
        agents = Agents(
            **{
                a: JudgeConfig(
                    name=a,
                    model=models[a],
                    base_url=getattr(args, f"{a}_base_url") or args.base_url,
                    api_key_env=args.api_key_env,
                    temperature=0.7,
                    max_tokens=2048 if a == "responder" else 256,
                    extra_body={"seed": args.seed},
                )
                for a in AGENT_NAMES
            }
        )

    agents = Agents(**{a: request_overrides(j, args) for a, j in agents.items()})
    return agents


def _check_flags(args: argparse.Namespace) -> None:
    """Relations between flags and the task name, before the corpus is read or a model loads (single values are
    checked by their flag types)."""
    given = args.hard_switches  # None: the default, cut to what the turns allow as before; a number given is not
    if given is not None and given > max(args.turns - 2, 0):  # hard switches fall on turns 3..T
        raise UserInputError(
            f"--hard-switches {given} needs at least {given + 2} turns (hard switches fall on turns 3 to "
            f"--turns), got --turns {args.turns}"
        )
    name = args.name
    check_relation(
        bool(name) and not any(mark in name for mark in ("/", "\\", "..", "\0")) and name.strip() == name,
        f"--name is the task's name and its card's file name inside --out: no path separators, '..' or "
        f"surrounding spaces, got '{name}'",
    )


def _cmd_synthesize(args: argparse.Namespace) -> int:
    _check_flags(args)
    check_folder_target(args.out)  # --out naming a file (or a file above it) fails before any model loads
    from mtrbench.models.loading import pick_device  # deferred: loads torch
    from mtrbench.synthesize.cluster import ClusterOptions  # deferred: loads torch
    from mtrbench.synthesize.generate import GenerateOptions  # deferred: loads openai
    from mtrbench.synthesize.pipeline import SynthesisConfig, run_synthesis  # deferred: loads torch
    from mtrbench.synthesize.plan import PlanOptions  # deferred: loads numpy

    device = pick_device(args.device)
    config = SynthesisConfig(
        corpus=args.corpus,
        out=Path(args.out),
        stage=args.stage,
        curate=CurateOptions(
            chunk_size=args.chunk_size,
            min_chunk_chars=args.min_chunk_chars,
            minhash_threshold=args.minhash_threshold,
            minhash_permutations=args.minhash_permutations,
            quality=args.quality,
            device=device,
            seed=args.seed,
            corpus_split=args.corpus_split,
        ),
        cluster=ClusterOptions(
            model=args.embedding_model,
            device=device,
            neighbours=args.neighbours,
            cluster_size=args.cluster_size,
            ngram_threshold=args.ngram_threshold,
            knn=args.knn,
            seed=args.seed,
        ),
        generate=GenerateOptions(
            plan=PlanOptions(
                conversations=args.conversations,
                turns=args.turns,
                hard_switches=DEFAULT_HARD_SWITCHES if args.hard_switches is None else args.hard_switches,
                soft_switch_probability=args.soft_switch_probability,
                seed=args.seed,
            ),
            max_cost_usd=args.max_cost,
            dry_run=args.dry_run,
            retry_dropped=args.retry_dropped,
        ),
        write=WriteOptions(name=args.name),
        show_progress=not args.quiet,
        max_failure_rate=args.max_failure_rate,
    )
    agents = _agents(args)
    cache = None if args.dry_run else cache_from_args(args)
    return run_synthesis(config, agents, cache)
