#!/usr/bin/env bash
# The test command (README, .ci/run): notebooks are the source of truth, so check that
#   1. llm_nb/ is exactly what nbdev_export makes of nbs/, and README.md what tools/readme.py makes of index.ipynb,
#   2. notebooks are committed clean (nbdev_clean changes nothing) with their `#| hide` cells collapsed in JupyterLab,
#   3. every notebook but those of KERNEL_ONLY runs top to bottom in-process (nbdev_test; `#| gpu` cells run only
#      where torch sees a GPU),
#   4. every notebook runs top to bottom in a real Jupyter kernel, as Run All does (tools/run_nbs.py: a kernel has
#      a running event loop, and knows nothing of nbdev's flags, so `#| gpu` cells step aside themselves through
#      llm_nb.testing.need_gpu, a counted skip; the executed notebooks are kept in _docs/executed),
#      and the quick start's output stays within a screen per section (tools/nb_output.py),
#   5. the docs site builds from those executed notebooks and every page renders in Chromium (tools/docs.py),
#   6. pytest tests/ passes on two workers (exit 5, "no tests collected", counts as a failure; its 20 slowest tests are listed),
#   7. every bench in bench/ runs at a tiny scale (tools/bench_smoke.sh),
# then print how literate the notebooks read (tools/nb_metrics.py: information, not a gate)
# and one closing line: "test: N passed, N failed, N skipped", after the skips with their reasons.
set -uo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_MODE=offline
export LLM_NB_TEMP_RUNS=1  # a notebook's own run (run_until(..., name=...)) goes to a temporary folder, not runs/
# DeepSpeed builds its CPU ops once per venv (the build is tied to the venv's torch and paths), here, where no other
# checkout's run can hold a lock; a lock left by a killed earlier run of this checkout would hold DeepSpeed forever
if [ -z "${TORCH_EXTENSIONS_DIR:-}" ]; then
  export TORCH_EXTENSIONS_DIR="$(python -c 'import sys; print(sys.prefix)')/torch_extensions"
  find "$TORCH_EXTENSIONS_DIR" -name lock -delete 2>/dev/null
fi
export MPLCONFIGDIR="${MPLCONFIGDIR:-${TMPDIR:-/tmp}/llm_nb-mpl}"
passed=0
failed=0
check_log=$(mktemp)  # the checks that failed, listed again at the end
phases=()
t_phase=$(date +%s)
phase() { local now; now=$(date +%s); phases+=("$1 $((now - t_phase))s"); t_phase=$now; }  # name: seconds since the last
check() { # name, command...
  local name=$1; shift
  if "$@"; then passed=$((passed+1)); echo "ok: $name"; else failed=$((failed+1)); echo "FAILED: $name" | tee -a "$check_log"; fi
}
in_sync() { nbdev_export && git diff --quiet -- llm_nb && [ -z "$(git ls-files --others --exclude-standard -- llm_nb)" ] \
  || { git status --short -- llm_nb; echo "llm_nb/ differs from nbdev_export of nbs/: edit notebooks, export, commit"; return 1; }; }
clean_nbs() { nbdev_clean && git diff --quiet -- nbs \
  || { git diff --stat -- nbs; echo "notebooks are not clean: run nbdev_clean and commit"; return 1; }; }
check "module in sync with notebooks" in_sync
check "README.md in sync with index.ipynb" python tools/readme.py --check
check "notebooks clean" clean_nbs
check "#| hide cells collapsed in JupyterLab" python tools/collapse_hidden.py --check
# a two-node Slurm on this machine (tools/slurm_local.sh) for the notebooks (13_clean_datatrove cleans on it) and the
# tests (tests/conftest.py uses the one that is up); stopped at the end unless it was up before
slurm_was_up=0
bash tools/slurm_local.sh status >/dev/null 2>&1 && slurm_was_up=1
if slurm_line=$(bash tools/slurm_local.sh start | tail -1) && [ "${slurm_line#export SLURM_CONF=}" != "$slurm_line" ]; then
  export SLURM_CONF="${slurm_line#export SLURM_CONF=}"
else failed=$((failed + 1)); echo "FAILED: Slurm did not start (tools/slurm_local.sh start)"; fi
phase "sync checks and Slurm"

# the notebooks that train, evaluate, export or serve a model (a pipeline run each: 3-8 minutes, 80% of the
# notebooks' time) run in the real kernel only (step 4), which runs every cell nbdev_test would and the `#| gpu`
# ones; their code outside a kernel is what pytest drives (tests/test_train.py, test_launch.py, test_serve.py,
# test_vllm.py, test_cli.py). They took 2,009 of the 2,418 notebook-seconds of the kernel run of CI at 7f39755, and
# as many again under nbdev_test. NBDEV_TEST=all runs every notebook under nbdev_test too.
KERNEL_ONLY='00_quickstart|24_train|26_preference|30_evaluate|40_export|40a_gguf|41_serve|42_load_test|90_pipeline|93_family_matrix'
[ "${NBDEV_TEST:-}" = all ] && KERNEL_ONLY='[_.]'
nb_names=$(find nbs -name '*.ipynb' ! -name '_*' ! -path '*/.ipynb_checkpoints/*' -printf '%f\n')
nb_total=$(echo "$nb_names" | wc -l)
nb_inproc=$(echo "$nb_names" | grep -Evc "^($KERNEL_ONLY)")
nb_log=$(mktemp)
# `#| gpu` cells are skipped by nbdev_test (settings.ini tst_flags) unless asked for: ask where torch sees a GPU
gpu_flags=()
python -c "import sys, torch; sys.exit(not torch.cuda.is_available())" 2>/dev/null && gpu_flags=(--flags gpu)
nbdev_test --n_workers 2 --do_print --timing --skip_file_re "^([_.]|$KERNEL_ONLY)" "${gpu_flags[@]}" 2>&1 | tee "$nb_log"
nb_failed=$(awk '/nbdev Tests Failed On The Following Notebooks/{f=1;next} f && /\.ipynb/{n++} END{print n+0}' "$nb_log")
if ! grep -q "^Success" "$nb_log" && [ "$nb_failed" -eq 0 ]; then nb_failed=$nb_inproc; fi
passed=$((passed + nb_inproc - nb_failed)); failed=$((failed + nb_failed))
echo "notebooks: $((nb_inproc - nb_failed)) of $nb_inproc ran top to bottom in-process (nbdev_test)"
phase "nbdev_test"

