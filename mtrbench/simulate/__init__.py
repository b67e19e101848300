"""``mtrbench simulate``: sessions between a simulated user (an LLM with an information need, a persona and a
behaviour profile) and a system under test, scored without new qrels, and the simulator itself validated.

Data flow: needs (from a task) + profile -> session loop (user stage through the LLM stage runner, system turns
logged) -> transcripts (a native mtrbench task folder) -> score (UMBRELA labels for unjudged passages, session
measures) -> validate (next-utterance prediction, system-ranking agreement). See docs/simulate.md.
"""
