"""Judging generated answers: reference measures (BLEU-1, ROUGE-L, citations, token F1, EM), LLM judges
(RAD-Bench's reference-guided 1-10 rating, a binary verdict per turn), RAGAlign from those verdicts, and the
RAD-Bench per-scenario table. Entry points: :func:`score_generations`, :func:`judge_generations`,
:func:`judge_rad_bench_answers`, :func:`rad_bench_table`."""
