#!/bin/sh
# The GPU path on a machine with an NVIDIA GPU and a system PyTorch that sees it: the harness's CUDA
# telemetry tests, then lab validation through the local process backend with the worker's GPU slots on.
# Python packages come from ./.whl when present (a machine with no package index), else from PyPI.
# Writes its logs to $OUT (default ./var/gpu-check).
set -u
OUT=${OUT:-var/gpu-check}
mkdir -p "$OUT"
nvidia-smi -L | tee "$OUT/gpu.txt"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' | tee -a "$OUT/gpu.txt"
# The machine's own python3 and its CUDA build of torch are used as they are: everything else is installed
# next to them (a venv on top would not see a torch that itself lives in a venv). Meant for a throw-away
# GPU machine: it changes that python3's packages.
PY=python3
if [ -d .whl ]; then
  "$PY" -m pip install -q --no-index --find-links .whl -r .whl/reqs.txt
else
  grep -v -E '^(torch|numpy)==' requirements.txt > "$OUT/reqs.txt"
  "$PY" -m pip install -q -r "$OUT/reqs.txt" pytest pytest-django pytest-timeout
fi
export FAULTLINE_VAR_DIR="$PWD/var/gpu-check-state" SANDBOX_BACKEND=process SANDBOX_GPUS=1
"$PY" manage.py compiletranslations >/dev/null 2>&1
"$PY" -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/sandbox/test_gpu.py 2>&1 | tee "$OUT/pytest-gpu.txt"
rc=$?
"$PY" manage.py migrate --noinput -v 0 && "$PY" manage.py loadbank >/dev/null && "$PY" manage.py loadlabs >/dev/null
"$PY" manage.py validatelab ${GPU_CHECK_LABS:-leak-hook-cache correctness-grad-accumulation} --seeds 1 2>&1 \
  | tee "$OUT/validate-gpu.txt"
exit $rc
