"""Write the reader fixtures of ``tests/data/readers/`` with the formats' own libraries.

``python tools/reader_fixtures.py olmo OUT`` writes an OLMo-core token array
with ai2-olmo-core's ``write_array_to_disk`` and its metadata file with
``write_document_indices``, and records OLMo-core's own document ranges
(``iter_document_indices`` on the array) beside the documents written.
``python tools/reader_fixtures.py mds OUT`` writes two MDS datasets with
mosaicml-streaming's ``MDSWriter`` (uncompressed in several shards, and
zstd-compressed). Each directory gets ``expected.json``: the documents as
written (token ids, texts) and the library versions.

Neither library installs next to this project's numpy (>= 2.2) and
datasets/transformers versions, so the fixtures were generated once in a
separate virtual environment (Python 3.11, numpy 2.1.3, torch 2.13/2.14 CPU,
ai2-olmo-core 3.0.0, mosaicml-streaming 0.13.0) and committed; the tests read
them with this project's readers (the MDS tests need ``streaming`` and skip
without it).
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

EOS = 50279
SEED = 20261201


def _documents(n: int, rng: np.random.Generator, shortest: int = 0) -> list[list[int]]:
    return [rng.integers(1, 50000, int(rng.integers(shortest, 30))).tolist() for _ in range(n)]


def olmo(out: str) -> None:
    """An OLMo-core raw uint16 token array, EOS after every document, 3 trailing ids, and its metadata."""
    from importlib.metadata import version
    from pathlib import Path

    from olmo_core.data.utils import iter_document_indices, write_array_to_disk, write_document_indices

    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(SEED)
    docs = _documents(200, rng)
    flat = [t for d in docs for t in [*d, EOS]]
    path = Path(out) / "part-0-00000.npy"
    write_array_to_disk(np.array([*flat, 7, 8, 9], dtype=np.uint16), path)
    # the metadata file ranges the documents only (OLMo-core writes it from the EOS positions)
    write_document_indices(path, dtype=np.uint16, eos_token_id=EOS)
    ranges = [list(map(int, r)) for r in iter_document_indices(path, eos_token_id=EOS, dtype=np.uint16)]
    _expected(out, {"documents": docs, "eos_id": EOS, "dtype": "uint16", "trailing": [7, 8, 9],
                    "olmo_core_ranges": ranges, "library": f"ai2-olmo-core {version('ai2-olmo-core')}"})


def mds(out: str) -> None:
    """Two MDS datasets: token ids and text in several uncompressed shards, and one zstd-compressed."""
    from importlib.metadata import version

    from streaming import MDSWriter

    rng = np.random.default_rng(SEED + 1)
    docs = _documents(300, rng, shortest=1)  # MDS cannot encode an empty array
    texts = ["".join(chr(97 + t % 26) for t in d) + (" é" if k % 7 == 0 else "") for k, d in enumerate(docs)]
    for name, compression, limit in (("plain", None, 1 << 12), ("zstd", "zstd", 1 << 26)):
        target = os.path.join(out, name)
        with MDSWriter(out=target, columns={"tokens": "ndarray:uint16", "text": "str"},
                       compression=compression, size_limit=limit) as writer:
            for d, t in zip(docs, texts, strict=True):
                writer.write({"tokens": np.array(d, dtype=np.uint16), "text": t})
    _expected(out, {"documents": docs, "texts": texts,
                    "library": f"mosaicml-streaming {version('mosaicml-streaming')}"})


def _expected(out: str, doc: dict[str, object]) -> None:
    with open(os.path.join(out, "expected.json"), "w", encoding="utf-8") as fh:
        json.dump(doc, fh, separators=(",", ":"))
        fh.write("\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("olmo", "mds"))
    parser.add_argument("out")
    args = parser.parse_args()
    {"olmo": olmo, "mds": mds}[args.kind](args.out)


if __name__ == "__main__":
    main()
