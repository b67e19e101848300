"""MTRAG's generation evaluation (``run_algorithmic.py``, ``run_generation_eval.py``, ``judge_utils.py``,
``underspecified_eval.py`` in IBM/mt-rag-benchmark), reimplemented under the official metric names.

* ``lexical``: Recall, RougeL_stemFalse, Extractiveness_RougeL, Length;
* ``bertscore``: BertscoreP, BertscoreR, BertKPrec through the ``bert-score`` library;
* ``aggregate``: RB_agg, the harmonic mean of BERTScore recall, ROUGE-L and the best BertKPrec;
* ``rating``: RB_llm's reply reading (the official cascade of patterns, 0.5 when none matches);
* ``verdicts``: the idk_eval and underspecified_eval reply readings;
* ``faithfulness``: RL_F, RAGAS faithfulness (statements, then one verdict per statement);
* ``conditioning``: the ``*_idk`` and ``*_idk_underspecified`` variants by answerability;
* ``summary``: means per answerability class and overall, and the SemEval-2026 Task 8 harmonic mean;
* ``run``: ``mtrbench judge mtrag`` end to end (LLM judges resumable through ``judges``).
"""
