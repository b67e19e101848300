"""An evaluation with no model-written history needs no LLM client: ``openai`` is not imported.

The GPU benchmark's ``--e2e`` runs ``run_eval`` on a machine holding only the documented kit (no openai); it
failed there once because the history module imported the LLM client at module level."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# openai is made unimportable (a None entry in sys.modules makes `import openai` raise ImportError), so an import
# anywhere on the path fails the evaluation itself, and a guarded import that swallowed the error still shows.
SCRIPT = textwrap.dedent(
    """
    import sys
    sys.modules["openai"] = None
    import mtrbench
    results = mtrbench.evaluate(
        "bm25", "mtrbench-sample", history=["current", "full"], output_dir=sys.argv[1], show_progress=False
    )
    assert [r.history for r in results] == ["current", "full"], results
    assert all(r.main_score > 0 for r in results)
    loaded = sorted(m for m in sys.modules if m.split(".")[0] == "openai" and sys.modules[m] is not None)
    print("openai modules:", loaded)
    print("client loaded:", "mtrbench.llm.client" in sys.modules)
    """
)


def test_evaluating_without_a_model_written_history_does_not_import_openai(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "results")], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "openai modules: []" in proc.stdout
    assert "client loaded: False" in proc.stdout
