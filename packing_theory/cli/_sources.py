"""The data-source options of ``audit`` and ``compare``: labels, the declared mixture, the cleaning funnel.

One origin of source labels (``--labels FILE``, ``--labels-manifest FILE``,
``--source-column NAME`` or ``--source-from dir|file``), and with them
``--mixture FILE`` (the declared α or token targets), ``--funnel FILE`` (the
ordered cleaning stages; the corpus given is then the raw one),
``--mixture-blocks N`` and ``--drift-threshold X``. The report gets a
``sources`` JSON key, a *Data sources* Markdown section and
``source_mixture.png`` (:mod:`packing_theory.rendering.sources`).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np
import numpy.typing as npt

from ..audit.declared import read_mixture
from ..audit.sources import DEFAULT_BLOCKS, DRIFT_THRESHOLD
from ..corpus.funnel import Funnel, FunnelResult
from ..corpus.labels import SOURCE_FROM, SourceLabels
from ..errors import InputError

__all__ = [
    "add_source_options",
    "check_source_options",
    "load_declared",
    "load_funnel",
    "load_labels",
    "run_sources",
    "source_config",
    "wants_sources",
]

_ORIGINS = ("labels", "labels_manifest", "source_column", "source_from")


def add_source_options(parser: argparse.ArgumentParser) -> None:
    """Add the label, mixture and funnel options (a group of their own)."""
    g = parser.add_argument_group("data sources (issue: declared vs realised mixture, cleaning funnel)")
    g.add_argument(
        "--labels",
        metavar="FILE",
        help="one source label per document, one per line (or a .json list), in the corpus's document order",
    )
    g.add_argument(
        "--labels-manifest",
        metavar="MANIFEST",
        help="a seed-002 manifest: each document's source is that of its single-source shard "
        "(with --shards, the shards must be the manifest's, in its order)",
    )
    g.add_argument(
        "--source-column",
        metavar="NAME",
        help="--data parquet / Hugging Face dataset, or --text .parquet: the column holding "
        "each row's source",
    )
    g.add_argument(
        "--source-from",
        choices=SOURCE_FROM,
        help="--data / --shards: a document's source is its directory (dir) or its file (file)",
    )
    g.add_argument(
        "--mixture",
        metavar="FILE",
        help="the declared mixture (JSON or YAML): per source "
        "'alpha' shares summing to 1, or 'tokens' targets",
    )
    g.add_argument(
        "--funnel",
        metavar="FILE",
        help="the cleaning funnel (JSON or YAML): ordered stages with their outcome masks, id "
        "lists or columns; the corpus given is the raw one and the packers replay what "
        "the funnel keeps",
    )
    g.add_argument(
        "--mixture-blocks",
        type=int,
        default=DEFAULT_BLOCKS,
        metavar="N",
        help=f"blocks of rows for the realised share over time (default {DEFAULT_BLOCKS})",
    )
    g.add_argument(
        "--drift-threshold",
        type=float,
        default=DRIFT_THRESHOLD,
        metavar="X",
        help=f"flag a drift statistic D above X (default {DRIFT_THRESHOLD})",
    )


def wants_sources(args: argparse.Namespace) -> bool:
    """Whether a label origin was given."""
    return any(getattr(args, k, None) for k in _ORIGINS)


def check_source_options(args: argparse.Namespace) -> None:
    """Refuse conflicting or dangling source options before anything is read (one line naming them)."""
    given = [f"--{k.replace('_', '-')}" for k in _ORIGINS if getattr(args, k, None)]
    census = bool(args.labels_manifest) and _is_census(args.labels_manifest)
    if census and args.source_from:  # a census's inputs, by directory or by file
        given.remove("--source-from")
    if len(given) > 1:
        raise InputError(f"give one origin of source labels, got {', '.join(given)}")
    if not given:
        dangling = [o for o in ("mixture", "funnel") if getattr(args, o, None)]
        if dangling:
            raise InputError(
                f"--{dangling[0]} needs source labels: give --labels, --labels-manifest, "
                "--source-column or --source-from"
            )
    if args.mixture_blocks < 1:
        raise InputError(f"--mixture-blocks must be >= 1, got {args.mixture_blocks}")
    if not 0 <= args.drift_threshold <= 1:
        raise InputError(f"--drift-threshold must be in [0, 1], got {args.drift_threshold}")
    if given and getattr(args, "demo", False):
        raise InputError(f"{given[0]} labels your corpus; --demo has no source labels")
    if getattr(args, "funnel", None) and getattr(args, "world_size", None) is not None:
        raise InputError(
            "--funnel with --world-size: the per-rank audit reads the raw inputs; apply the "
            "funnel without --world-size"
        )
    if (
        args.source_from
        and not census
        and not (
            getattr(args, "data", None) or getattr(args, "files_from", None) or getattr(args, "shards", None)
        )
    ):
        raise InputError(
            "--source-from needs --data, --files-from or --shards (the files documents come from)"
        )
    if args.source_column and not (
        getattr(args, "data", None) or getattr(args, "files_from", None) or getattr(args, "text", None)
    ):
        raise InputError("--source-column needs --data (parquet, hf) or --text .parquet files")


def _is_census(path: str) -> bool:
    """Whether ``path`` is a census.json (``format`` ``packing-theory/census``), read once here."""
    from .._files import read_json

    try:
        return bool(read_json(path, "--labels-manifest").get("format") == "packing-theory/census")
    except (OSError, ValueError, AttributeError):
        return False  # read_manifest says what is wrong with it


def source_config(args: argparse.Namespace) -> dict[str, Any]:
    """What the source options name, for a report's config hash."""
    keys = (*_ORIGINS, "mixture", "funnel", "mixture_blocks", "drift_threshold")
    return (
        {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}
        if wants_sources(args)
        else {}
    )


