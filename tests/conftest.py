import subprocess, pytest
from llm_nb.config import demo_config
from llm_nb.pipeline import run_pipeline

def llm_nb_cmd(*args, **kw):
    "Run the `llm_nb` console script; returns the CompletedProcess."
    return subprocess.run(["llm_nb", *map(str, args)], capture_output=True, text=True, timeout=600, **kw)

@pytest.fixture(scope="session")
def exported_run(tmp_path_factory):
    "A demo run through the export stage (short training): a GGUF to serve."
    cfg = demo_config(**{"run.root": str(tmp_path_factory.mktemp("runs")), "train.max_steps": 5})
    return run_pipeline(cfg, ["synth", "ingest", "clean", "model", "tokenize", "train", "evaluate", "export"])
