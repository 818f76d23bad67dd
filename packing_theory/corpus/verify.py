"""Verify seed-002 token shards against their manifest, telling "problem found" from "could not measure".

Seed 002 §10 gates a published mix on a verifier that recounts everything
from the bytes; §11 learned to separate a finding from a check that did not
run (its audit exits 6 on a finding and 7 when it did not measure). Here:

* **found** (exit 1): a missing shard; a file shorter than its header,
  truncated, or with trailing bytes; a header that disagrees with the
  manifest; malformed offsets (not starting at 0, decreasing — e.g. two
  swapped entries — an empty document, a last offset that is not the token
  count); an id ``>= vocab``; a token recount that differs from the manifest;
  a sha256 mismatch; a shard with fewer distinct sources than required
  (:mod:`~packing_theory.corpus.mixture`), or source counts (tokens) that do
  not add up to its documents (tokens); a cursor probe that does
  not reconstruct its document boundary;
* **not measured** (exit 3): a shard that exists but cannot be read
  (permissions, a directory), a manifest without the sha256 or the source
  counts a check needs, probes that had nothing to probe;
* otherwise exit 0. A finding wins over "not measured": a clean report is
  only possible when every check ran.

Cursor probes: ``probes`` random token positions (seeded) are mapped to the
document that contains them; its boundary ``(shard_index, token_offset)`` must
round-trip through the cursor (:class:`~packing_theory.corpus.cursor.ShardDocuments`),
the document read back from the raw file bytes at that offset must equal the
one the reader returns, it must start with ``bos_id`` when the manifest names
one, and a cursor inside the document must be refused.

>>> import os, tempfile
>>> from packing_theory.corpus.manifest import write_shards
>>> d = tempfile.mkdtemp()
>>> _ = write_shards(d, [[0, 5], [0, 6, 7], [0, 8]], vocab=9, shard_tokens=4, sources="aba", bos_id=0)
>>> report = verify_shards(os.path.join(d, "manifest.json"), probes=10)
>>> report.status, report.probes_passed, report.tokens_recounted
(0, 10, 7)
>>> with open(os.path.join(d, "shard-00001.bin"), "ab") as f:
...     _ = f.write(b"\\0\\0")
>>> report = verify_shards(os.path.join(d, "manifest.json"))
>>> report.status, report.found[0].check
(1, 'size')
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._checks import check_int, file_identity
from .._files import outside
from ..errors import InputError
from .cursor import ShardDocuments
from .manifest import file_sha256, read_manifest
from .mixture import MixtureSummary, shard_mixture
from .shards import HEADER, Shard, read_shard

__all__ = [
    "EXIT_FOUND",
    "EXIT_OK",
    "EXIT_UNMEASURED",
    "EXIT_USAGE",
    "ShardProblem",
    "VerifyReport",
    "verify_shards",
]

EXIT_OK, EXIT_FOUND, EXIT_USAGE, EXIT_UNMEASURED = 0, 1, 2, 3
"""The CLI's exit-code contract: nothing found, found, bad usage or input, could not measure."""


@dataclass(frozen=True)
class ShardProblem:
    """One result line: ``check`` (a short tag), the shard it concerns (or ``"*"``), and a message."""

    check: str
    shard: str
    message: str

    def line(self, kind: str) -> str:
        """The one-line form: ``KIND shard: check: message``."""
        return f"{kind} {self.shard}: {self.check}: {self.message}"


