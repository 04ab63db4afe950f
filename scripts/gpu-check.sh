#!/bin/sh
# The GPU path on a machine with an NVIDIA GPU and a system PyTorch that sees it: the harness's CUDA
# telemetry tests, then validation of every lab that may use a GPU (gpu: optional or required) through
# the local process backend with the worker's GPU slots on, and a count of the runs that reported CUDA memory.
# Python packages come from ./.whl when present (a machine with no package index), else from PyPI.
# GPU_CHECK_LABS narrows the labs; GPU_CHECK_PROCS validators share them (default: a quarter of the cores).
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
STATE="$PWD/var/gpu-check-state"
export SANDBOX_BACKEND=process SANDBOX_GPUS=1
FAULTLINE_VAR_DIR="$STATE/tests" "$PY" manage.py compiletranslations >/dev/null 2>&1
FAULTLINE_VAR_DIR="$STATE/tests" "$PY" -m pytest -q -p no:cacheprovider -o addopts="-ra" tests/sandbox/test_gpu.py 2>&1 \
  | tee "$OUT/pytest-gpu.txt"
rc=$?
LABS=${GPU_CHECK_LABS:-$(grep -l -E 'gpu: *(optional|required)' labs/catalog/*/lab.yaml | xargs -n1 dirname | xargs -n1 basename)}
PROCS=${GPU_CHECK_PROCS:-$(( $(nproc) / 4 > 0 ? $(nproc) / 4 : 1 ))}
# Each validator keeps its own database and GPU-slot folder, so the validators share the one GPU; they take
# the labs one at a time from a shared claims folder.
rm -rf "$STATE/claims"
i=0
while [ "$i" -lt "$PROCS" ]; do
  (
    export FAULTLINE_VAR_DIR="$STATE/v$i"
    "$PY" manage.py migrate --noinput -v 0 && "$PY" manage.py loadbank >/dev/null && "$PY" manage.py loadlabs >/dev/null
    # shellcheck disable=SC2086
    "$PY" manage.py validatelab $LABS --seeds 1 --claims "$STATE/claims" --rows-out "$OUT/rows-$i.jsonl" \
      >"$OUT/validate-$i.txt" 2>&1
    echo "validator $i exit $?" >>"$OUT/validate-$i.txt"
    # Every lab validated here may use the GPU, and its program does when it has one: a lab none of
    # whose runs reported CUDA memory did not get the GPU.
    "$PY" manage.py shell -c '
from labs.models import LabRun
for slug in sorted(set(LabRun.objects.values_list("version__lab__slug", flat=True))):
    mine = LabRun.objects.filter(version__lab__slug=slug)
    on_cuda = mine.filter(run__events__kind="cuda_memory").distinct().count()
    print(f"{slug}: {on_cuda} of {mine.count()} runs on CUDA (cuda_memory telemetry)" + ("" if on_cuda else ": NO GPU USED"))
' >>"$OUT/validate-$i.txt" 2>&1
  ) &
  i=$((i + 1))
done
wait
cat "$OUT"/validate-*.txt | tee "$OUT/validate-gpu.txt" | grep -E 'violation|validator|on CUDA|FAIL|Error' || true
"$PY" manage.py validationsummary "$OUT"/rows-*.jsonl 2>&1 | tee "$OUT/summary.md"
grep -q "exit 0" "$OUT/validate-gpu.txt" && ! grep -q -E "exit [1-9]" "$OUT/validate-gpu.txt" || rc=1
! grep -q "NO GPU USED" "$OUT/validate-gpu.txt" || rc=1
exit $rc
