"""Write the reference ("golden") result files that tests/project/test_golden_outputs.py compares against.

RUN THIS ONLY ON A COMMIT WHOSE OUTPUTS ARE THE REFERENCE - NEVER TO MAKE A FAILING TEST PASS. The stored
files are the outputs of the code before issue 31's refactor (written on branch ``golden``, parent of the
commit that added them); a difference after a change is a change of behaviour, to be fixed in the code.
A new scenario, or a field the normalizer must learn to ignore because it varies between two runs of the
same code (tests/golden_outputs.py, ``BLANKED``), is regenerated on that reference commit, checked out.

    python tests/data/golden/regenerate.py              # every scenario
    python tests/data/golden/regenerate.py judge        # some: eval-bm25 eval-bm25-model-histories
                                                        #       eval-minilm generate judge

What is stored, and what the normalizer removes: the docstring of tests/golden_outputs.py.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]


def main(names: list[str]) -> int:
    # as tests/conftest.py: a fresh embedding cache, never the user's
    os.environ.setdefault("MTRBENCH_CACHE_DIR", tempfile.mkdtemp(prefix="mtrbench-golden-cache-"))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.path[:0] = [str(TESTS), str(TESTS.parent)]
    from golden_outputs import SCENARIOS, run_scenario, write_reference

    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown:
        sys.stderr.write(f"unknown scenario(s): {', '.join(unknown)}; known: {', '.join(SCENARIOS)}\n")
        return 2
    with tempfile.TemporaryDirectory(prefix="mtrbench-golden-") as root:
        for name in names or list(SCENARIOS):
            out = run_scenario(SCENARIOS[name], Path(root))
            written = write_reference(SCENARIOS[name], out)
            size = sum(p.stat().st_size for p in written)
            sys.stdout.write(f"{name}: {len(written)} files, {size / 1024:.0f} KiB\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
