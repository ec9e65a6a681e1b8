"tools/gpu_check.sh: on CPU, --dry-run says what it would run; the config it would run with is valid."
import re, shlex, subprocess
from pathlib import Path
from llm_nb.cli import parse_sets
from llm_nb.config import demo_config

SCRIPT = Path(__file__).resolve().parents[1]/"tools"/"gpu_check.sh"

def test_dry_run_lists_every_step_with_a_valid_config(tmp_path):
    r = subprocess.run(["bash", str(SCRIPT), "--dry-run", "--out", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    steps = re.findall(r"^== (\S+)\n(.+?)(?=\n== |\Z)", r.stdout, re.M | re.S)
    assert [s for s, _ in steps] == ["gpu", "install", "gpu_cells", "qlora_bf16", "cuda_events", "nvml_exporter",
                                     "vllm_cuda", "grpo_vllm"], r.stdout
    cmds = dict(steps)
    assert "--flags gpu" in cmds["gpu_cells"] and "timed_ms(work, cuda=True)" in cmds["cuda_events"]
    cfgs = {}
    for name in ("qlora_bf16", "vllm_cuda", "grpo_vllm"):  # the overrides the demo would run with load
        words = shlex.split(cmds[name].split("&&")[-1])
        sets = [w for prev, w in zip(words, words[1:]) if prev == "--set"]
        cfgs[name] = demo_config(**parse_sets(sets))
    assert (cfgs["vllm_cuda"].serve.engine, cfgs["vllm_cuda"].serve.model) == ("vllm", "merged")
    assert (cfgs["grpo_vllm"].preference.method, cfgs["grpo_vllm"].preference.generation) == ("grpo", "vllm")
    assert not (tmp_path/"report.json").exists()  # a dry run runs nothing

def test_without_a_gpu_it_refuses_to_run():
    r = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True)
    assert r.returncode == 2 and "no GPU here" in r.stderr, r.stderr
