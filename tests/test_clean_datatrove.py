"""The clean stage on datatrove, for real: 2 tasks per step, on the two nodes of tools/slurm_local.sh's Slurm, give
the one-process DuckDB path's output, row for row (the demo's planted problems + the review corpus
../shared/data/online_shopping_10_cats.csv, whose ~6 M characters make several near-dedup batches and verification
chunks, so every parallel task has work)."""
import json, re, subprocess
from pathlib import Path
import pyarrow.parquet as pq, pytest
from llm_nb.config import demo_config
from llm_nb.run import Run
from llm_nb.ingest import run_ingest
from llm_nb.clean_datatrove import run_clean
from llm_nb.clean_datatrove import clean_twin, output_diff

CSV = Path(__file__).resolve().parents[2]/"shared"/"data"/"online_shopping_10_cats.csv"
SLURM_CLEAN = {"clean.engine": "datatrove", "clean.executor": "slurm", "clean.tasks": 2, "clean.threads": 1,
               "launch.slurm.time": "00:15:00"}


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    "A run with the demo's records and the review corpus ingested (clean's input)."
    if not CSV.exists(): pytest.skip(f"{CSV} is not there (it is beside the repo in CI)")
    shop = dict(name="shop", path=str(CSV), text_field="review")
    cfg = demo_config(**{"run.root": str(tmp_path_factory.mktemp("dt")), "run.name": "base",
                         "ingest.sources": [s.model_dump() for s in demo_config().ingest.sources] + [shop]})
    run = Run.create(cfg)
    from llm_nb.synth import run_synth
    run_synth(cfg, run)
    run_ingest(cfg, run)
    return run


@pytest.fixture
def slurm(slurm_env, monkeypatch):
    "This process as a Slurm client (datatrove calls sbatch with our environment)."
    for k in ("SLURM_CONF", "PATH"): monkeypatch.setenv(k, slurm_env[k])
    return slurm_env


def test_two_slurm_tasks_give_the_duckdb_output(ingested, slurm):
    one = clean_twin(ingested, "duckdb")
    c1 = run_clean(one.cfg, one)
    two = clean_twin(ingested, "slurm", **SLURM_CLEAN)
    c2 = run_clean(two.cfg, two)
    assert output_diff(one.dir/"clean", two.dir/"clean") == []
    assert c1["engine"]["name"] == "duckdb"
    assert {k: c2["engine"][k] for k in ("name", "executor", "workers")} == dict(name="datatrove", executor="slurm",
                                                                               workers=2)
    assert c2["rows_out"] == c1["rows_out"] > 60_000 and c2["rejected"] == c1["rejected"]
    assert c2["rejected"]["near_dup"] > 0 and c2["rejected"]["exact_dup"] > 0
    # decontamination on each shard: as many rows as the demo planted copies of held-out questions (12_clean: which)
    assert c2["rejected"]["contaminated:heldout_answers"] == ingested.cfg.synth.n_contaminated
    work = two.dir/"clean"/"datatrove"
    res = {p.stem: json.loads(p.read_text()) for p in (work/"results").glob("*.json")}
    assert sorted(res) == ["decide-00000", "number_rows-00000", "score_shard-00000", "score_shard-00001",
                           "sign_batches-00000", "sign_batches-00001", "verify_pairs-00000", "verify_pairs-00001"]
    assert all(res[f"{s}-0000{k}"]["rows"] > 0 for s in ("score_shard", "sign_batches") for k in (0, 1))
    assert res["score_shard-00000"]["rows"] + res["score_shard-00001"]["rows"] == c2["rows_in"]
    verified = [res[f"verify_pairs-0000{k}"] for k in (0, 1)]  # each task its share, together the one process's
    near = c1["engine"]["near_dedup"]
    for k in ("candidates", "pairs"):
        assert all(v[k] > 0 for v in verified) and sum(v[k] for v in verified) == near[k]
    # the tasks ran as Slurm jobs, each on its own node of the two: each wrote its output file there, naming its node
    for step in ("score_shard", "sign_batches", "verify_pairs"):
        logs = sorted((work/"logs"/step/"slurm_logs").glob("*.out"))
        nodes = [re.search(r"^on node (\S+) ", p.read_text(), re.M)[1] for p in logs]
        print(step, [p.name for p in logs], nodes)
        assert len(logs) == 2 and len(set(nodes)) == 2, (step, nodes)
    assert pq.read_table(two.dir/"clean"/"clean.parquet").num_rows == c1["rows_out"]


def test_a_failed_task_names_its_step_and_leaves_no_job(ingested, slurm):
    run = clean_twin(ingested, "broken", **SLURM_CLEAN)
    for p in (run.dir/"ingest"/"parts").glob("*.parquet"): p.unlink()
    with pytest.raises(RuntimeError, match=r"step score_shard: tasks \[0, 1\] of 2 did not complete"):
        run_clean(run.cfg, run)
    steps = ("score_shard", "number_rows", "sign_batches", "verify_pairs", "decide")
    names = ",".join(f"llm_nb-clean-broken-{s}" for s in steps)
    left = subprocess.run(["squeue", "-h", "-n", names], capture_output=True, text=True, check=True).stdout
    assert left == ""
