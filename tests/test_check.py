"`llm_nb check` is the single gate: a config that would fail later, or silently do something else, is refused with one line naming the key."
import pytest
from conftest import llm_nb_cmd
from llm_nb.cli import main
from llm_nb.config import ConfigError, load_config

BAD = {  # case: (config, what its one error line says; DATA = a folder holding reviews.csv with columns id, review)
    "memory_limit": ("clean:\n  memory_limit: lots\n", "cfg.yaml:2: clean.memory_limit: not a size"),
    "duration": ("monitor:\n  alert_for: 1 minute\n", "cfg.yaml:2: monitor.alert_for: not a duration"),
    "serve_port": ("serve:\n  port: 70000\n", "cfg.yaml:2: serve.port: Input should be less than or equal to 65535"),
    "monitor_port": ("monitor: {prometheus_port: 99999}\n", "cfg.yaml:1: monitor.prometheus_port: Input should be"),
    "text_field": ("ingest:\n  sources:\n    - path: DATA/*.csv\n",
                   "ingest.sources[0].text_field: no field 'text' in DATA/reviews.csv (it has: id, review)"),
    "empty": ("", "cfg.yaml: empty config: it sets nothing"),
    "comments_only": ("# a config\n\n# to be written\n", "cfg.yaml: empty config: it sets nothing"),
    "run_name": ("run:\n  name: ../../x\n", "cfg.yaml:2: run.name: must be a plain folder name"),
    "open_server": ("serve:\n  host: 0.0.0.0\n",
                    "cfg.yaml:2: serve.host='0.0.0.0' listens beyond this machine without an API key"),
    # what a stage would refuse (or the Trainer trip over) only once it runs: refused at load, at the line of a key
    "scheduler": ("train:\n  lr_scheduler: cosinee\n", "cfg.yaml:2: train.lr_scheduler: Input should be 'linear', 'cosine'"),
    "optimizer": ("train:\n  optim: adam\n", "cfg.yaml:2: train.optim: Input should be 'adamw_torch'"),
    "resume": ("train:\n  resume: maybe\n", "cfg.yaml:2: train.resume: is neither no, auto nor a checkpoint folder"),
    "chars": ("clean:\n  min_chars: 500\n  max_chars: 10\n", "cfg.yaml:2: clean.min_chars=500 > clean.max_chars=10"),
    "compile": ("train:\n  torch_compile: true\n  gradient_checkpointing: true\n",
                "cfg.yaml:3: train.gradient_checkpointing and train.torch_compile don't go together"),
    "best_model": ("train:\n  save_steps: 10\n  load_best_model_at_end: true\n",
                   "cfg.yaml:3: train.load_best_model_at_end needs train.eval_steps = train.save_steps > 0 (got 0 and 10)"),
    "offload": ("deepspeed:\n  stage: 2\n  offload_params: true\n", "cfg.yaml:3: deepspeed.offload_params needs deepspeed.stage 3"),
    "skip_under_zero": ("train:\n  nan_policy: skip\ndeepspeed:\n  stage: 2\n",
                        "cfg.yaml:2: train.nan_policy=skip does not work under deepspeed.stage 2"),
    "two_engines": ("deepspeed:\n  stage: 2\nfsdp:\n  version: 2\n",
                    "cfg.yaml:4: fsdp.version=2 and deepspeed.stage=2: one engine shards a job"),
    "global_batch": ("deepspeed:\n  stage: 2\n  train_batch_size: 12\nlaunch:\n  nproc_per_node: 8\n",
                     "cfg.yaml:3: deepspeed.train_batch_size=12 cannot be split over launch.nnodes × launch.nproc_per_node = 8 ranks"),
    "gpus": ("launch:\n  nproc_per_node: 4\n  gpus_per_node: 2\n", "cfg.yaml:2: launch.nproc_per_node=4 > launch.gpus_per_node=2"),
    "preset": ("lora:\n  preset: mistral\n", "cfg.yaml:2: lora.preset: Input should be 'auto'"),
    "duplicate_section": ("train: {max_steps: 5}\nlora: {r: 4}\ntrain: {max_steps: 6}\n",
                          "cfg.yaml:3: duplicate key 'train' (first on line 1)"),
    "duplicate_key": ("train:\n  max_steps: 5\n  max_steps: 6\n", "cfg.yaml:3: duplicate key 'train.max_steps' (first on line 2)"),
}

@pytest.fixture
def data(tmp_path):
    "A folder with one CSV file whose text is in the column `review`."
    d = tmp_path/"data"
    d.mkdir()
    (d/"reviews.csv").write_text("id,review\n1,good value\n")
    return d

@pytest.mark.parametrize("case", BAD)
def test_bad_config_refused_in_one_line(case, tmp_path, data, capsys):
    text, says = (s.replace("DATA", str(data)) for s in BAD[case])
    p = tmp_path/"cfg.yaml"
    p.write_text(text)
    assert main(["check", str(p)]) == 2
    line, = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("llm_nb: error: ") and says in line, line

def test_good_config_passes(tmp_path, data, capsys):
    p = tmp_path/"cfg.yaml"
    p.write_text(f"run: {{name: reviews-v2}}\nclean: {{memory_limit: 80%}}\ningest:\n  sources:\n"
                 f"    - {{path: '{data}/**/*.csv', text_field: review}}\n    - {{path: '{{run}}/synth/*.jsonl'}}\n"
                 "serve: {host: 0.0.0.0, port: 8080, api_key_env: LLM_NB_API_KEY}\n"
                 "monitor: {exporter_port: 9400, prometheus_port: 65535, scrape_interval: 15s, alert_for: 1h30m}\n")
    assert main(["check", str(p)]) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip() == f"{p}: OK"

def test_check_command_refuses(tmp_path):
    "The console script as a user runs it: exit 2, one line."
    p = tmp_path/"cfg.yaml"
    p.write_text("serve:\n  port: 70000\n")
    r = llm_nb_cmd("check", p)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"llm_nb: error: {p}:2: serve.port: Input should be less than or equal "
                                             "to 65535 (got 70000)"]

def test_alias_bomb_refused_at_once(tmp_path):
    "A 'billion laughs' (9 levels of 9 aliases: 9⁹ values) is refused in well under a second, at its file and line."
    import subprocess, time
    lines = ["a: &a [x,x,x,x,x,x,x,x,x]"] + [f"{c}: &{c} [{','.join(['*' + p] * 9)}]"
                                             for p, c in zip("abcdefgh", "bcdefghi")]
    p = tmp_path/"cfg.yaml"
    p.write_text("\n".join(lines) + "\n")
    t = time.monotonic()
    says = r"cfg.yaml:6: aliases expand this value to 597,871 values, more than the 100,000 a config may hold"
    with pytest.raises(ConfigError, match=says): load_config(p)
    assert time.monotonic() - t < 0.5
    r = subprocess.run(["llm_nb", "check", str(p)], capture_output=True, text=True, timeout=60)  # was: busy for minutes
    assert r.returncode == 2 and r.stderr.startswith(f"llm_nb: error: {p}:6: aliases expand"), r.stderr
