"""Nugget evaluation as TREC RAG 2024/2025 and TREC iKAT 2024 run it (the AutoNuggetizer method,
castorini/nuggetizer), for the answers of a generations file or for existing assignment files.

* ``labels``: the importance (vital / okay) and assignment (support / partial_support / not_support) labels;
* ``nugget_file``: nuggetizer's nugget JSONL (one record of nuggets per turn), read and written;
* ``assignment_file``: nuggetizer's assignment JSONL (one record per answer, each nugget labelled), read and written;
* ``ikat``: TREC iKAT 2024's gold nugget JSON and participant responses (irlabamsterdam/CONE-RAG's layout);
* ``scores``: strict_vital, vital, strict_all and all of one answer, with nuggetizer's definitions;
* ``aggregate``: those scores per run, per turn position, before/after a topic switch and per conversation;
* ``score_files``: ``--assignments FILE...``: checks the files against nuggets, answers and a task, and scores them;
* ``prompts``: the creation, labelling, assignment and citation-support prompts and their reply readers;
* ``create``, ``assign``, ``citations``: the LLM stages; ``run``: ``mtrbench judge nuggets GENERATIONS`` end to end.
"""
