"`llm_nb check` is the single gate: a config that would fail later, or silently do something else, is refused with one line naming the key."
import pytest
from conftest import llm_nb_cmd
from llm_nb.cli import main

BAD = {  # case: (config, what its one error line says; DATA = a folder holding reviews.csv with columns id, review)
    "memory_limit": ("clean:\n  memory_limit: lots\n", "cfg.yaml:2: clean.memory_limit: Value error, not a size"),
    "duration": ("monitor:\n  alert_for: 1 minute\n", "cfg.yaml:2: monitor.alert_for: Value error, not a duration"),
    "serve_port": ("serve:\n  port: 70000\n", "cfg.yaml:2: serve.port: Input should be less than or equal to 65535"),
    "monitor_port": ("monitor: {prometheus_port: 99999}\n", "cfg.yaml:1: monitor.prometheus_port: Input should be"),
    "text_field": ("ingest:\n  sources:\n    - path: DATA/*.csv\n",
                   "ingest.sources[0].text_field: no field 'text' in DATA/reviews.csv (it has: id, review)"),
    "empty": ("", "cfg.yaml: empty config: it sets nothing"),
    "comments_only": ("# a config\n\n# to be written\n", "cfg.yaml: empty config: it sets nothing"),
    "run_name": ("run:\n  name: ../../x\n", "cfg.yaml:2: run.name: Value error, must be a plain folder name"),
    "open_server": ("serve:\n  host: 0.0.0.0\n",
                    "cfg.yaml:1: serve: Value error, serve.host='0.0.0.0' listens beyond this machine without an API key"),
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