@dataclass
class VerifyReport:
    """What :func:`verify_shards` checked, found and could not measure."""

    manifest: str
    shards: int = 0
    shards_ok: int = 0
    tokens_recounted: int = 0
    out_of_range_ids: int = 0
    sha_ok: int = 0
    probes_requested: int = 0
    probes_passed: int = 0
    distinct_sources_min: int | None = None
    distinct_sources_median: float | None = None
    distinct_sources_max: int | None = None
    min_sources_required: int | None = None
    mixture: MixtureSummary | None = None
    found: list[ShardProblem] = field(default_factory=list)
    unmeasured: list[ShardProblem] = field(default_factory=list)

    @property
    def status(self) -> int:
        """1 if anything was found, else 3 if anything was not measured, else 0."""
        if self.found:
            return EXIT_FOUND
        return EXIT_UNMEASURED if self.unmeasured else EXIT_OK

    def lines(self) -> list[str]:
        """One line per finding and per unmeasured check, then a summary line."""
        out = [f.line("FOUND") for f in self.found] + [f.line("NOT MEASURED") for f in self.unmeasured]
        verdict = {
            EXIT_OK: "clean",
            EXIT_FOUND: f"{len(self.found)} problem(s) found",
            EXIT_UNMEASURED: f"{len(self.unmeasured)} check(s) not measured",
        }[self.status]
        out.append(
            f"{self.shards_ok}/{self.shards} shards sound, {self.tokens_recounted} tokens recounted, "
            f"sha256 {self.sha_ok}/{self.shards}, {self.out_of_range_ids} out-of-range ids, "
            f"{self.probes_passed}/{self.probes_requested} cursor probes, distinct sources per shard "
            f"min {self.distinct_sources_min} median {_num(self.distinct_sources_median)} max "
            f"{self.distinct_sources_max} (at least {self.min_sources_required} required): {verdict} "
            f"(exit {self.status})"
        )
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (with ``status``)."""
        return {
            "manifest": self.manifest,
            "status": self.status,
            "shards": self.shards,
            "shards_ok": self.shards_ok,
            "tokens_recounted": self.tokens_recounted,
            "out_of_range_ids": self.out_of_range_ids,
            "sha_ok": self.sha_ok,
            "probes_requested": self.probes_requested,
            "probes_passed": self.probes_passed,
            "distinct_sources_min": self.distinct_sources_min,
            "distinct_sources_median": self.distinct_sources_median,
            "distinct_sources_max": self.distinct_sources_max,
            "min_sources_required": self.min_sources_required,
            "mixture": None if self.mixture is None else self.mixture.to_dict(),
            "found": [vars(f) for f in self.found],
            "unmeasured": [vars(f) for f in self.unmeasured],
        }


def _num(x: float | None) -> str:
    """A median for the summary line: ``7`` rather than ``7.0``, ``7.5`` as is."""
    return "None" if x is None else (str(int(x)) if float(x).is_integer() else str(x))


def _count_bad_ids(shard: Shard, chunk: int = 1 << 24) -> tuple[int, int]:
    """Number of ids ``>= vocab`` and the first one's index (-1 if none). O(tokens), memory O(chunk)."""
    bad, first = 0, -1
    for lo in range(0, shard.n_tokens, chunk):
        part = np.asarray(shard.ids[lo : lo + chunk]) >= shard.vocab
        n = int(part.sum())
        if n and first < 0:
            first = lo + int(np.argmax(part))
        bad += n
    return bad, first


