"""Per-document ``.u8`` masks: applying one keeps exactly the unmarked documents; wrong sizes are refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from packing_theory.corpus.masks import (
    MASK_FORMAT,
    apply_mask,
    check_sidecar,
    iter_masked,
    mask_bytes,
    mask_sidecar,
    read_mask,
    read_sidecar,
    write_mask,
)
from packing_theory.errors import InputError, InputTypeError

pairs = st.lists(st.tuples(st.integers(1, 10**6), st.booleans()), max_size=50)


@given(pairs=pairs)
def test_apply_and_iter_keep_exactly_the_unmarked_documents(pairs: list[tuple[int, bool]]) -> None:
    lengths = [n for n, _ in pairs]
    mask = np.array([int(x) for _, x in pairs], dtype=np.uint8)
    kept = [n for n, excluded in pairs if not excluded]
    assert apply_mask(np.array(lengths, dtype=np.int64), mask).tolist() == kept
    assert list(iter_masked(iter(lengths), mask)) == kept
    assert mask_bytes(mask) == bytes(int(x) for _, x in pairs)
    assert apply_mask(lengths, mask.astype(bool)).tolist() == kept


def test_round_trip_with_sidecar(tmp_path: Path) -> None:
    lengths = np.array([4, 9, 1, 7])
    mask = np.array([0, 1, 1, 0])
    sidecar = mask_sidecar(mask, lengths, mask_name="m.u8", inputs=[{"path": "a.bin", "documents": 4}],
                           order="as listed", stage={"name": "decontamination"})
    write_mask(tmp_path / "m.u8", mask, sidecar=sidecar)
    assert (tmp_path / "m.u8").read_bytes() == b"\x00\x01\x01\x00"
    back = read_mask(tmp_path / "m.u8", documents=4)
    side = read_sidecar(tmp_path / "m.u8.json")
    assert side["format"] == MASK_FORMAT and side["excluded"] == 2 and side["fingerprint"]["n_tokens"] == 21
    check_sidecar(side, lengths, back)
    assert apply_mask(lengths, back).tolist() == [4, 7]
    with pytest.raises(InputError, match="made for other documents: lengths_sha256 is '"):
        check_sidecar(side, np.array([4, 9, 7, 1]))
    with pytest.raises(InputError, match="made for other documents: n_docs is 3 here, the sidecar says 4"):
        check_sidecar(side, np.array([4, 9, 8]))
    with pytest.raises(InputError, match="the mask has 4 entries and 1 exclusions, the sidecar says 4 and 2"):
        check_sidecar(side, lengths, np.array([0, 1, 0, 0]))


def test_wrong_masks_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="mask has 2 entries for 3 documents"):
        apply_mask([3, 4, 5], [0, 1])
    with pytest.raises(InputError, match="the length stream ended after 2 documents, the mask covers 3"):
        list(iter_masked([3, 4], [0, 0, 1]))
    with pytest.raises(InputError, match="the length stream has more than the mask's 1 documents"):
        list(iter_masked([3, 4], [0]))
    with pytest.raises(InputError, match=r"mask\[1\]=2: a mask holds only 0 \(keep\) and 1 \(exclude\)"):
        mask_bytes([0, 2])
    with pytest.raises(InputTypeError, match="mask must hold 0/1 integers, got dtype float64"):
        mask_bytes([0.0, 1.0])
    with pytest.raises(InputError, match="mask must be 1-D"):
        mask_bytes([[0, 1]])
    (tmp_path / "bad.u8").write_bytes(b"\x00\x07")
    with pytest.raises(InputError, match=r"mask '.*bad.u8'\[1\]=7"):
        read_mask(tmp_path / "bad.u8")
    (tmp_path / "ok.u8").write_bytes(b"\x00\x01")
    with pytest.raises(InputError, match="has 2 entries for 3 documents"):
        read_mask(tmp_path / "ok.u8", documents=3)
    (tmp_path / "side.json").write_text(json.dumps({"format": "other"}))
    with pytest.raises(InputError, match="is not a packing-theory/document-mask document"):
        read_sidecar(tmp_path / "side.json")
    (tmp_path / "side.json").write_text(json.dumps({"format": MASK_FORMAT, "version": 1}))
    with pytest.raises(InputError, match="lacks the field 'mask'"):
        read_sidecar(tmp_path / "side.json")
    with pytest.raises(InputError, match="mask has 1 entries for 2 documents"):
        mask_sidecar([0], [1, 2], mask_name="x", inputs=[], order="")
