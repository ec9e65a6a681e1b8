"""Documents in (#15): PDF pages, tables and scans, HTML and DOCX through the ingest stage, with every adversarial
file landing where it should: records in parts, or one dead letter with the file, the reason and the page.
OCR runs for real: Tesseract must be installed (`bash tools/install.sh --dev` installs it as root)."""
import json, re, shutil
import pyarrow.parquet as pq, pytest
import llm_nb.documents as documents
from llm_nb.config import demo_config
from llm_nb.env import cjk_font
from llm_nb.run import Run
from llm_nb.ingest import run_ingest
from llm_nb.clean_datatrove import run_clean
from llm_nb.synth_raw import sample_pdf, sample_docx

REPORT = [{"text": "Annual report.\nRevenue rose in every re-\ngion."},
          {"text": "Units by region:", "table": [["region", "units"], ["north", "120"], ["south", "95"]]},
          {"scan": "SIGNED BY THE BOARD"},
          {}]
PAGE = """<html><head><title>Shop</title></head><body><nav><a href="/">Home</a> <a href="/about">About us</a></nav>
<main><h1>Shipping</h1><p>Orders leave our warehouse within two working days of payment, tracked all the way.</p>
<p>Deliveries abroad take one to three weeks depending on customs in the country of arrival.</p></main>
<footer>All rights reserved.</footer></body></html>"""

