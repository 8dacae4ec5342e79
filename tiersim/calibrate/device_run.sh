#!/usr/bin/env bash
# The one script to send to an H200 machine: measure the Qwen3-Coder-30B-A3B profile at real
# shapes under a time limit, write it to $OUT, print a summary. Needs only python3 with torch.
#   bash tiersim/calibrate/device_run.sh            (from the repository root)
# Environment overrides: MODEL, PRECISIONS, KV_DTYPES, TP, OPS (sections, default all),
# BUDGET_S (stop measuring after this many seconds, checked before every grid point, default
# 400), LIMIT_S (hard kill, default 480), TOTAL_S (the whole script's limit, default 570: the
# device call allows 600 s; the main phase's LIMIT_S and BUDGET_S shrink to what the first
# phase left), BLOCKFP8 (default 1; 0 skips the first phase),
# PYTHON (default python3); DEVICE=cpu QUICK=1 smoke-tests this script on a machine without a
# GPU (--quick measures tiny built-in shapes, so MODEL is not passed then).
# First phase (about 1-2 minutes): block-FP8 and row-wise FP8 dense GEMMs at the shapes of the
# block-FP8 rows of NVIDIA's vLLM sample (Qwen3-235B-A22B at TP 1, 2, 4; MiniMax-M2.5 at TP 4,
# 8), one profile each, blockfp8_<model>_tp<N>.json; compare them with the shipped graph-read
# rule here afterwards: python benchmarks/blockfp8_rule.py FILE (docs/fidelity.md).
# Files under $OUT: env.txt, calibrate.log, blockfp8.log, and the profile JSON named after the
# profile (h200_harness_qwen3-coder-30b-a3b_tp1.json on an H200). Only a complete run writes
# that name; a run cut short by the budget or a signal leaves what it measured in
# <name>.partial.json (its provenance.status says partial and why).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${OUT:-/tmp/tiersim_calibrate}
MODEL=${MODEL:-Qwen3-Coder-30B-A3B}
PRECISIONS=${PRECISIONS:-bf16,fp8,fp8_block,w4a16,nvfp4}
OPS=${OPS:-overhead,gemm,moe,attn_decode,attn_prefill,allreduce}
BLOCKFP8=${BLOCKFP8:-1}
KV_DTYPES=${KV_DTYPES:-bf16,fp8}
TP=${TP:-1}
DEVICE=${DEVICE:-cuda}
QUICK=${QUICK:-}
BUDGET_S=${BUDGET_S:-400}
LIMIT_S=${LIMIT_S:-480}
TOTAL_S=${TOTAL_S:-570}
SCRIPT_START=$(date +%s)
PY=${PYTHON:-python3}
# A setting bash cannot compare ends the script here, before the first phase spends minutes:
# BUDGET_S=1.5 failed each test ('integer expression expected'), so the budget was never
# shrunk to the hard limit; LIMIT_S=abc made timeout run nothing.
for var in TP BUDGET_S LIMIT_S TOTAL_S; do
  case "${!var}" in ''|*[!0-9]*|0*)
    echo "Error: $var='${!var}': must be a whole number above 0; set it so, or leave it unset for the default" >&2
    exit 1 ;;
  esac
done
case "$BLOCKFP8" in 0|1) ;; *)
  echo "Error: BLOCKFP8='$BLOCKFP8': must be 0 or 1; set it so, or leave it unset for the default" >&2
  exit 1 ;;
esac
if ! mkdir -p "$OUT" 2>/dev/null || [ ! -w "$OUT" ]; then
  echo "Error: OUT='$OUT': cannot make that folder (a file is in the way, or no permission); set OUT to a folder" >&2
  exit 1
fi
PROFILE="$OUT/profile.json"  # renamed to the profile's own name at the end
PARTIAL="$OUT/profile.partial.json"  # what a run that did not finish measured
if [ -n "$QUICK" ]; then SHAPES=(--quick); else SHAPES=(--model "$MODEL"); fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1

{
  date -u +"%Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,power.limit --format=csv 2>&1
  "$PY" -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available() and torch.cuda.get_device_name(), torch.cuda.is_available() and torch.cuda.get_device_capability())" 2>&1
} | tee "$OUT/env.txt"

if [ "$BLOCKFP8" = 1 ]; then
  if [ -n "$QUICK" ]; then SPECS=(quick:1); else
    SPECS=(Qwen3-235B-A22B:1 Qwen3-235B-A22B:2 Qwen3-235B-A22B:4 MiniMax-M2.5:4 MiniMax-M2.5:8); fi
  for spec in "${SPECS[@]}"; do
    M=${spec%%:*}; N=${spec##*:}
    if [ -n "$QUICK" ]; then WHICH=(--quick); else WHICH=(--model "$M"); fi
    timeout -k 5 40 "$PY" -m tiersim.calibrate --device "$DEVICE" "${WHICH[@]}" --tp "$N" \
      --ops overhead,gemm --precisions fp8,fp8_block --budget-s 25 \
      --out "$OUT/blockfp8_${M}_tp${N}.json" >>"$OUT/blockfp8.log" 2>&1
    echo "blockfp8 $M tp$N exit $?" | tee -a "$OUT/blockfp8.log"
  done
fi

start=$(date +%s)
LEFT=$(( TOTAL_S - (start - SCRIPT_START) - 15 ))  # 15 s for the kill grace and the summary
if [ "$LIMIT_S" -gt "$LEFT" ]; then LIMIT_S=$LEFT; fi
if [ "$BUDGET_S" -gt $(( LIMIT_S - 60 )) ]; then BUDGET_S=$(( LIMIT_S - 60 )); fi
if [ "$BUDGET_S" -lt 30 ]; then echo "only $LIMIT_S s left for the main profile"; BUDGET_S=30; fi
echo "main profile: --budget-s $BUDGET_S, hard limit $LIMIT_S s"
timeout -k 10 "$LIMIT_S" "$PY" -m tiersim.calibrate --device "$DEVICE" "${SHAPES[@]}" \
  --precisions "$PRECISIONS" --kv-dtypes "$KV_DTYPES" --tp "$TP" --ops "$OPS" \
  --budget-s "$BUDGET_S" --out "$PROFILE" 2>&1 | tee "$OUT/calibrate.log"
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
