import subprocess, pytest
from llm_nb.testing import run_until

def llm_nb_cmd(*args, **kw):
    "Run the `llm_nb` console script; returns the CompletedProcess."
    return subprocess.run(["llm_nb", *map(str, args)], capture_output=True, text=True, timeout=600, **kw)

@pytest.fixture(scope="session")
def exported_run():
    "A demo run through the export stage (short training): a GGUF to serve."
    return run_until("serve_bench", **{"train.max_steps": 5})
