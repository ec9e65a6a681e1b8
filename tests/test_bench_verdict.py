"""A bench judges its targets: a planted miss prints MISSED and exits 1, the same bench met exits 0, and a smoke run
judges nothing (exit 0, "not judged"). bench/pdf_source.py on one PDF of 3 pages (about a second): its `--target-ratio`
set to 0 is a bound no time ratio meets; its input is a few lines of our own, not the shared corpus."""
import subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--files", "1", "--pages", "3", "--repeat", "1", "--scans", "0"]

@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus")
    lines = [f"Line {i} of a play that is not Shakespeare's, long enough to wrap a little on the page." for i in range(200)]
    (d/"tinyshakespeare.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return d

def pdf_source(data_dir, *args):
    "Run bench/pdf_source.py at its tiny scale: (exit status, its output's lines)."
    p = subprocess.run([sys.executable, str(ROOT/"bench"/"pdf_source.py"), *TINY, "--data-dir", str(data_dir), *args],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    return p.returncode, (p.stdout + p.stderr).splitlines()

def targets(lines): return [l for l in lines if l.startswith("target: ")]

def test_a_planted_miss_exits_1_with_a_missed_line(data_dir):
    rc, lines = pdf_source(data_dir, "--target-ratio", "0")
    missed = [l for l in targets(lines) if l.endswith("MISSED")]
    assert rc == 1, lines
    assert len(missed) == 1 and missed[0].startswith("target: read_pdf / the faster bare extract_text loop ≤ 0"), lines
    assert "pdf_source: 3 of 4 targets met, 1 MISSED" in lines, lines

def test_the_same_bench_met_exits_0(data_dir):
    rc, lines = pdf_source(data_dir, "--target-ratio", "1000")
    assert rc == 0, lines
    assert len(targets(lines)) == 4 and all(l.endswith("— met") for l in targets(lines)), lines
    assert "pdf_source: 4 of 4 targets met" in lines, lines

def test_a_smoke_run_judges_nothing(data_dir):
    rc, lines = pdf_source(data_dir, "--target-ratio", "0", "--smoke")
    assert rc == 0, lines
    assert targets(lines) and all(l.endswith("not judged") for l in targets(lines)), lines
    assert not any("MISSED" in l for l in lines), lines