def _shard_counts(paths: list[str]) -> list[int]:
    from ..corpus import lengths_from_shards

    return [int(lengths_from_shards([p]).size) for p in paths]


def load_labels(args: argparse.Namespace, documents: int) -> SourceLabels:
    """The source labels the options name, one per document of a corpus of ``documents``.

    Raises:
        InputError: another count of labels (naming the origin and both lengths), a manifest whose
            shards are not the ``--shards`` given, a format without the column.
    """
    from ..corpus.labels import labels_from_column, labels_from_file, labels_from_manifest, labels_from_paths

    if args.labels:
        return labels_from_file(args.labels, documents=documents)
    if args.labels_manifest and _is_census(args.labels_manifest):
        from .._files import read_json
        from ..corpus.labels import labels_from_census

        census = read_json(args.labels_manifest, "--labels-manifest")
        return labels_from_census(
            census, args.source_from or "dir", origin=f"census {args.labels_manifest!r}", documents=documents
        )
    if args.labels_manifest:
        from ..corpus.manifest import read_manifest

        manifest = read_manifest(args.labels_manifest)
        if getattr(args, "shards", None):
            root = os.path.dirname(os.path.abspath(args.labels_manifest))
            listed = [os.path.realpath(os.path.join(root, s["path"])) for s in manifest["shards"]]
            if [os.path.realpath(p) for p in args.shards] != listed:
                raise InputError(
                    f"--shards are not the shards of --labels-manifest {args.labels_manifest!r} in its order"
                )
        return labels_from_manifest(
            manifest, origin=f"manifest {args.labels_manifest!r}", documents=documents
        )
    if args.source_column:
        if getattr(args, "text", None):
            return labels_from_column(list(args.text), args.source_column, documents=documents)
        from ._inputs import data_paths

        paths, fmt, _ = data_paths(args)
        if fmt not in ("parquet", "hf"):
            raise InputError(f"--source-column reads a parquet or Hugging Face column; --data is {fmt}")
        return labels_from_column(
            paths, args.source_column, split=getattr(args, "split", None), documents=documents
        )
    if getattr(args, "shards", None):
        paths = list(args.shards)
        codes = np.repeat(np.arange(len(paths)), _shard_counts(paths))
        return labels_from_paths(paths, codes, args.source_from, documents=documents)
    from ._inputs import load_data

    _, _, reader = load_data(args, quiet=True)
    names, file_codes = reader.sources()
    return labels_from_paths(list(names), file_codes, args.source_from, documents=documents)