# every notebook in a real kernel; one test per notebook
kernel_log=$(mktemp)
rm -rf _docs/executed  # only this run's notebooks make the docs
python tools/run_nbs.py --workers 2 --save _docs/executed 2>&1 | tee "$kernel_log"
k_ok=$(grep -c '^ok: .* in a real kernel' "$kernel_log" || true)
k_failed=$((nb_total - k_ok))
passed=$((passed + k_ok))
failed=$((failed + k_failed))
# the quick start says only what a person acts on: at most a screen under each section (tools/nb_output.py)
check "the quick start's output fits a screen per section" \
  python tools/nb_output.py _docs/executed/00_quickstart.ipynb --max-lines 35 --max-chars 2400
phase "real kernel"

# the docs site, from the notebooks just run (outputs, plots, widget state), rendered page by page in Chromium
check "docs site built offline and rendered in Chromium" python tools/docs.py --check
phase "docs"

# pytest
py_log=$(mktemp)
# two workers (pytest-xdist), each file whole on one (tests/conftest.py), each worker's torch on one core: most slow
# tests wait on a server, a browser, Slurm or git as much as they compute
OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} python -m pytest tests/ -n 2 -q -rs -p no:cacheprovider --durations=20 2>&1 \
  | tee "$py_log"; rc=${PIPESTATUS[0]}
summary=$(grep -E '[0-9]+ (passed|failed|errors?|skipped)' "$py_log" | tail -1)
py_skipped=$(echo "$summary" | grep -Eo '[0-9]+ skipped' | grep -Eo '[0-9]+' || true); py_skipped=${py_skipped:-0}
py_passed=$(echo "$summary" | grep -Eo '[0-9]+ passed' | grep -Eo '[0-9]+' || true); py_passed=${py_passed:-0}
py_failed=$(echo "$summary" | grep -Eo '[0-9]+ (failed|errors?)' | grep -Eo '[0-9]+' | awk '{s+=$1} END{print s+0}')
if [ "$rc" -eq 5 ]; then echo "pytest collected no test"; py_failed=$((py_failed + 1)); fi
if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ] && [ "${py_failed:-0}" -eq 0 ]; then py_failed=1; fi
passed=$((passed + py_passed)); failed=$((failed + ${py_failed:-0}))
phase "pytest"

# every bench once at its smallest scale, so that none can rot (after pytest: DeepSpeed's CPU ops are built by then,
# and clean_slurm uses the Slurm started above); their targets are judged at full scale only
smoke_log=$(mktemp)  # its failures' last lines are shown again at the end
check "benches ran at a tiny scale (tools/bench_smoke.sh)" bash -o pipefail -c 'bash tools/bench_smoke.sh | tee "$0"' "$smoke_log"
phase "bench smoke"
[ "$slurm_was_up" = 1 ] || bash tools/slurm_local.sh stop >/dev/null

echo "--- how the notebooks read (information, not a gate) ---"
python tools/nb_metrics.py || true
echo "phases: $(IFS=,; echo "${phases[*]}" | sed 's/,/, /g')"
# notebook cells that stepped aside print a `skipped: ...` line, one skip each per notebook (tools/run_nbs.py --skips):
# llm_nb.testing.have for a missing component (under CI it fails instead), need_gpu for a `#| gpu` cell without a GPU
# (under CI too: no CI machine has one; tools/gpu_check.sh runs those cells on one); pytest's skips are listed by -rs
nb_skips=$(python tools/run_nbs.py --skips _docs/executed)
nb_skipped=$(echo -n "$nb_skips" | grep -c . || true)
skipped=$((py_skipped + nb_skipped))
if [ "$skipped" -gt 0 ]; then
  echo 'skipped (under CI each is a failure, but a `#| gpu` cell without a GPU):'
  grep '^SKIPPED' "$py_log"
  [ -n "$nb_skips" ] && echo "$nb_skips" | sed 's/^/notebook: /'
fi
# a bench that crashed beside another and passed alone (tools/bench_smoke.sh): ok, but shown where it will be read
sed -n '/^bench smoke flaky:/,/^bench smoke failed:/p' "$smoke_log" | grep -v '^bench smoke failed:' | head -n 40
if [ "$failed" -gt 0 ]; then  # again at the end, where a CI log's tail shows it: what failed, and why
  echo "failed:"
  grep -h '^FAILED' "$py_log" "$check_log" 2>/dev/null | sed 's/^/  /'
  awk '/nbdev Tests Failed On The Following Notebooks/{f=1;next} f && /\.ipynb/' "$nb_log" | sed 's/^/  nbdev_test: /'
  grep -A 20 '^FAILED: .* in a real kernel' "$kernel_log" | cut -c1-300 | sed 's/^/  /'
  sed -n '/^bench smoke failed:/,$p' "$smoke_log" | head -n 40 | sed 's/^/  /'
fi
echo "test: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
