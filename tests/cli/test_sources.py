"""``audit`` / ``compare`` with source labels, a declared mixture and a cleaning funnel (in this process)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory.cli import main
from packing_theory.corpus import write_shards
from packing_theory.corpus.manifest import SHARD_MANIFEST_NAME
from packing_theory.corpus.masks import read_mask, write_mask

SMALL = ["--capacity", "64", "--min-buffer", "4", "--refill", "4", "--no-plots"]
AUDIT = [*SMALL, "--permutations", "0", "--rows", "60"]


@pytest.fixture()
def corpus(tmp_path: Path) -> dict[str, Any]:
    """Three sources interleaved: short ``a``, medium ``b``, long ``c`` (mostly over the 64-token row)."""
    rng = np.random.default_rng(5)
    names = rng.choice(["a", "b", "c"], 300)
    law = {"a": (2, 12), "b": (10, 60), "c": (40, 300)}
    lengths = np.asarray([rng.integers(*law[n]) for n in names], dtype=np.int64)
    np.save(tmp_path / "lengths.npy", lengths)
    (tmp_path / "labels.txt").write_text("\n".join(names) + "\n")
    stored = {n: int(lengths[names == n].sum()) for n in "abc"}  # declared = the stored token share
    (tmp_path / "mix.json").write_text(json.dumps({"tokens": stored}))
    return {"tmp": tmp_path, "lengths": lengths, "names": names}


def _error(capsys: pytest.CaptureFixture[str], command: str = "audit") -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"packing-theory {command}: error: ")
    return err


def test_audit_reports_the_realised_mixture_per_source(corpus: dict[str, Any],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    tmp = corpus["tmp"]
    status = main(["audit", "--lengths", str(tmp / "lengths.npy"), "--labels", str(tmp / "labels.txt"),
                   "--mixture", str(tmp / "mix.json"), "--policy", "discard,trl-bfd", *AUDIT,
                   "--out", str(tmp / "rep")])
    assert status == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "source drift flagged: " in err[0]
    doc = json.loads((tmp / "rep" / "audit.json").read_text())
    src = doc["sources"]
    assert src["sources"] == ["a", "b", "c"] and src["mixture"]["kind"] == "tokens"
    for p in src["packers"]:
        assert p["reconciles"]
        docs = {a["source"]: a["documents"] for a in p["accounts"]}
        assert docs == {n: int((corpus["names"] == n).sum()) for n in "abc"}
        shares = {s["source"]: s for s in p["shares"]["tokens"]["shares"]}
        if p["policy"] == "discard":  # the long source loses the most to a streaming policy's discards
            assert min(shares.values(), key=lambda s: s["relative_error"])["source"] == "c"
        assert abs(sum(s["share"] for s in shares.values()) - 1) < 1e-9
    # the rest of the report is the audit it always was
    assert [a["packer"] for a in doc["packers"]] == ["discard", "trl-bfd"]
    assert [p["data_sources"]["policy"] for p in doc["packers"]] == ["discard", "trl-bfd"]
    # a packer that misses the declared mixture is named in the headline with its worst source
    head = doc["headline"]
    for p in src["packers"]:
        reading = next((p["shares"][r] for r in ("tokens", "documents") if p["shares"][r]["missed"]), None)
        if reading is None:
            assert f"{p['policy']} (" not in head.partition("the declared mixture was missed by")[2]
            continue
        worst = min((s for s in reading["shares"] if s["absolute_error"] is not None),
                    key=lambda s: (s["absolute_error"], s["source"]))
        assert f"{p['policy']} ({worst['source']}: {worst['share']:.1%} of the " in head
    assert any(p["shares"]["tokens"]["missed"] for p in src["packers"])  # the corpus is built to miss
    md = (tmp / "rep" / "audit.md").read_text()
    assert "## Data sources" in md
    # each table's title says where the run stopped in words, not the engine's code word
    titles = [line for line in md.splitlines() if ": per data source (" in line]
    assert len(titles) == 2 and all(" rows, rows;" not in t and "rows, its row budget reached;" in t
                                    for t in titles)


def test_compare_has_a_sources_section(corpus: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    tmp = corpus["tmp"]
    status = main(["compare", "--lengths", str(tmp / "lengths.npy"), "--labels", str(tmp / "labels.txt"),
                   "--mixture", str(tmp / "mix.json"), "--policy", "discard,continue,axolotl-multipack",
                   *SMALL, "--natural-end", "--out", str(tmp / "cmp")])
    assert status == 0
    doc = json.loads((tmp / "cmp" / "compare.json").read_text())
    assert [p["policy"] for p in doc["sources"]["packers"]] == ["discard", "continue", "axolotl-multipack"]
    # to their natural end (--natural-end), the streaming packers and the peer see every document
    for p in doc["sources"]["packers"]:
        assert sum(a["arrived"] for a in p["accounts"]) == 300 and p["reconciles"]
    assert "## Data sources" in (tmp / "cmp" / "compare.md").read_text()


def test_labels_of_another_length_are_refused_naming_the_file(corpus: dict[str, Any],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    tmp = corpus["tmp"]
    (tmp / "short.txt").write_text("\n".join(corpus["names"][:299]) + "\n")
    status = main(["audit", "--lengths", str(tmp / "lengths.npy"), "--labels", str(tmp / "short.txt"),
                   *AUDIT, "--out", str(tmp / "rep")])
    assert status == 2
    assert f"labels file '{tmp / 'short.txt'}': 299 labels for 300 documents" in _error(capsys)


def test_mixture_without_labels_and_an_undeclared_source_are_refused(
        corpus: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    tmp = corpus["tmp"]
    assert main(["audit", "--lengths", str(tmp / "lengths.npy"), "--mixture", str(tmp / "mix.json"),
                 *AUDIT, "--out", str(tmp / "rep")]) == 2
    assert "--mixture needs source labels" in _error(capsys)
    (tmp / "two.yaml").write_text("alpha:\n  a: 0.5\n  b: 0.5\n")
    assert main(["audit", "--lengths", str(tmp / "lengths.npy"), "--labels", str(tmp / "labels.txt"),
                 "--mixture", str(tmp / "two.yaml"), *AUDIT, "--out", str(tmp / "rep")]) == 2
    assert "source(s) ['c'] that the declared mixture does not name" in _error(capsys)


def test_a_funnel_mask_of_another_length_is_refused(corpus: dict[str, Any],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    tmp = corpus["tmp"]
    write_mask(tmp / "quality.u8", np.zeros(300, np.uint8))
    write_mask(tmp / "dedup.u8", np.zeros(300, np.uint8))  # the dedup stage's input is 290 documents
    ids = list(range(10))
    (tmp / "funnel.json").write_text(json.dumps({"stages": [
        {"name": "quality", "kind": "filter", "mask": "quality.u8"},
        {"name": "drop-first", "kind": "any", "ids": ids},
        {"name": "dedup", "kind": "dedup", "mask": "dedup.u8"}]}))
    status = main(["audit", "--lengths", str(tmp / "lengths.npy"), "--labels", str(tmp / "labels.txt"),
                   "--funnel", str(tmp / "funnel.json"), *AUDIT, "--out", str(tmp / "rep")])
    assert status == 2
    err = _error(capsys)
    assert (f"stage 'dedup': mask '{tmp / 'dedup.u8'}' has 300 entries for the stage's input of 290 "
            "documents") in err


def _planted_manifest(tmp: Path) -> dict[str, Any]:
    """Single-source shards with a reference window planted in known documents (as in the contamination
    tests)."""
    (tmp / "ptok.py").write_text("def encode(text):\n    return [int(x) for x in text.split()]\n")
    rng = np.random.default_rng(11)
    items = [rng.integers(1, 500, size=30).tolist() for _ in range(3)]
    planted = {"web": [2, 7], "math": [0]}
    shards, labels, docs_all = [], [], []
    m: dict[str, Any] = {}
    for source in ("web", "math", "code"):
        docs = [[0, *rng.integers(1, 500, size=int(rng.integers(5, 150))).tolist()] for _ in range(20)]
        for k, i in enumerate(planted.get(source, [])):
            docs[i] = docs[i][:3] + items[k][:14] + docs[i][3:]
        m = write_shards(tmp / "mix" / source, docs, vocab=500, shard_tokens=400, sources=[source] * 20,
                         bos_id=0, prefix=f"{source}-")
        shards += [{**e, "path": f"{source}/{e['path']}"} for e in m["shards"]]
        labels += [source] * 20
        docs_all += docs
    manifest = {**m, "n_docs": 60, "n_tokens": sum(s["n_tokens"] for s in shards), "shards": shards}
    (tmp / "mix" / SHARD_MANIFEST_NAME).write_text(json.dumps(manifest))
    (tmp / "refs.txt").write_text("\n".join(" ".join(map(str, it)) for it in items) + "\n")
    order = [(s, i) for s in ("web", "math", "code") for i in range(20)]
    hit = [j for j, (s, i) in enumerate(order) if i in planted.get(s, [])]
    return {"manifest": tmp / "mix" / SHARD_MANIFEST_NAME, "planted": hit,
            "shards": [str(tmp / "mix" / s["path"]) for s in shards], "labels": labels}


def test_the_contamination_mask_as_a_funnel_stage_removes_exactly_those_documents(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    c = _planted_manifest(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["contamination", "--manifest", str(c["manifest"]), "--reference", "refs.txt",
                 "--reference-per-line", "--tokenizer", "ptok:encode", "--out", "contam"]) == 1
    mask = read_mask(tmp_path / "contam" / "exclude.u8", documents=60)
    assert np.flatnonzero(mask).tolist() == c["planted"]
    (tmp_path / "funnel.yaml").write_text(
        "stages:\n  - name: decontaminate\n    kind: decontamination\n    revision: '13-gram'\n"
        "    parameters: {n: 13}\n    mask: contam/exclude.u8\n")
    (tmp_path / "mix.json").write_text(json.dumps({"tokens": {"web": 1000, "math": 1000, "code": 1000}}))
    capsys.readouterr()
    status = main(["audit", "--shards", *c["shards"], "--labels-manifest", str(c["manifest"]),
                   "--funnel", "funnel.yaml", "--mixture", "mix.json", "--policy", "discard",
                   "--capacity", "64", "--min-buffer", "4", "--refill", "4", "--permutations", "0",
                   "--drain", "--no-plots", "--out", "rep"])
    assert status == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "rep" / "audit.json").read_text())
    f = doc["sources"]["funnel"]
    assert f["raw_documents"] == 60 and f["kept_documents"] == 60 - len(c["planted"])
    assert f["stages"][0]["removed_documents"] == len(c["planted"])
    assert f["stages"][0]["revision"] == "13-gram"
    table = doc["sources"]["packers"][0]["funnel"]
    assert {s: row["documents"][:2] for s, row in table["sources"].items()} == {
        "web": [20, 18], "math": [20, 19], "code": [20, 20]}
    assert table["reconciles"] and all(row["reconciles"] for row in table["sources"].values())
    # the packer replayed exactly the kept documents: the audit's corpus is 60 - 3 documents
    assert doc["corpus"]["documents"] == 57


def test_source_from_dir_and_a_parquet_source_column(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    for src, n in (("web", 30), ("code", 12)):
        (tmp_path / "data" / src).mkdir(parents=True)
        rows = [json.dumps({"text": "x" * (5 + 7 * i)}) for i in range(n)]
        (tmp_path / "data" / src / "part.jsonl").write_text("\n".join(rows) + "\n")
    status = main(["audit", "--data", str(tmp_path / "data"), "--source-from", "dir", *AUDIT, "--drain",
                   "--out", str(tmp_path / "rep")])
    assert status == 0, capsys.readouterr().err
    acc = {a["source"]: a["documents"] for a in
           json.loads((tmp_path / "rep" / "audit.json").read_text())["sources"]["packers"][0]["accounts"]}
    assert acc == {"web": 30, "code": 12}
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"text": ["ab" * k for k in range(1, 21)], "origin": ["u", "v"] * 10}),
                   tmp_path / "t.parquet")
    status = main(["audit", "--data", str(tmp_path / "t.parquet"), "--source-column", "origin", *AUDIT,
                   "--drain", "--out", str(tmp_path / "rep2")])
    assert status == 0, capsys.readouterr().err
    acc = {a["source"]: a["documents"] for a in
           json.loads((tmp_path / "rep2" / "audit.json").read_text())["sources"]["packers"][0]["accounts"]}
    assert acc == {"u": 10, "v": 10}
    capsys.readouterr()
    assert main(["audit", "--data", str(tmp_path / "t.parquet"), "--source-column", "nope", *AUDIT,
                 "--out", str(tmp_path / "rep3")]) == 2
    assert "has no column 'nope'" in _error(capsys)


def test_a_json_lines_source_field_labels_the_audit_as_it_labels_contamination(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--source-column`` reads a JSON Lines field (``contamination`` did; ``audit`` refused it): the
    same accounts as a labels file, the documents still named by file, a record without the field refused
    naming its file and line."""
    rows = [{"text": "x" * (5 + 7 * i), "src": "ab"[i % 3 == 0]} for i in range(40)]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "labels.txt").write_text("".join(r["src"] + "\n" for r in rows))
    docs = ["--documents", "documents.csv"]
    assert main(["audit", "--data", str(tmp_path / "c.jsonl"), "--source-column", "src", *AUDIT, "--drain",
                 *docs, "--out", str(tmp_path / "field")]) == 0, capsys.readouterr().err
    assert main(["audit", "--data", str(tmp_path / "c.jsonl"), "--labels", str(tmp_path / "labels.txt"),
                 *AUDIT, "--drain", *docs, "--out", str(tmp_path / "file")]) == 0, capsys.readouterr().err

    def accounts(out: str) -> list[dict[str, Any]]:
        doc = json.loads((tmp_path / out / "audit.json").read_text())
        return list(doc["sources"]["packers"][0]["accounts"])

    assert accounts("field") == accounts("file")
    assert {a["source"]: a["documents"] for a in accounts("field")} == {"a": 26, "b": 14}
    table = (tmp_path / "field" / "documents.csv").read_text().splitlines()
    assert table[1].split(",")[4:6] == [f"{tmp_path / 'c.jsonl'}#0", "b"]
    (tmp_path / "c.jsonl").write_text(json.dumps(rows[0]) + "\n" + json.dumps({"text": "y"}) + "\n")
    capsys.readouterr()
    assert main(["audit", "--data", str(tmp_path / "c.jsonl"), "--source-column", "src", *AUDIT,
                 "--out", str(tmp_path / "bad")]) == 2
    assert "c.jsonl' line 2: no source field 'src' (--source-column)" in _error(capsys)
    (tmp_path / "c.jsonl").write_text(json.dumps({"text": "y", "src": ["a"]}) + "\n")
    assert main(["audit", "--data", str(tmp_path / "c.jsonl"), "--source-column", "src", *AUDIT,
                 "--out", str(tmp_path / "bad")]) == 2
    assert "line 1: source field 'src' is a list; a source is a string or a number" in _error(capsys)