def load_funnel(args: argparse.Namespace, lengths: npt.NDArray[np.int64]) -> FunnelResult | None:
    """The ``--funnel`` applied to the raw corpus (``None`` without it)."""
    if not getattr(args, "funnel", None):
        return None
    return Funnel.read(args.funnel).apply(lengths)


def load_declared(args: argparse.Namespace) -> Any:
    """The ``--mixture`` declaration, or ``None``."""
    return read_mixture(args.mixture) if args.mixture else None


def run_sources(
    args: argparse.Namespace,
    raw: npt.NDArray[np.int64],
    labels: SourceLabels,
    funnel: FunnelResult | None,
    config: Any,
    policies: list[str],
    *,
    peer_options: dict[str, dict[str, Any]] | None = None,
    seq_length: int | None = None,
    peer_widths: dict[str, int] | None = None,
    engine: Any = "fast",
) -> Any:
    """The data-source audit of ``raw`` (before the funnel) under ``policies``."""
    from ..orchestration.sources import audit_sources

    return audit_sources(
        raw,
        labels,
        config,
        policies=policies,
        peer_options=peer_options,
        seq_length=seq_length,
        peer_widths=peer_widths,
        engine=engine,
        mixture=load_declared(args),
        funnel=funnel,
        blocks=args.mixture_blocks,
        threshold=args.drift_threshold,
    )


def _row_group_sizes(source: Any, row_group_size: int) -> list[list[int]]:
    """Documents per row group of each file of a per-rank source (as the per-rank audit cuts them)."""
    from ..distributed.ranks import ParquetSource

    if isinstance(source, ParquetSource):
        from ..errors import import_optional

        pq = import_optional("pyarrow.parquet", extra="parquet", purpose="the row groups of parquet inputs")
        out = []
        for p in source.paths:
            meta = pq.ParquetFile(p).metadata
            out.append([meta.row_group(g).num_rows for g in range(meta.num_row_groups)])
        return out
    files = [source] if isinstance(source, np.ndarray) else list(source)
    sizes = []
    for f in files:
        n = int(np.asarray(f).size)
        sizes.append([min(row_group_size, n - i) for i in range(0, n, row_group_size)])
    return sizes


def rank_sources_section(
    args: argparse.Namespace,
    source: Any,
    raw: npt.NDArray[np.int64],
    labels: SourceLabels,
    config: Any,
    policies: list[str],
) -> tuple[list[Any], list[str]]:
    """``--world-size`` with labels: every rank's per-source accounting, merged per policy (JSON and
    Markdown)."""
    from ..orchestration.sources import rank_sources
    from ..reporting.markdown import md_cell, percent, table

    streaming = [p for p in policies if p in _streaming()]
    res = rank_sources(
        raw,
        labels,
        _row_group_sizes(source, args.row_group_size),
        args.world_size,
        config,
        policies=streaming,
        engine=args.engine,
        mixture=load_declared(args),
        blocks=args.mixture_blocks,
        threshold=args.drift_threshold,
    )
    lines = ["", f"### Per rank ({args.world_size} ranks, merged)", ""]
    for r in res:
        shares = {s.source: s for s in r.shares or ()}
        rows = [
            [
                md_cell(a.source),
                f"{a.arrived:,}",
                f"{a.trained_tokens:,}",
                f"{a.never_started:,}",
                percent(shares[a.source].share) if a.source in shares else "–",
            ]
            for a in r.accounts
        ]
        lines += [
            f"{r.policy}: every rank reconciles: {'yes' if r.reconciles else 'NO'}; largest drift "
            f"statistic of a rank: {'–' if r.max_drift is None else f'{r.max_drift:.3f}'}.",
            "",
        ]
        lines += table(["source", "arrived", "trained", "never started", "trained share"], rows, "lrrrr")
        lines.append("")
    return [r.to_dict() for r in res], lines


def _streaming() -> tuple[str, ...]:
    from ..engine.policies import POLICIES

    return tuple(POLICIES)