def write_documents(d):
    "One good file of each format and one bad file of each way a PDF, DOCX or HTML can be bad."
    d.mkdir()
    pdf = sample_pdf(d/"report.pdf", REPORT)
    sample_pdf(d/"badpage.pdf", [{"text": f"Page {i} of three."} for i in (1, 2, 3)])
    sample_pdf(d/"locked.pdf", [{"text": "secret"}], password="pw")
    (d/"cut.pdf").write_bytes(pdf.read_bytes()[:pdf.stat().st_size * 2 // 3])
    (d/"empty.pdf").write_bytes(b"")
    (d/"renamed.pdf").write_text("a plain text file renamed to .pdf\n")
    sample_docx(d/"notes.docx", ["Minutes", "The budget was approved.", [["item", "cost"], ["desk", "120"]]])
    (d/"fake.docx").write_text("not a zip")
    (d/"page.html").write_text(PAGE)
    (d/"nav.html").write_text("")

@pytest.fixture
def one_bad_page(monkeypatch):
    "Page 2 of badpage.pdf fails to parse (pdfminer raising inside the page), the other pages do not."
    real = documents.page_content
    def failing(page, *args):
        if page.page_number == 2 and page.pdf.stream.name.endswith("badpage.pdf"):
            raise ValueError("broken content stream")
        return real(page, *args)
    monkeypatch.setattr(documents, "page_content", failing)

def ingest_documents(tmp_path, root:str="runs", **src):
    "Ingest the documents of `write_documents` (in tmp_path/in) as one source, pages as records, in a run under `root`."
    cfg = demo_config(**{"run.root": str(tmp_path/root), "synth.n_records": 0, "ingest.sources": [
        dict(name="docs", path=str(tmp_path/"in"/"*"), text_unit="page", **src)]})
    run = Run.create(cfg)
    return run, run_ingest(cfg, run)

def dead_letters(run) -> dict:
    "file name -> [(line, reason)] of the run's dead letters."
    got = {}
    for l in (run.dir/"ingest"/"dead_letter.jsonl").read_text().splitlines():
        x = json.loads(l)
        got.setdefault(x["file"].rsplit("/", 1)[-1], []).append((x["line"], x["reason"]))
    return got

def test_documents_land_where_they_should(tmp_path, one_bad_page, capsys):
    assert shutil.which("tesseract"), "Tesseract is needed for the OCR test: apt-get install tesseract-ocr"
    write_documents(tmp_path/"in")
    run, c = ingest_documents(tmp_path)
    out = capsys.readouterr().out
    # report.pdf 4 pages (2 text, 1 OCR, 1 blank) + badpage.pdf 3 pages (2 text, 1 dead)
    assert (c["doc_pages"], c["doc_pages_text"], c["doc_pages_ocr"], c["doc_pages_blank"], c["doc_pages_dead"]) == \
           (7, 4, 1, 1, 1)
    assert "document pages 7 = text 4 + ocr 1 + blank 1 + dead 1 -> OK" in out
    assert c["dead_files"] == 6 and "6 files dead-lettered whole" in out
    recs = pq.read_table(run.dir/"ingest"/"parts").to_pandas()
    recs["name"] = recs.file.str.rsplit("/", n=1).str[-1]
    recs["meta"] = recs.meta.map(json.loads)
    rep = recs[recs.name == "report.pdf"].sort_values("line")
    assert rep.text.tolist() == ["Annual report.\nRevenue rose in every region.", "Units by region:",
                                 "| region | units |\n|---|---|\n| north | 120 |\n| south | 95 |", "SIGNED BY THE BOARD"]
    assert [(m["kind"], m["page"]) for m in rep.meta] == [("page", 1), ("page", 2), ("table", 2), ("page", 3)]
    assert rep.meta.iloc[3]["ocr"] is True and rep.line.tolist() == [1, 2, 3, 4]
    bad = recs[recs.name == "badpage.pdf"].sort_values("line")
    assert bad.text.tolist() == ["Page 1 of three.", "Page 3 of three."]  # one bad page loses nothing else
    assert [m["page"] for m in bad.meta] == [1, 3]
    assert recs[recs.name == "notes.docx"].text.tolist() == ["Minutes\nThe budget was approved.",
                                                             "| item | cost |\n|---|---|\n| desk | 120 |"]
    html = recs[recs.name == "page.html"].text.iloc[0]
    assert "Orders leave our warehouse" in html and "About us" not in html and "rights reserved" not in html
    assert c["kept"] == len(recs) == 9 and c["read"] == c["kept"] + c["quarantined"]
    assert dead_letters(run) == {
        "badpage.pdf": [(2, "page 2 unreadable: ValueError: broken content stream")],
        "locked.pdf": [(0, "encrypted pdf: it needs a password")],
        "cut.pdf": [(0, "truncated pdf: the file ends before its page list (PSEOF)")],
        "empty.pdf": [(0, "empty file")],
        "renamed.pdf": [(0, "not a pdf: no %PDF- header in the first 1 KiB")],
        "fake.docx": [(0, "not a docx: not a zip archive")],
        "nav.html": [(0, "empty file")]}
    # unchanged documents are skipped by content hash on the next run, with the same counts
    again = run_ingest(run.cfg, run)
    assert again["skipped_unchanged"] == again["files"] == 10
    assert {k: again[k] for k in c if k != "skipped_unchanged"} == {k: c[k] for k in c if k != "skipped_unchanged"}
    # the records clean like any other: each is kept or removed with a reason
    run_clean(run.cfg, run)
    stats = json.loads((run.dir/"clean"/"stats.json").read_text())
    assert stats["counts"]["rows_in"] == 9 and stats["counts"]["invariant_ok"]

def test_scans_without_ocr_are_dead_letters(tmp_path):
    write_documents(tmp_path/"in")
    for src, why in [(dict(ocr="off"), "ocr is off"),
                     (dict(ocr_lang="xx_none"), "tesseract has no language data for xx_none")]:
        run, c = ingest_documents(tmp_path, root=f"runs-{why}", **src)
        assert (c["doc_pages_ocr"], c["doc_pages_dead"]) == (0, 1)
        (line, reason), = dead_letters(run)["report.pdf"]
        assert line == 4 and reason.startswith("needs_ocr: page 3 has images but no text layer, and " + why)

def test_chinese_scans_and_partial_text_layers_are_ocrd(tmp_path):
    "A Chinese scan (chi_sim), and a page with typed text under a scanned stamp: every word of both comes back."
    assert cjk_font(), "the Chinese scan needs a CJK font to be drawn: apt-get install fonts-noto-cjk"
    assert documents.ocr_unavailable("chi_sim+eng") is None, documents.ocr_unavailable("chi_sim+eng")
    (tmp_path/"in").mkdir()
    sample_pdf(tmp_path/"in"/"合同.pdf", [{"scan": "商品质量很好"}, {"scan": "APPROVED", "text": "Typed under the stamp."}])
    run, c = ingest_documents(tmp_path, ocr_lang="chi_sim+eng")
    assert (c["doc_pages"], c["doc_pages_ocr"], c["quarantined"]) == (2, 2, 0), c
    recs = pq.read_table(run.dir/"ingest"/"parts").to_pandas().sort_values("line")
    texts = [re.sub(r"\s+", "", t) for t in recs.text]  # Tesseract sets Chinese characters apart with spaces
    assert texts == ["商品质量很好", "Typedunderthestamp.APPROVED"], recs.text.tolist()
    assert [json.loads(m)["ocr"] for m in recs.meta] == [True, True]
    # without OCR the typed text of the partial page is kept, and its unread image is a dead letter
    run, c = ingest_documents(tmp_path, root="runs-off", ocr="off")
    assert pq.read_table(run.dir/"ingest"/"parts").column("text").to_pylist() == ["Typed under the stamp."]
    assert [(line, reason.split(",")[0]) for line, reason in dead_letters(run)["合同.pdf"]] == [
        (1, "needs_ocr: page 1 has images but no text layer"),
        (2, "needs_ocr: page 2 has text and 1 image(s) without a text layer (11% of the page)")]
