"""Every ``--data`` format that holds token ids or text, scanned: the naive scan's counts, names and sources.

Each fixture is written by the format's own library (``datasets``'
``save_to_disk``, megatron-core's ``IndexedDatasetBuilder``, pyarrow,
zstandard) with reference spans planted in known documents; the lengths
the mask is fingerprinted with are the ones ``audit --data`` reads
(:func:`packing_theory.corpus.readers.open_data`, same options).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from packing_theory.contamination import CorpusInput, ReferenceSpec, scan_contamination
from packing_theory.contamination.inputs import input_blocks
from packing_theory.corpus.readers import open_data
from packing_theory.errors import InputError
from tests.contamination.corpora import (
    N,
    Planted,
    ids_tokenizer,
    planted,
    write_hf,
    write_jsonl,
    write_megatron,
    write_olmo,
    write_parquet,
)


def _scan(p: Planted, inp: CorpusInput, tmp: Path, **kw: Any) -> Any:
    refs = p.write_references(tmp / "refs.txt")
    return scan_contamination([inp], [ReferenceSpec(str(refs), per_line=True)], tokenizer=ids_tokenizer, n=N,
                              **kw)


def _check(rep: Any, p: Planted, *, names: list[str], sources: list[str] | None, lengths: Any) -> None:
    expected = p.expected()
    assert rep.status == 1 and rep.reasons == []
    assert [h.index for h in rep.hit_documents] == [i for i, m in enumerate(expected) if m] == p.planted
    assert [h.matched_grams for h in rep.hit_documents] == [m for m in expected if m]
    assert [h.name for h in rep.hit_documents] == [names[i] for i in p.planted]
    assert [h.source for h in rep.hit_documents] == (
        [None] * len(p.planted) if sources is None else [sources[i] for i in p.planted])
    assert rep.documents_scanned == len(p.docs) and rep.matched_grams == sum(expected)
    if sources is not None:
        got = {k: (v.documents, v.documents_with_any_hit, v.matched_grams)
               for k, v in rep.source_records.items()}
        assert got == p.per_source() and rep.unattributed.documents == 0
    else:
        assert rep.unattributed.documents == len(p.docs) and rep.source_records == {}
    assert rep.mask is not None and np.flatnonzero(rep.mask).tolist() == p.planted
    assert rep.lengths is not None and rep.lengths.tolist() == np.asarray(lengths).tolist()


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.zst"])
def test_jsonl_with_a_source_field(tmp_path: Path, suffix: str) -> None:
    if suffix.endswith(".zst"):
        pytest.importorskip("zstandard")
    p = planted(1)
    path = write_jsonl(p, tmp_path / f"c{suffix}")
    rep = _scan(p, CorpusInput(str(path), "jsonl", source_column="source"), tmp_path)
    reader = open_data([str(path)], "jsonl", tokenizer=ids_tokenizer)
    _check(rep, p, names=p.names, sources=p.sources, lengths=reader.lengths())
    assert rep.sources_origin == "the inputs"


def test_parquet_and_a_saved_text_dataset(tmp_path: Path) -> None:
    p = planted(2)
    path = write_parquet(p, tmp_path / "c.parquet")
    rep = _scan(p, CorpusInput(str(path), "parquet", source_column="source"), tmp_path)
    _check(rep, p, names=p.names, sources=p.sources,
           lengths=open_data([str(path)], "parquet", tokenizer=ids_tokenizer).lengths())
    hf = write_hf(p, tmp_path / "hf-text", tokenized=False)
    rep = _scan(p, CorpusInput(str(hf), "hf"), tmp_path)  # no source column: unattributed
    _check(rep, p, names=p.names, sources=None,
           lengths=open_data([str(hf)], "hf", bos="auto", tokenizer=ids_tokenizer).lengths())


def test_a_saved_tokenized_dataset_needs_its_bos_rule(tmp_path: Path) -> None:
    p = planted(3)
    hf = write_hf(p, tmp_path / "hf-ids", tokenized=True)
    rep = _scan(p, CorpusInput(str(hf), "hf", bos="add", source_column="source"), tmp_path)
    _check(rep, p, names=p.names, sources=p.sources, lengths=open_data([str(hf)], "hf", bos="add").lengths())
    with pytest.raises(InputError, match="bos for hf data must be 'included'"):
        _scan(p, CorpusInput(str(hf), "hf"), tmp_path)  # token ids: say how BOS is counted


def test_megatron_indexed_dataset(tmp_path: Path) -> None:
    p = planted(4)
    idx = write_megatron(p, tmp_path / "mix_text_document")
    rep = _scan(p, CorpusInput(str(idx), "megatron", bos="included"), tmp_path)
    prefix = str(tmp_path / "mix_text_document")
    _check(rep, p, names=[f"{prefix}#{i}" for i in range(len(p.docs))], sources=None,
           lengths=open_data([str(idx)], "megatron", bos="included").lengths())
    assert prefix in rep.hit_documents[0].name
    blocks = list(input_blocks(CorpusInput(str(idx), "megatron", bos="add"), ids_tokenizer))
    assert [b.ids[int(b.starts[i]) : int(b.ends[i])].tolist() for b in blocks
            for i in range(b.n_documents)] == p.docs  # read back in one sweep, as megatron-core wrote them


def test_olmo_token_array(tmp_path: Path) -> None:
    p = planted(5)
    path = write_olmo(p, tmp_path / "part-0-00000.npy", eos=0)
    rep = _scan(p, CorpusInput(str(path), "olmo", bos="included", eos_id=0, dtype="uint16"), tmp_path)
    _check(rep, p, names=[f"{path}#{i}" for i in range(len(p.docs))], sources=None,
           lengths=open_data([str(path)], "olmo", bos="included", eos_id=0, dtype="uint16").lengths())
    assert rep.grams_scanned == sum(max(0, len(d) + 1 - N + 1) for d in p.docs)  # the EOS is scanned


def test_text_files_whole_and_per_line(tmp_path: Path) -> None:
    p = planted(6, documents=21)
    (tmp_path / "lines.txt").write_text("\n".join(p.text(i) for i in range(len(p.docs))) + "\n")
    rep = _scan(p, CorpusInput(str(tmp_path / "lines.txt"), "text", per_line=True), tmp_path)
    _check(rep, p, names=[f"{tmp_path / 'lines.txt'}#{i}" for i in range(len(p.docs))], sources=None,
           lengths=[len(d) + 1 for d in p.docs])
    files = []
    for i in range(len(p.docs)):
        files.append(tmp_path / f"d{i:02d}.txt")
        files[-1].write_text(p.text(i))
    refs = p.write_references(tmp_path / "refs.txt")
    rep = scan_contamination([CorpusInput(str(f), "text") for f in files],
                             [ReferenceSpec(str(refs), per_line=True)], tokenizer=ids_tokenizer, n=N)
    assert [h.name for h in rep.hit_documents] == [str(files[i]) for i in p.planted]  # a whole file: its path


def test_bad_columns_and_fields_name_the_input(tmp_path: Path) -> None:
    p = planted(7)
    path = write_parquet(p, tmp_path / "c.parquet")
    with pytest.raises(InputError, match=r"has no source column 'origin' \(--source-column\); columns: "
                                         r"\['id', 'text', 'source'\]"):
        _scan(p, CorpusInput(str(path), "parquet", source_column="origin"), tmp_path)
    jsonl = write_jsonl(p, tmp_path / "c.jsonl")
    with pytest.raises(InputError, match=r"c\.jsonl' line 1: no source field 'origin'"):
        _scan(p, CorpusInput(str(jsonl), "jsonl", source_column="origin"), tmp_path)
    with pytest.raises(InputError, match="a source column applies to parquet, jsonl, hf inputs, not text"):
        CorpusInput("x.txt", "text", source_column="s")
    with pytest.raises(InputError, match="megatron data holds token ids: bos must be 'included' or 'add'"):
        CorpusInput("x.idx", "megatron")
