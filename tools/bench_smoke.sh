#!/usr/bin/env bash
# Every benchmark in bench/ once at its smallest scale, so that none can rot: `python bench/X.py --smoke` runs the
# bench's own code paths on tiny inputs (1 repeat, few steps, the smallest model it can build), prints its figures
# and does not judge its targets (they hold at full scale only), so it exits 0 when everything ran and non-zero
# when anything crashed. One line per bench, as each ends: "ok: bench/x.py in 4s" or "FAILED: bench/x.py (exit N)"
# followed by the last lines of its output; then a count. A bench that failed beside another is run once more, alone,
# after the rest: passing alone it counts as ok but is listed as flaky at the end ("bench smoke flaky:", with what ran
# beside it and its first try's last lines, which tools/test.sh shows again at its end), so a crash that only comes
# under load is seen and fixed, not lost; failing again it fails. Exit status 1 when any failed (alone too).
# A smoke run never judges; tests/test_bench_verdict.py checks the verdict itself: bench/pdf_source.py judged at a
# tiny scale with a planted miss (--target-ratio 0) prints MISSED and exits 1, met exits 0.
#
#   bash tools/bench_smoke.sh                  # every bench/*.py but the helper module bench/_data.py
#   bash tools/bench_smoke.sh bench/x.py ...   # those only
#
# BENCH_SMOKE_TIMEOUT: seconds per bench (default 300; exit 124 when it runs out). BENCH_SMOKE_JOBS: benches at a
# time (default 2: several wait on Slurm, a server or subprocesses much of the time; their figures are not judged,
# so sharing the cores costs nothing but time). BENCH_SMOKE_LOGS: a folder that keeps each bench's output
# (default: a temporary one, removed). BENCH_SMOKE_RERUN=0: a failed bench is not run again alone. Run it in the project's venv. bench/clean_slurm.py cleans on the Slurm that
# SLURM_CONF names (tools/test.sh starts one), or starts tools/slurm_local.sh's and stops it; bench/zero_table.py's
# ZeRO-3 + offload job builds DeepSpeed's CPU Adam the first time in a venv (minutes; kept in the venv, as test.sh
# does); bench/peer_agreement.py needs llama-server and vLLM's client (tools/install.sh --vllm).
set -uo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_MODE=offline WANDB_SILENT=true
export MPLCONFIGDIR="${MPLCONFIGDIR:-${TMPDIR:-/tmp}/llm_nb-mpl}"
# DeepSpeed's CPU ops built once per venv, in the venv, as tools/test.sh does
[ -n "${TORCH_EXTENSIONS_DIR:-}" ] || export TORCH_EXTENSIONS_DIR="$(python -c 'import sys; print(sys.prefix)')/torch_extensions"
timeout_s=${BENCH_SMOKE_TIMEOUT:-300}
jobs=${BENCH_SMOKE_JOBS:-2}
tail_lines=40

if [ $# -gt 0 ]; then benches=("$@")
else
  # the longest first, so that the short ones fill in beside them; then any other bench, by name
  benches=()
  for b in zero_table peer_agreement clean_slurm dashboard_overhead gguf_quality near_dedup trainer_step \
           tokenize_pack clean_vs_pandas pdf_source out_of_core; do
    [ -f "bench/$b.py" ] && benches+=("bench/$b.py")
  done
  for f in bench/*.py; do
    [ "$f" = bench/_data.py ] && continue
    [[ " ${benches[*]} " == *" $f "* ]] || benches+=("$f")
  done
fi

if [ -n "${BENCH_SMOKE_LOGS:-}" ]; then logs=$BENCH_SMOKE_LOGS; mkdir -p "$logs"
else logs=$(mktemp -d); trap 'rm -rf "$logs"' EXIT; fi

declare -A name_of=() start_of=() beside=()  # pid -> bench, its start (s); a failed bench -> what ran beside it
passed=0 failed=0 t0=$(date +%s)
failed_names=()  # listed again at the end with their output's last lines, where a CI log's tail shows them
flaky_names=()  # failed beside another, passed alone
log_of() { echo "$logs/$(basename "$1" .py)${2:-}.log"; }  # a bench's output (its first try's: suffix .first)

finish() { # pid, exit status: the bench's line (and its output's tail when it failed)
  local pid=$1 rc=$2 f=${name_of[$1]} secs=$(( $(date +%s) - ${start_of[$1]} ))
  if [ "$rc" -eq 0 ]; then passed=$((passed + 1)); echo "ok: $f in ${secs}s"
  else
    failed=$((failed + 1)); failed_names+=("$f")
    local p others=()
    for p in "${!name_of[@]}"; do [ "$p" = "$pid" ] || others+=("${name_of[$p]}"); done
    beside[$f]=${others[*]:-nothing}
    local why="exit $rc"
    [ "$rc" -eq 124 ] && why="exit 124: timed out after ${timeout_s}s"
    [ "$rc" -eq 137 ] && why="exit 137: killed, 15s after its timeout of ${timeout_s}s"
    echo "FAILED: $f ($why) after ${secs}s; the last $tail_lines lines of its output:"
    tail -n "$tail_lines" "$(log_of "$f")" | sed 's/^/    /'
  fi
  unset "name_of[$pid]" "start_of[$pid]"
}

for f in "${benches[@]}"; do
  while [ "${#name_of[@]}" -ge "$jobs" ]; do
    wait -n -p done_pid; rc=$?
    finish "$done_pid" "$rc"
  done
  timeout --kill-after=15 "$timeout_s" python "$f" --smoke >"$(log_of "$f")" 2>&1 &
  name_of[$!]=$f; start_of[$!]=$(date +%s)
done
while [ "${#name_of[@]}" -gt 0 ]; do
  wait -n -p done_pid; rc=$?
  finish "$done_pid" "$rc"
done
# a bench that failed beside another: once more, alone
still_failed=()
for f in "${failed_names[@]}"; do
  if [ "${BENCH_SMOKE_RERUN:-1}" = 0 ] || [ "${beside[$f]}" = nothing ]; then still_failed+=("$f"); continue; fi
  mv "$(log_of "$f")" "$(log_of "$f" .first)"
  s=$(date +%s)
  timeout --kill-after=15 "$timeout_s" python "$f" --smoke >"$(log_of "$f")" 2>&1; rc=$?
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1)); failed=$((failed - 1)); flaky_names+=("$f")
    echo "ok alone: $f in $(( $(date +%s) - s ))s (it failed beside ${beside[$f]}: flaky)"
  else still_failed+=("$f"); echo "FAILED alone too: $f (exit $rc)"; fi
done
flaky=""; [ "${#flaky_names[@]}" -gt 0 ] && flaky=" (${#flaky_names[@]} of them flaky: ok alone only)"
echo "bench smoke: $passed ok$flaky, $failed failed, in $(( $(date +%s) - t0 ))s ($jobs at a time)"
last_lines() { # title, suffix of the log, benches...: each bench's last 12 lines under the title
  local title=$1 suffix=$2 f; shift 2
  [ $# -gt 0 ] || return 0
  echo "$title"
  for f in "$@"; do
    echo "  $f${beside[$f]:+ (beside ${beside[$f]})}, the last 12 lines of its output${suffix:+ when it failed}:"
    tail -n 12 "$(log_of "$f" "$suffix")" | cut -c1-240 | sed 's/^/    /'
  done
}
last_lines "bench smoke flaky:" .first "${flaky_names[@]}"
last_lines "bench smoke failed:" "" "${still_failed[@]}"
[ "$failed" -eq 0 ]