def verify_shards(
    manifest_path: str | os.PathLike[str],
    *,
    probes: int = 40,
    seed: int = 0,
    min_sources: int | None = None,
    check_sources: bool = True,
) -> VerifyReport:
    """Check every shard of a manifest; return a :class:`VerifyReport` (its ``status`` is the exit code).

    Args:
        manifest_path: the ``manifest.json``.
        probes: random cursor probes (seeded by ``seed``).
        min_sources: distinct sources every shard must hold; default: half
            the distinct sources of the whole manifest, rounded down, at least
            1 (:func:`~packing_theory.corpus.mixture.default_min_sources`;
            seed 002's floor, 7 of 15).
        check_sources: check distinct sources per shard (needs ``source_counts``).

    Complexity: O(bytes) (hashing and the id scan read every byte once more).

    Raises:
        FileNotFoundError, ValueError: the manifest itself is missing or malformed (bad input), or
            ``min_sources`` below 1 or above the mix's distinct sources.
    """
    manifest = read_manifest(manifest_path)
    probes = check_int("probes", probes, 0)
    seed = check_int("seed", seed, 0)  # numpy refuses a negative seed deep inside the probes
    if not check_sources and min_sources is not None:
        raise InputError(f"min_sources={min_sources} applies to the distinct-sources check, which is off "
                         "(--min-sources with --no-sources)")
    # refuse a gate that cannot apply before reading any shard
    mixture = shard_mixture(manifest, min_sources=min_sources) if check_sources else None
    root = os.path.dirname(os.path.abspath(manifest_path))
    rep = VerifyReport(manifest=os.fspath(manifest_path), shards=len(manifest["shards"]))
    opened: dict[int, Shard] = {}
    recount_complete = True
    listed: dict[tuple[int, int] | str, int] = {}  # file identity -> first shards[] index naming it
    for k, entry in enumerate(manifest["shards"]):
        name = entry["path"]
        path = os.path.join(root, name)
        outside = _outside(root, name)
        if outside is not None:
            rep.found.append(ShardProblem("path", name, outside))
            recount_complete = False
            continue
        identity = file_identity(path)
        if identity in listed:
            first = listed[identity]
            rep.found.append(ShardProblem(
                "duplicate", name, f"shards[{k}] names the file shards[{first}] names: "
                                     "its documents would be read twice"))
            recount_complete = False
            continue
        listed[identity] = k
        if not os.path.exists(path):
            rep.found.append(ShardProblem("missing", name, f"listed in the manifest, not on disk ({path})"))
            recount_complete = False
            continue
        try:
            shard = read_shard(path)
        except ValueError as exc:
            rep.found.append(ShardProblem(_tag(str(exc)), name, str(exc).split(": ", 1)[-1]))
            recount_complete = False
            continue
        except OSError as exc:
            rep.unmeasured.append(ShardProblem("read", name, f"cannot read the file: {exc}"))
            recount_complete = False
            continue
        ok = True
        if shard.vocab != manifest["vocab"]:
            rep.found.append(
                ShardProblem("header", name, f"vocab={shard.vocab}, the manifest says {manifest['vocab']}")
            )
            ok = False
        if shard.n_docs != entry["n_docs"]:
            rep.found.append(
                ShardProblem("header", name, f"n_docs={shard.n_docs}, the manifest says {entry['n_docs']}")
            )
            ok = False
        rep.tokens_recounted += shard.n_tokens
        if shard.n_tokens != entry["n_tokens"]:
            rep.found.append(
                ShardProblem(
                    "recount",
                    name,
                    f"{shard.n_tokens} tokens in the file, the manifest says {entry['n_tokens']}",
                )
            )
            ok = False
        bad, first = _count_bad_ids(shard)
        if bad:
            rep.out_of_range_ids += bad
            rep.found.append(
                ShardProblem(
                    "ids",
                    name,
                    f"{bad} id(s) >= vocab={shard.vocab}, first at ids[{first}]={int(shard.ids[first])}",
                )
            )
            ok = False
        if "sha256" not in entry:
            rep.unmeasured.append(ShardProblem("sha256", name,
                                               "the manifest records no sha256 for this shard"))
        else:
            digest = file_sha256(path)
            if digest != entry["sha256"]:
                rep.found.append(
                    ShardProblem(
                        "sha256",
                        name,
                        f"file hashes to {digest[:16]}…, the manifest says {str(entry['sha256'])[:16]}…",
                    )
                )
                ok = False
            else:
                rep.sha_ok += 1
        opened[k] = shard
        rep.shards_ok += ok
    listed_docs = sum(int(e["n_docs"]) for e in manifest["shards"])
    if listed_docs != manifest["n_docs"]:
        rep.found.append(ShardProblem(
            "recount", "*", f"the shards list {listed_docs} documents, the manifest's "
                                 f"n_docs says {manifest['n_docs']}"))
    if recount_complete and rep.tokens_recounted != manifest["n_tokens"]:
        rep.found.append(
            ShardProblem(
                "recount",
                "*",
                f"{rep.tokens_recounted} tokens in the shards, the manifest says {manifest['n_tokens']}",
            )
        )
    if check_sources:
        assert mixture is not None
        _check_sources(manifest, rep, mixture)
    _probe(manifest, root, opened, rep, probes, seed)
    return rep


def _tag(message: str) -> str:
    if "offsets" in message or "is empty" in message:
        return "offsets"
    if "bytes" in message:
        return "size"
    if "vocab" in message:
        return "header"
    return "shard"