def test_census_inputs_label_the_census_lengths(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for src, lines in (("web", 12), ("code", 5)):
        (tmp_path / src).mkdir()
        (tmp_path / src / "part.txt").write_text("".join(f"line {i} of {src}\n" for i in range(lines)))
    assert main(["census", "--text", "web/part.txt", "code/part.txt", "--per-line", "--workers", "1",
                 "--out", "cen"]) == 0
    args = ["audit", "--lengths", "cen/lengths.npy", "--labels-manifest", "cen/census.json",
            "--capacity", "16", "--min-buffer", "2", "--refill", "2", "--permutations", "0", "--drain",
            "--no-plots"]
    assert main([*args, "--out", "rep"]) == 0
    src = json.loads((tmp_path / "rep" / "audit.json").read_text())["sources"]
    assert {a["source"]: a["documents"] for a in src["packers"][0]["accounts"]} == {"web": 12, "code": 5}
    assert main([*args, "--source-from", "file", "--out", "rep2"]) == 0
    src = json.loads((tmp_path / "rep2" / "audit.json").read_text())["sources"]
    assert [a["source"] for a in src["packers"][0]["accounts"]] == ["code/part.txt", "web/part.txt"]
    capsys.readouterr()
    assert main(["audit", "--lengths", "cen/lengths.npy", "--labels", "cen/census.json", "--labels-manifest",
                 "cen/census.json", "--out", "rep3"]) == 2
    assert "give one origin of source labels, got --labels, --labels-manifest" in _error(capsys)


@pytest.mark.parametrize("policy", ["discard", "trl-bfd"])
def test_replay_carries_the_labels_in_its_own_pass(corpus: dict[str, Any], capsys: pytest.CaptureFixture[str],
                                                   policy: str) -> None:
    tmp = corpus["tmp"]
    capsys.readouterr()
    assert main(["replay", "--lengths", str(tmp / "lengths.npy"), "--labels", str(tmp / "labels.txt"),
                 "--mixture", str(tmp / "mix.json"), "--policy", policy, "--capacity", "64",
                 "--min-buffer", "4", *(["--refill", "4"] if policy != "trl-bfd" else []), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    src = doc["sources"]
    assert src["reconciles"] and src["policy"] == policy
    # the per-source trained tokens add up to the replay's own emitted tokens (no BOS is added here)
    assert doc["added_bos_tokens"] == 0
    assert sum(a["trained_tokens"] for a in src["accounts"]) == doc["emitted_tokens"]
    assert sum(a["documents"] for a in src["accounts"]) == 300


def test_world_size_with_labels_accounts_every_rank(corpus: dict[str, Any],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    tmp = corpus["tmp"]
    status = main(["audit", "--lengths", str(tmp / "lengths.npy"), "--labels", str(tmp / "labels.txt"),
                   "--mixture", str(tmp / "mix.json"), "--policy", "discard", *AUDIT, "--world-size", "2",
                   "--row-group-size", "50", "--out", str(tmp / "rep")])
    assert status == 0, capsys.readouterr().err
    doc = json.loads((tmp / "rep" / "audit.json").read_text())
    (ranks,) = doc["ranks"]["sources"]
    assert ranks["world_size"] == 2 and ranks["reconciles"] and len(ranks["ranks"]) == 2
    # every rank's trained tokens are what the per-rank audit says it emitted (no BOS is added by discard)
    for mine, theirs in zip(ranks["ranks"], doc["ranks"]["policies"]["discard"]["ranks"], strict=True):
        assert sum(a["trained_tokens"] for a in mine["accounts"]) == theirs["mass"]["emitted_tokens"]
        assert sum(a["documents"] for a in mine["accounts"]) == theirs["documents"]
        assert mine["rows"] == theirs["rows"]
    assert sum(a["documents"] for a in ranks["accounts"]) == 300
    capsys.readouterr()
    assert main(["audit", "--lengths", str(tmp / "lengths.npy"), "--labels", str(tmp / "labels.txt"),
                 "--funnel", str(tmp / "mix.json"), *AUDIT, "--world-size", "2",
                 "--out", str(tmp / "r2")]) == 2
    assert "--funnel with --world-size" in _error(capsys)


def test_world_size_on_parquet_row_groups(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    texts = ["w" * (3 + i % 17) if i % 3 else "c" * (40 + i % 50) for i in range(120)]
    pq.write_table(pa.table({"text": texts, "origin": ["c" if i % 3 == 0 else "w" for i in range(120)]}),
                   tmp_path / "t.parquet", row_group_size=20)
    status = main(["audit", "--text", str(tmp_path / "t.parquet"), "--source-column", "origin", *AUDIT,
                   "--drain", "--world-size", "3", "--out", str(tmp_path / "rep")])
    assert status == 0, capsys.readouterr().err
    doc = json.loads((tmp_path / "rep" / "audit.json").read_text())
    (ranks,) = doc["ranks"]["sources"]
    assert ranks["reconciles"]
    assert {a["source"]: a["documents"] for a in ranks["accounts"]} == {"c": 40, "w": 80}
    for mine, theirs in zip(ranks["ranks"], doc["ranks"]["policies"]["discard"]["ranks"], strict=True):
        assert sum(a["documents"] for a in mine["accounts"]) == theirs["documents"] == 40
        assert sum(a["trained_tokens"] for a in mine["accounts"]) == theirs["mass"]["emitted_tokens"]
    # the row groups used are the parquet files' own (20 documents each), not --row-group-size's 1024
    assert doc["ranks"]["row_group_size"] is None
    assert doc["ranks"]["row_groups"] == {"from": "parquet", "count": 6, "documents_min": 20,
                                          "documents_max": 20}
    # the headline leads with what the ranks train in lockstep; the single-stream figures say so
    g = doc["ranks"]["policies"]["discard"]["global"]
    lead = f"with --world-size 3, discard trains {g['min_rows']:,} rows on each rank (ranks step in lockstep"
    assert doc["headline"].startswith(lead) and doc["ranks"]["answer"] in doc["headline"]
    assert "; as a single stream (one process reading the whole corpus, not what the ranks train): " \
        "discard " in doc["headline"]
    assert f"{g['never_started_anywhere']:,} documents never started on any rank" in doc["headline"]
    assert "single stream" in doc["ranks"]["note"]
    assert f"audit: {lead}" in capsys.readouterr().err


def test_the_documents_file_names_raw_documents_through_a_funnel(corpus: dict[str, Any],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """With --funnel every row carries the raw corpus index, its source, the raw length; the removed
    documents are rows too, with the stage that removed them; the report's list names raw documents."""
    import csv

    tmp, lengths = corpus["tmp"], corpus["lengths"]
    quality = (np.arange(300) % 7 == 0).astype(np.uint8)
    write_mask(tmp / "quality.u8", quality)
    (tmp / "funnel.json").write_text(json.dumps({"stages": [
        {"name": "quality", "kind": "filter", "mask": "quality.u8"},
        {"name": "drop-first", "kind": "any", "ids": list(range(10))}]}))
    status = main(["audit", "--lengths", str(tmp / "lengths.npy"), "--labels", str(tmp / "labels.txt"),
                   "--funnel", str(tmp / "funnel.json"), *AUDIT, "--out", str(tmp / "rep"),
                   "--documents", "documents.csv"])
    assert status == 0
    with open(tmp / "rep" / "documents.csv", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    removed = {i for i in range(300) if quality[i] or i < 10}
    assert len(rows) == 300
    for r in rows:
        d = int(r["document"])
        assert int(r["length"]) == lengths[d] and r["source"] == corpus["names"][d]
        if d in removed:
            stage = "quality" if quality[d] else "drop-first"
            assert (r["fate"], r["pass"], int(r["removed"])) == (f"removed by {stage}", "-1", lengths[d])
        else:
            assert r["pass"] == "0" and not r["fate"].startswith("removed")
    assert sorted(int(r["document"]) for r in rows) == list(range(300))
    page = json.loads((tmp / "rep" / "audit.json").read_text())
    assert page["packers"][0]["packer"] == "discard"
    listed = page["documents"]["never_started_largest"]
    assert listed and all(d["length"] == lengths[d["document"]]  # raw index, raw length, source: one document
                          and d["source"] == corpus["names"][d["document"]] for d in listed)
    never = [r for r in rows if r["fate"] == "never started"]
    largest_never = max(never, key=lambda r: (int(r["length"]), -int(r["document"])))
    assert listed[0]["document"] == int(largest_never["document"])
    html = (tmp / "rep" / "audit.html").read_text()
    largest = max((r for r in rows if r["fate"] in ("never started", "never reached")),
                  key=lambda r: (int(r["length"]), -int(r["document"])))
    assert f"{int(largest['length']):,}" in html or largest["length"] in html
