#!/usr/bin/env bash
# The one script to send to an H200 machine: measure the Qwen3-Coder-30B-A3B profile at real
# shapes under a time limit, write it to $OUT, print a summary. Needs only python3 with torch.
#   bash tiersim/calibrate/device_run.sh            (from the repository root)
# Environment overrides: MODEL, PRECISIONS, KV_DTYPES, TP, BUDGET_S (stop measuring after this
# many seconds, checked before every grid point, default 420), LIMIT_S (hard kill, default 510),
# PYTHON (default python3); DEVICE=cpu QUICK=1 smoke-tests this script on a machine without a
# GPU (--quick measures tiny built-in shapes, so MODEL is not passed then).
# Files under $OUT: env.txt, calibrate.log, and the profile JSON named after the profile
# (h200_harness_qwen3-coder-30b-a3b_tp1.json on an H200). Only a complete run writes that name;
# a run cut short by the budget or a signal leaves what it measured in
# <name>.partial.json (its provenance.status says partial and why).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-/tmp/tiersim_calibrate}
mkdir -p "$OUT"
MODEL=${MODEL:-Qwen3-Coder-30B-A3B}
PRECISIONS=${PRECISIONS:-bf16,fp8,w4a16,nvfp4}
KV_DTYPES=${KV_DTYPES:-bf16,fp8}
TP=${TP:-1}
DEVICE=${DEVICE:-cuda}
QUICK=${QUICK:-}
BUDGET_S=${BUDGET_S:-420}
LIMIT_S=${LIMIT_S:-510}
PY=${PYTHON:-python3}
PROFILE="$OUT/profile.json"  # renamed to the profile's own name at the end
PARTIAL="$OUT/profile.partial.json"  # what a run that did not finish measured
if [ -n "$QUICK" ]; then SHAPES=(--quick); else SHAPES=(--model "$MODEL"); fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv 2>&1
  "$PY" -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available() and torch.cuda.get_device_name(), torch.cuda.is_available() and torch.cuda.get_device_capability())" 2>&1
} | tee "$OUT/env.txt"

start=$(date +%s)
timeout -k 10 "$LIMIT_S" "$PY" -m tiersim.calibrate --device "$DEVICE" "${SHAPES[@]}" \
  --precisions "$PRECISIONS" --kv-dtypes "$KV_DTYPES" --tp "$TP" --budget-s "$BUDGET_S" \
  --out "$PROFILE" 2>&1 | tee "$OUT/calibrate.log"
rc=${PIPESTATUS[0]}
echo "calibrate exit $rc after $(( $(date +%s) - start )) s"

if [ "$rc" -ne 0 ] && [ -f "$PARTIAL" ]; then
  echo "summary of the partial profile:"
  "$PY" -c "import json, sys; from tiersim.calibrate.summary import summarize; print(summarize(json.load(open(sys.argv[1]))))" "$PARTIAL"
fi
for f in "$PROFILE" "$PARTIAL"; do
  [ -f "$f" ] || continue
  NAME=$("$PY" -c "import json, sys; print(json.load(open(sys.argv[1]))['name'])" "$f")
  case "$f" in *.partial.json) NAME="$NAME.partial" ;; esac
  mv "$f" "$OUT/$NAME.json" && echo "profile: $OUT/$NAME.json"
done
ls -l "$OUT"
exit "$rc"