def _check_sources(manifest: dict[str, Any], rep: VerifyReport, mix: MixtureSummary) -> None:
    counts = [s.get("source_counts") for s in manifest["shards"]]
    if not any(c is not None for c in counts):
        rep.unmeasured.append(
            ShardProblem(
                "sources", "*", "the manifest records no source_counts (pass --no-sources to skip this check)"
            )
        )
        return
    rep.mixture = mix
    rep.min_sources_required = mix.min_sources
    for name in mix.unrecorded:
        rep.unmeasured.append(ShardProblem("sources", name, "the manifest records no source_counts"))
    for entry in manifest["shards"]:
        c = entry.get("source_counts")
        if c is None:
            continue
        for field_name, total, unit in (("source_counts", entry["n_docs"], "documents"),
                                        ("source_tokens", entry["n_tokens"], "tokens")):
            values = entry.get(field_name)
            if values is None:
                continue
            n = sum(int(v) for v in values.values())
            if n != total:
                rep.found.append(
                    ShardProblem("sources", entry["path"],
                            f"{field_name} add up to {n} {unit}, the shard holds {total}")
                )
    below = set(mix.below)
    for m in mix.shards:
        if m.path in below:
            rep.found.append(
                ShardProblem(
                    "sources",
                    m.path,
                    f"{m.distinct} distinct source(s), at least {mix.min_sources} required "
                    f"(of {len(mix.sources)} in the mix)",
                )
            )
    rep.distinct_sources_min = mix.distinct_min
    rep.distinct_sources_median = mix.distinct_median
    rep.distinct_sources_max = mix.distinct_max


def _probe(
    manifest: dict[str, Any], root: str, opened: dict[int, Shard], rep: VerifyReport, probes: int, seed: int
) -> None:
    rep.probes_requested = probes
    if not probes:
        return
    vocabs = sorted({shard.vocab for shard in opened.values()})
    if len(vocabs) > 1:  # each odd header is a finding above; the corpus is not one stream to probe
        rep.unmeasured.append(ShardProblem(
            "probes", "*", f"cursor probes need one vocabulary, the shards have "
                                      f"{vocabs}"))
        return
    if len(opened) != len(manifest["shards"]):
        rep.unmeasured.append(
            ShardProblem(
                "probes",
                "*",
                f"cursor probes need every shard readable ({len(manifest['shards']) - len(opened)} are not)",
            )
        )
        return
    docs = ShardDocuments([os.path.join(root, s["path"]) for s in manifest["shards"]])
    sizes = np.array([opened[k].n_tokens for k in range(len(opened))], dtype=np.float64)
    if sizes.sum() == 0:
        rep.unmeasured.append(ShardProblem("probes", "*", "the shards hold no token to probe"))
        return
    rng = np.random.default_rng(seed)
    bos = manifest.get("bos_id")
    for _ in range(probes):
        k = int(rng.choice(len(sizes), p=sizes / sizes.sum()))
        shard = opened[k]
        name = manifest["shards"][k]["path"]
        t = int(rng.integers(0, shard.n_tokens))
        offsets = shard.offsets
        i = int(np.searchsorted(offsets, t, side="right")) - 1
        boundary, end = int(offsets[i]), int(offsets[i + 1])
        problem = None
        d = int(docs.doc_starts[k]) + i
        if docs.locate(d) != (k, boundary) or docs.position_of(k, boundary) != d:
            problem = f"cursor ({k}, {boundary}) does not round-trip to document {d}"
        else:
            with open(os.path.join(root, name), "rb") as fh:
                fh.seek(HEADER.size + 4 * (shard.n_docs + 1) + 2 * boundary)
                raw = np.frombuffer(fh.read(2 * (end - boundary)), dtype="<u2")
            if not np.array_equal(raw, docs[d]):
                problem = (
                    f"document at cursor ({k}, {boundary}) read from the bytes differs from the reader's"
                )
            elif bos is not None and int(raw[0]) != bos:
                problem = (
                    f"document at cursor ({k}, {boundary}) starts with id {int(raw[0])}, not bos_id={bos}"
                )
            elif t != boundary and _accepts(docs, k, t):
                problem = f"cursor ({k}, {t}) inside a document was accepted"
        if problem is None:
            rep.probes_passed += 1
        else:
            rep.found.append(ShardProblem("probe", name, problem))


def _outside(root: str, name: str) -> str | None:
    """Why the manifest path ``name`` is not a file of the manifest's own directory tree (``None``: it is)."""
    reason = outside(root, name)
    if reason is None:
        return None
    if reason == "is an absolute path":
        return "an absolute path: a manifest lists its shards relative to its own directory"
    return f"{reason.removeprefix('is ')}, outside the manifest's directory {os.path.realpath(root)}"


def _accepts(docs: ShardDocuments, k: int, t: int) -> bool:
    try:
        docs.position_of(k, t)
    except ValueError:
        return False
    return True
