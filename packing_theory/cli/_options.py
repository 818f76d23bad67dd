"""The one table of the command line's options: every option of every command, by name.

A command picks its options from :data:`OPTIONS` by name
(``add_options(parser, "capacity", "seq-length", ...)``); nothing else adds an
option, so a name has one type (with its range: :mod:`packing_theory.cli._types`),
one metavar, one help text, one default and one set of choices in every
command (``tests/cli/test_options.py`` walks every parser to check it). The
only default that differs between commands is ``--out`` (``<command>-report``).

Options of one *exclusive group* (``--capacity`` / ``--seq-length``; the
horizon; the inputs) are mutually exclusive; the input group is required.
Older spellings kept for one release are further flags of the same option
(``--field`` and ``--text-column`` for ``--column``; ``--n`` for ``--gram-length``); the
aliases ``--lengths``, ``--shards``, ``--text`` and ``--parquet`` name ``--data`` with its format
(:func:`packing_theory.cli._inputs.data_spec`).

The module imports nothing heavy (``packing-theory --help`` loads it): the
constants below copy a few of the library's, and a test checks each copy
against its source.

>>> import argparse
>>> p = argparse.ArgumentParser(prog="packing-theory demo")
>>> add_options(p, "capacity", "seq-length", "out")
>>> p.parse_args(["--capacity", "9"]).capacity, p.parse_args([]).out
(9, 'demo-report')
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._types import (
    counts,
    document_id,
    existing_path,
    float_range,
    int_list,
    int_range,
    peer_option,
    policy_list,
    refill,
)

__all__ = ["COPIED_CONSTANTS", "EXCLUSIVE", "OPTIONS", "OUT_DEFAULTS", "SECTIONS", "Option", "add_options",
           "option_for"]

# ----------------------------------------------------------------------------- copies of library constants

ENGINES = ("fast", "compiled", "reference")
FORMATS = ("lengths", "megatron", "olmo", "hf", "mds", "jsonl", "text", "parquet", "shards")
BOS_CHOICES = ("auto", "add", "included")
SOURCE_FROM = ("dir", "file")
DOCUMENTS_FILES = ("documents.csv", "documents.parquet")
MIXTURE_BLOCKS = 20
DRIFT_THRESHOLD = 0.25
AUTORESEARCH_ROWS = 243_968
ROW_GROUP_SIZE = 1024
COMPARE_DEMO_DOCUMENTS = 50_000
DEALS = ("blocks", "interleaved")
FRAMEWORKS = ("axolotl", "trl", "foundry", "torchtune", "megatron", "nanochat", "autoresearch", "parcae")
MAX_PADDING, MAX_CUT, MAX_BLEND_GAP = 0.05, 0.005, 0.02
DOCUMENTS_LIMIT = 100_000
GRAM_LENGTH = 13
MEMORY_GRAMS = 8_388_608
EXCLUDE_RULES = ("any", "majority")

COPIED_CONSTANTS: dict[str, tuple[str, Any]] = {
    "ENGINES": ("packing_theory.engine.replay:ENGINES", ENGINES),
    "FORMATS": ("packing_theory.corpus.readers:FORMATS", FORMATS),
    "BOS_CHOICES": ("packing_theory.corpus.text:BOS_CHOICES", BOS_CHOICES),
    "SOURCE_FROM": ("packing_theory.corpus.labels:SOURCE_FROM", SOURCE_FROM),
    "DOCUMENTS_FILES": ("packing_theory.orchestration.audit:DOCUMENTS_FILES", DOCUMENTS_FILES),
    "MIXTURE_BLOCKS": ("packing_theory.audit.source_series:DEFAULT_BLOCKS", MIXTURE_BLOCKS),
    "DRIFT_THRESHOLD": ("packing_theory.audit.source_series:DRIFT_THRESHOLD", DRIFT_THRESHOLD),
    "AUTORESEARCH_ROWS": ("packing_theory.orchestration.audit:AUTORESEARCH_ROWS", AUTORESEARCH_ROWS),
    "ROW_GROUP_SIZE": ("packing_theory.distributed.ranks:NANOCHAT_ROW_GROUP_SIZE", ROW_GROUP_SIZE),
    "COMPARE_DEMO_DOCUMENTS": ("packing_theory.orchestration.demo:COMPARE_DEMO_DOCUMENTS",
                               COMPARE_DEMO_DOCUMENTS),
    "DOCUMENTS_LIMIT": ("packing_theory.audit.documents:DOCUMENTS_DEFAULT_LIMIT", DOCUMENTS_LIMIT),
    "DEALS": ("packing_theory.training.schedule:DEALS", DEALS),
    "FRAMEWORKS": ("packing_theory.configs:FRAMEWORKS", FRAMEWORKS),
    "MAX_PADDING": ("packing_theory.configs:Thresholds().padding", MAX_PADDING),
    "MAX_CUT": ("packing_theory.configs:Thresholds().tails_cut", MAX_CUT),
    "MAX_BLEND_GAP": ("packing_theory.configs:Thresholds().blend", MAX_BLEND_GAP),
    "GRAM_LENGTH": ("packing_theory.contamination:DEFAULT_N", GRAM_LENGTH),
    "MEMORY_GRAMS": ("packing_theory.contamination:DEFAULT_MEMORY_GRAMS", MEMORY_GRAMS),
    "EXCLUDE_RULES": ("packing_theory.contamination:EXCLUDE_RULES", EXCLUDE_RULES),
}
"""Each constant this module copies (so that ``--help`` imports no engine): ``(module:name, value)``."""

MAX_ROW_WIDTH = 2**24
"""The widest row ``--capacity`` takes (16,777,216 tokens, far above any context length in use): some
packers' work grows with the row width, and every target index stays an exact ``int64``."""

MAX_PERMUTATIONS = 1000
"""The most startup permutations ``--permutations`` takes (each is a whole replay per policy)."""

# ----------------------------------------------------------------------------- the table

SECTIONS: dict[str, str] = {
    "input": "input: one corpus, and how it is read",
    "sources": "data sources: labels, the declared mixture, the cleaning funnel",
    "references": "reference texts, and how the training documents are matched against them",
    "packers": "packers and their settings (`packing-theory policies` lists every packer and its options)",
    "horizon": "horizon: where every packer is cut (one of)",
    "execution": "where the work runs",
    "report": "output",
}
"""Argument-group titles, by section."""

OUT_DEFAULTS: dict[str, str | None] = {"reconcile": None, "doctor": None}
"""``--out``'s default where it is not ``<command>-report`` (``None``: no report directory unless asked)."""

EXCLUSIVE: dict[str, bool] = {"input": True, "width": False, "horizon": False, "documents": False,
                              "family": False}
"""Mutually exclusive groups, and whether one of each is required."""


@dataclass(frozen=True)
class Option:
    """One option of the table: its flags (the first is its name; the others older spellings) and the
    keyword arguments of ``add_argument``."""

    flags: tuple[str, ...]
    help: str
    type: Callable[[str], Any] | None = None
    default: Any = None
    metavar: str | None = None
    choices: tuple[Any, ...] | None = None
    nargs: str | int | None = None
    action: str | None = None
    const: Any = None
    dest: str | None = None
    section: str | None = None
    exclusive: str | None = None
    required: bool = False
    key: str | None = None

    @property
    def name(self) -> str:
        """The table's key: the first flag without its dashes (``key`` where that names another option:
        ``--manifest`` is ``shard-manifest``, beside ``verify-shards``' positional ``manifest``)."""
        return self.key or self.flags[0].lstrip("-")

    def kwargs(self, command: str) -> dict[str, Any]:
        """The keyword arguments of ``add_argument`` for this option in ``command``."""
        out: dict[str, Any] = {"help": self.help}
        default = OUT_DEFAULTS.get(command, f"{command}-report") if self.name == "out" else self.default
        if self.action is not None:
            out["action"] = self.action
        if self.action not in ("store_true", "store_false"):
            for key in ("type", "metavar", "choices", "nargs", "const"):
                value = getattr(self, key)
                if value is not None:
                    out[key] = value
        if self.dest is not None and self.flags[0].startswith("-"):
            out["dest"] = self.dest
        if self.required:
            out["required"] = True
        if self.flags[0].startswith("-") or default is not None:
            out["default"] = default
        if self.name == "out":
            out["help"] = self.help.replace("DEFAULT", f"./{default}" if default else
                                            "none, the report is printed; with DIR also written there")
        return out


def _o(*flags: str, help: str, **kw: Any) -> Option:
    return Option(tuple(flags), help, **kw)


_SHARD = "token shard files (the format of packing_theory.corpus.write_shard)"

_TABLE: tuple[Option, ...] = (
    # ------------------------------------------------------------------ input
    _o("--data", nargs="+", metavar="PATH", section="input", exclusive="input",
       help="input files, directories or glob patterns in any supported format (see --format)"),
    _o("--files-from", metavar="FILE", section="input", exclusive="input",
       help="like --data, with the paths read from FILE (one per line; '-' is standard input)"),
    _o("--lengths", type=existing_path("--lengths"), metavar="FILE.npy", section="input", exclusive="input",
       help="the same as --data FILE.npy --format lengths: a 1-D integer .npy array of BOS-inclusive "
            "document lengths (names from a census.json beside it)"),
    _o("--shards", nargs="+", type=existing_path("--shards"), metavar="SHARD", section="input",
       exclusive="input", help=f"the same as --data SHARD... --format shards: {_SHARD}"),
    _o("--text", nargs="+", type=existing_path("--text"), metavar="FILE", section="input", exclusive="input",
       help="the same as --data FILE... --format text (one document per file, or per line with --per-line); "
            ".parquet files: --format parquet"),
    _o("--parquet", nargs="+", type=existing_path("--parquet"), metavar="FILE", section="input",
       exclusive="input", help="the same as --data FILE... --format parquet (the text column: --column)"),
    _o("--demo", action="store_true", default=False, section="input", exclusive="input",
       help="run the command's demo on the library's built-in data (the command's description says what)"),
    _o("--counts", type=counts, metavar="T=N[,T=N...]", section="input", exclusive="input",
       help="instead of a corpus: documents per pass at each length threshold, e.g. 16384=789,32768=196"),
    _o("--sources", nargs="+", type=existing_path("--sources"), metavar="SHARD", section="input",
       exclusive="input", help=f"evaluation documents: {_SHARD}"),
    _o("--manifest", key="shard-manifest", type=existing_path("--manifest"), metavar="MANIFEST.json",
       section="input", exclusive="input",
       help="a shard manifest (written by write_shards): the token shard files it lists, in its order (a "
            "shard holding one source names its documents' source)"),
    _o("--format", default="auto", choices=("auto", *FORMATS), section="input",
       help="the format of --data (default auto: detected from the paths, and said)"),
    _o("--column", "--field", "--text-column", metavar="NAME", section="input", dest="column",
       help="the field or column holding the documents (jsonl and parquet: text; hf: input_ids, else text; "
            "mds: tokens, input_ids or text). --field and --text-column are its older spellings, accepted "
            "for one release"),
    _o("--bos", choices=BOS_CHOICES, section="input",
       help="how BOS is counted. Token formats (megatron, olmo, hf, mds ids) need it: 'included' = each "
            "stored document already holds its BOS or EOS (length = stored tokens), 'add' = one more token "
            "per document. Text: 'auto' (default) asks the tokenizer on a probe whether it prepends BOS"),
    _o("--eos-id", type=int_range("--eos-id", 0), metavar="ID", section="input",
       help="olmo data: the EOS id ending each document (default: its .csv.gz metadata)"),
    _o("--dtype", metavar="DTYPE", section="input",
       help="olmo data: the ids' dtype of a raw array (uint16, uint32); mds: of a bytes column"),
    _o("--split", metavar="NAME", section="input", help="hf data: the split of a saved DatasetDict"),
    _o("--tokenizer", metavar="SPEC", section="input",
       help="text inputs: bytes (UTF-8 bytes, default), chars, whitespace, or module:callable returning "
            "token ids (found from the working directory too)"),
    _o("--per-line", action="store_true", default=False, section="input",
       help="text files: one document per non-blank line (default: one per file)"),
    _o("--encoding", metavar="NAME", section="input", help="text files: their encoding (default utf-8)"),
    _o("--errors", choices=("strict", "replace", "skip"), section="input",
       help="a text file that does not decode: strict (default) stops at the first, naming it; replace "
            "decodes bad bytes as U+FFFD; skip (census only) leaves it out, listed in census.json"),
    _o("--universal-newlines", action="store_true", default=False, section="input",
       help="text: read with newline translation (\\r\\n and \\r as \\n); by default the bytes are read as "
            "they are, so a bytes count is the file's size"),
    # ------------------------------------------------------------------ data sources
    _o("--labels", type=existing_path("--labels"), metavar="FILE", section="sources",
       help="one source label per document, one per line (or a .json list), in the corpus's order"),
    _o("--labels-manifest", type=existing_path("--labels-manifest"), metavar="MANIFEST", section="sources",
       help="a shard manifest or a census.json: each document's source is its shard's (with --shards, the "
            "manifest's shards in its order; a census's inputs by --source-from, default dir)"),
    _o("--source-column", metavar="NAME", section="sources",
       help="JSON Lines, parquet or Hugging Face data: the field or column holding each document's source"),
    _o("--source-from", choices=SOURCE_FROM, section="sources",
       help="a document's source is the directory (dir) or the file (file) it was read from"),
    _o("--mixture", type=existing_path("--mixture"), metavar="FILE", section="sources",
       help="the declared mixture (JSON or YAML): per source 'alpha' (sampling frequencies of documents, "
            "summing to 1), 'tokens' (token targets), or both"),
    _o("--funnel", type=existing_path("--funnel"), metavar="FILE", section="sources",
       help="the cleaning funnel (JSON or YAML): ordered stages with their outcome masks, id lists or "
            "columns; the corpus given is the raw one, the packers replay what the funnel keeps, and every "
            "document keeps its raw index"),
    _o("--mixture-blocks", type=int_range("--mixture-blocks", 1), metavar="N", section="sources",
       help=f"blocks of rows for the realised share over time (default {MIXTURE_BLOCKS})"),
    _o("--drift-threshold", type=float_range("--drift-threshold", 0, 1), metavar="X", section="sources",
       help=f"flag a drift statistic D above X (default {DRIFT_THRESHOLD})"),
    # ------------------------------------------------------------------ references
    _o("--reference", nargs="+", action="extend", required=True, metavar="FILE", section="references",
       help="reference sets (repeatable): plain text files or .parquet files; the library ships no "
            "benchmark"),
    _o("--reference-column", metavar="COL[,COL...]", section="references",
       help="parquet references: the columns holding strings or lists of strings (default text)"),
    _o("--reference-per-line", action="store_true", default=False, section="references",
       help="plain-text references: one item per non-blank line (default: the whole file is one item)"),
    _o("--reference-rows", type=int_list("--reference-rows", 0), metavar="N[,N...]", section="references",
       help="the declared rows of each --reference, in order (a dataset server's size); a reference that "
            "yields another number is not measured"),
    _o("--gram-length", "--n", type=int_range("--gram-length", 1), default=GRAM_LENGTH, metavar="N",
       section="references",
       help=f"window length in tokens: every N-token window of a training document is looked up among the "
            f"references' (default {GRAM_LENGTH}). --n is its older spelling, accepted for one release"),
    _o("--memory-grams", type=int_range("--memory-grams", 1), default=MEMORY_GRAMS, metavar="G",
       section="references",
       help=f"the most reference grams held in memory at once (default {MEMORY_GRAMS:,}, about 12 bytes "
            "each); beyond, the index goes to disk and the inputs are scanned once per pass"),
    _o("--index-dir", metavar="DIR", section="references",
       help="where a disk index goes (a fresh subdirectory, removed afterwards; default: the system's "
            "temporary directory); on a shared filesystem for a Dask --executor"),
    _o("--exclude", choices=EXCLUDE_RULES, default="any", section="references",
       help="which documents the exclusion mask marks: any (default: a document with any matched window) "
            "or majority (more than half of its windows matched)"),
    # ------------------------------------------------------------------ packers
    _o("--policy", type=policy_list, action="extend", metavar="P[,P...]", section="packers",
       help="packers by name, comma-separated and repeatable: streaming policies and framework packers "
            "(`packing-theory policies`); a command that replays one packer takes one. Default: discard "
            "(compare: every packer; the demos: their own)"),
    _o("--capacity", type=int_range("--capacity", 2, MAX_ROW_WIDTH), metavar="R", section="packers",
       exclusive="width",
       help="row width R: the tokens of every row, for every packer (a packer whose framework packs other "
            "widths is refused: give --seq-length). Default: --seq-length 2048"),
    _o("--seq-length", type=int_range("--seq-length", 1, MAX_ROW_WIDTH - 1), metavar="L", section="packers",
       exclusive="width",
       help="instead of --capacity: the trained positions L of a row; each packer's row width follows from "
            "its framework's rule (streaming and Megatron R = L + 1, TRL R = L; `packing-theory policies`). "
            "Default 2048"),
    _o("--min-buffer", type=int_range("--min-buffer", 1), metavar="B", section="packers",
       help="minimum buffer occupancy B of the streaming policies; the protected set of every packer is "
            "counted at B (default 1000)"),
    _o("--refill", type=refill, metavar="N[,N...]", section="packers",
       help="streaming policies: refill batch size, or a sequence of sizes (default 128)"),
    _o("--passes", type=int_range("--passes", 1), metavar="N", section="packers",
       help="streaming policies: corpus passes, with a persistent buffer (default 1)"),
    _o("--drain", action="store_true", default=False, section="packers",
       help="streaming policies: when the stream cannot refill to B, keep selecting until the buffer is "
            "empty (outside the theorem) instead of stopping"),
    _o("--seed", type=int_range("--seed", 0), metavar="N", section="packers",
       help="the seed of the command's random draws: of every measured packer that draws at random "
            "(random-span, a framework's seed option), or of the probe positions (verify-shards, default 0)"),
    _o("--max-wait", type=int_range("--max-wait", 0), metavar="A", section="packers",
       help="bounded-wait: force the oldest unstarted span at a row start once it has waited more than A "
            "rows (default 16); only with --policy bounded-wait"),
    _o("--engine", choices=ENGINES, default="fast", section="packers",
       help="fast (default, pure Python), compiled (numba: pip install 'packing-theory[fast]'; the streaming "
            "policies' compiled engine and the framework packers' numpy columns) or the naive reference; "
            "the figures are the same"),
    _o("--window", type=int_range("--window", 1), metavar="N", section="packers",
       help="every measured packer with a window option (TRL: the datasets.map batch packed together, "
            "default 1000)"),
    _o("--epochs", type=int_range("--epochs", 1), metavar="N", section="packers",
       help="every measured packer with an epochs option"),
    _o("--framework-version", metavar="VERSION", section="packers",
       help="every measured packer with a framework_version option: the version whose behaviour is "
            "replayed (default: the newest supported)"),
    _o("--peer-option", type=peer_option, action="append", metavar="POLICY:KEY=VALUE", section="packers",
       help="any other option of a packer, by name, e.g. trl-bfd:window=500 (repeatable; KEY=VALUE without "
            "the packer: every measured packer that takes KEY)"),
    # ------------------------------------------------------------------ horizon
    _o("--rows", type=int_range("--rows", 0), metavar="N", section="horizon", exclusive="horizon",
       help="cut every packer after N rows"),
    _o("--targets", type=int_range("--targets", 0), metavar="N", section="horizon", exclusive="horizon",
       help="cut every packer after ceil(N / (R - 1)) rows"),
    _o("--tokens", type=int_range("--tokens", 0), metavar="N", section="horizon", exclusive="horizon",
       help="cut every packer at the end of the row where its placed document tokens reach N"),
    _o("--natural-end", action="store_true", default=False, section="horizon", exclusive="horizon",
       help="let every packer run to its own end (packers are then not cut like for like)"),
    _o("--common-horizon", action="store_true", default=False, section="horizon", exclusive="horizon",
       help="cut every packer once it has placed the most tokens that every packer reaches (the fewest any "
            "packer places at its natural end)"),
    # ------------------------------------------------------------------ execution
    _o("--workers", type=int_range("--workers", 0), default=1, metavar="N", section="execution",
       help="processes for the tasks (default 1: in this process; 0: one per CPU); never more than the CPUs "
            "or the tasks (said on standard error when capped); the result is the same"),
    _o("--executor", default="local", metavar="SPEC", section="execution",
       help="where the tasks run: local (default; --workers processes) or dask://HOST:PORT "
            "(pip install 'packing-theory[distributed]')"),
    _o("--world-size", type=int_range("--world-size", 1), metavar="W", section="execution",
       help="the W data-parallel ranks of the run: audit each rank's stream as nanochat's loader feeds "
            "it (rank r reads row groups r, r + W, ...; streaming policies only), or read each rank's "
            "ledger (default: one rank)"),
    _o("--row-group-size", type=int_range("--row-group-size", 1), default=ROW_GROUP_SIZE, metavar="N",
       section="execution",
       help=f"documents per row group of an input without row groups of its own, for --world-size (default "
            f"{ROW_GROUP_SIZE}); parquet files use their real row groups"),
    _o("--retries", type=int_range("--retries", 0), default=1, metavar="N", section="execution",
       help="extra attempts per task (default 1)"),
    # ------------------------------------------------------------------ output
    _o("--out", metavar="DIR", section="report",
       help="report directory (default: DEFAULT), checked and locked before anything runs; the report's "
            "files are swapped in together"),
    _o("--force", action="store_true", default=False, section="report",
       help="replace report-named files in --out that packing-theory did not write"),
    _o("--no-plots", action="store_true", default=False, section="report",
       help="skip the PNG plots (the previous run's plots are removed)"),
    _o("--documents", nargs="?", const=DOCUMENTS_FILES[0], choices=DOCUMENTS_FILES, metavar="FILE",
       section="report", exclusive="documents",
       help=f"write the per-document table (one row per document and packer) into --out: documents.csv "
            f"(the default file) or documents.parquet (the parquet extra); without it, documents.csv when "
            f"the corpus has at most {DOCUMENTS_LIMIT:,} documents"),
    _o("--no-documents", action="store_true", default=False, section="report", exclusive="documents",
       help="never write the per-document table"),
    _o("--json", action="store_true", default=False, section="report",
       help="print the result as JSON on standard output (a report's JSON document, as written)"),
    _o("--markdown", nargs="?", const="-", metavar="FILE", section="report",
       help="the report as Markdown: on standard output (no FILE), or written into FILE"),
    _o("--no-progress", action="store_true", default=False, section="report",
       help="never show a progress bar (shown by default on a terminal)"),
    # ------------------------------------------------------------------ one command's own options
    _o("document", type=document_id, metavar="DOC", nargs="?",
       help="the document: its name (a record's id, as documents.csv's name column writes it: exact, else a "
            "unique whole-component path suffix) or its raw index (0-based, its position in the corpus as "
            "read, before any funnel). Digits are the document of that name when one has it exactly, else "
            "the raw index; --index N always means the index"),
    _o("--index", type=int_range("--index", 0), metavar="N",
       help="the document by its raw index (0-based, before any funnel), never by name: instead of DOC"),
    _o("manifest", type=existing_path("MANIFEST.json"), metavar="MANIFEST.json",
       help="the shard manifest (written by write_shards)"),
    _o("ledgers", nargs="+", type=existing_path("LEDGER"), metavar="LEDGER",
       help="the training ledger file(s): one per rank, or one merged"),
    _o("--corpus", type=existing_path("--corpus"), metavar="FILE",
       help="the documents as the trainer saw them, BOS included, in raw corpus order: .npz (arrays tokens, "
            "offsets) or .jsonl (one JSON list of token ids per line)"),
    _o("--rows-per-step", type=int_range("--rows-per-step", 1), default=1, metavar="B",
       help="packed rows one rank consumes per optimizer step: micro-batch size x gradient accumulation "
            "(default 1)"),
    _o("--deal", choices=DEALS, default="blocks",
       help="how rows reach ranks: blocks (Megatron's sampler, accelerate's sharding; default) or "
            "interleaved (torch DistributedSampler)"),
    _o("--permutation", type=existing_path("--permutation"), metavar="FILE.npy",
       help="the sampler's order over the rows (a shuffling sampler's indices)"),
    _o("--config", type=existing_path("--config"), metavar="FILE", required=True,
       help="your training framework's config (YAML, JSON, or a Megatron argument list: Axolotl, TRL, LLM "
            "Foundry, torchtune, Megatron, nanochat, autoresearch, Parcae), mapped onto the packer that "
            "replays it; the mapping (every key used, and every key ignored with why) is printed on "
            "standard error"),
    _o("--framework", choices=FRAMEWORKS,
       help="the framework of --config (default: its framework: key, or detected from its keys)"),
    _o("--prompt-lengths", type=existing_path("--prompt-lengths"), metavar="FILE.npy",
       help="per document, the offset of its first trained token (prompt-masked training)"),
    _o("--max-padding", type=float_range("--max-padding", 0, 1), default=MAX_PADDING, metavar="SHARE",
       help=f"padding share of row positions that is a finding (default {MAX_PADDING})"),
    _o("--max-cut", type=float_range("--max-cut", 0, 1), default=MAX_CUT, metavar="SHARE",
       help=f"share of tokens cut from started documents that is a finding (default {MAX_CUT})"),
    _o("--max-blend-gap", type=float_range("--max-blend-gap", 0, 1), default=MAX_BLEND_GAP, metavar="SHARE",
       help=f"distance of a realised share from its weight that is a finding (default {MAX_BLEND_GAP})"),
    _o("--unit", choices=("row", "sequence", "position"),
       help="which positions the trainer predicts (default: the packer's declared rule)"),
    _o("--demo-documents", type=int_range("--demo-documents", 1), metavar="N",
       help=f"--demo: the documents of the default corpus replayed (default {COMPARE_DEMO_DOCUMENTS:,})"),
    _o("--scale", type=float_range("--scale", 0, 1, open_low=True), default=1.0, help=argparse.SUPPRESS),
    _o("--permutations", type=int_range("--permutations", 0, MAX_PERMUTATIONS), default=20, metavar="N",
       help="startup-delay permutations per streaming policy (default 20; 0 skips them)"),
    _o("--permutation-seed", type=int_range("--permutation-seed", 0), default=0, metavar="N",
       help="seed of the startup permutations (default 0)"),
    _o("--eval-lengths", type=existing_path("--eval-lengths"), metavar="FILE.npy",
       help="an evaluation stream: its BOS-inclusive lengths (.npy)"),
    _o("--eval-shards", nargs="+", type=existing_path("--eval-shards"), metavar="SHARD",
       help=f"an evaluation stream: {_SHARD}"),
    _o("--eval-targets", type=int_range("--eval-targets", 1), metavar="N",
       help="the evaluation stream's budget in targets (default 20,971,520)"),
    _o("--eval-prefixes", type=int_list("--eval-prefixes"), metavar="T[,T...]",
       help="shorter evaluation budgets also checked (default 2097152,10485760, those within the budget)"),
    _o("--originals", action="store_true", default=False,
       help="with --policy segment-first, protect the original documents (the proposition's hypotheses "
            "fail; violations are expected) instead of the segmented spans (vacuous: no span is long)"),
    _o("--no-buffer-summary", action="store_true", default=False,
       help="do not rebuild the buffer for the violation report (slightly faster)"),
    _o("--pass", type=int_range("--pass", 0), default=0, metavar="K", dest="pass_index",
       help="which pass of a multi-pass run (default 0)"),
    _o("--thresholds", type=int_list("--thresholds"), metavar="T[,T...]",
       help="thresholds of the table (default: the --counts keys, or powers of two above R up to the "
            "longest document, and the longest)"),
    _o("--probes", type=int_range("--probes", 0), default=40, metavar="N",
       help="random cursor probes (default 40)"),
    _o("--min-sources", type=int_range("--min-sources", 1), metavar="K",
       help="distinct sources every shard must hold (default: half of the mix's distinct sources, rounded "
            "down, at least 1); a shard below it is a finding"),
    _o("--no-sources", action="store_true", default=False, help="skip the distinct-sources check"),
    _o("--shares", action="store_true", default=False,
       help="also print each shard's distinct sources and the share of each source (documents, and tokens "
            "where the manifest records them); --json always includes them"),
    _o("--hashes", action="store_true", default=False,
       help="also write doc_bytes.npy and doc_hashes.npy (64-bit BLAKE2b of each document)"),
    _o("--model", action="append", metavar="NAME=module:attribute",
       help="a model (repeat; at least two): an object keeping the NllFn contract"),
    _o("--baseline", metavar="NAME", help="the reference model (default: the first --model, or policy)"),
    _o("--token-bytes", type=existing_path("--token-bytes"), metavar="FILE.npy",
       help="byte length of every token id (.npy, special tokens 0)"),
    _o("--exclude-shards", nargs="+", type=existing_path("--exclude-shards"), metavar="SHARD",
       help="training shards: evaluation documents equal to one of theirs are excluded"),
    _o("--kinds", default="beginning,tail", metavar="K[,K...]",
       help="window kinds of the main comparison (default beginning,tail)"),
    _o("--context", type=int_range("--context", 1), default=2048, metavar="C",
       help="natural-tail and census context (default 2048)"),
    _o("--stride", type=int_range("--stride", 1), default=512, metavar="S",
       help="census stride (default 512)"),
    _o("--natural-targets", type=int_range("--natural-targets", 1), default=512, metavar="K",
       help="targets of a natural tail (default 512)"),
    _o("--per-stratum", type=int_range("--per-stratum", 1), metavar="N",
       help="documents per length stratum at most (default 256; demo 64)"),
    _o("--sample-seed", type=int_range("--sample-seed", 0), default=147018, metavar="N",
       help="seed of the stratified sample (default 147018)"),
    _o("--census", action="store_true", default=False, help="also score every window of every document"),
    _o("--census-limit", type=int_range("--census-limit", 1), metavar="N",
       help="the whole-document census over the first N candidates only (default all; demo 1000)"),
    _o("--family-strata", default="4097–8192,8193–16384", metavar="S[,S...]",
       help="strata of the declared tail − beginning family (default 4097–8192,8193–16384)"),
    _o("--contrast", action="append", metavar="MODEL:BASELINE", exclusive="family",
       help="a pair of the declared family, MODEL minus BASELINE (repeat; default: every model minus the "
            "baseline), crossed with --family-strata"),
    _o("--family", type=existing_path("--family"), metavar="FILE.json", exclusive="family",
       help='the declared family as JSON: {"pairs": [[MODEL, BASELINE], ...], "strata": [...]} or '
            '{"contrasts": [{"model", "baseline", "stratum", "kind", "minus"}, ...]}'),
    _o("--natural-contexts", metavar="C[,C...]|none",
       help="contexts of the natural-context assay with its prefix-region control (default C/2,C: "
            "1024,2048; 'none' skips it)"),
    _o("--natural-above", type=int_range("--natural-above", 0), metavar="N",
       help="natural tails from documents longer than N tokens (default 2(R-1): 4096)"),
    _o("--ranking", type=existing_path("--ranking"), metavar="ROWS.npz",
       help="row-level statistics (arrays 'bytes', optional 'targets', one per-row NLL array per "
            "checkpoint) for the prefix ranking check"),
    _o("--ranking-prefixes", metavar="T[,T...]",
       help="ranking prefixes in targets (default 262144,2097152,10485760)"),
    _o("--ranking-subsets", type=int_range("--ranking-subsets", 1), default=1000, metavar="N",
       help="uniform row subsets per prefix (default 1000)"),
    _o("--ranking-seed", type=int_range("--ranking-seed", 0), default=0, metavar="N",
       help="seed of the ranking subsets (default 0)"),
    _o("--replicates", type=int_range("--replicates", 1), default=10_000, metavar="N",
       help="bootstrap replicates (default 10000)"),
    _o("--bootstrap-seed", type=int_range("--bootstrap-seed", 0), default=0, metavar="N",
       help="bootstrap seed (default 0)"),
    _o("--level", type=float_range("--level", 0, 1, open_low=True, open_high=True), default=0.95,
       metavar="X", help="familywise level (default 0.95)"),
    _o("--batch-size", type=int_range("--batch-size", 1), default=16, metavar="N",
       help="windows per model call (default 16)"),
    _o("--train-rows", type=int_range("--train-rows", 1), metavar="N",
       help="--demo: training rows per policy (default 3000)"),
    _o("--eval-candidates", type=int_range("--eval-candidates", 1), metavar="N",
       help="--demo: evaluation candidates (default 20000)"),
    _o("--debug", action="store_true", default=argparse.SUPPRESS,
       help="print the traceback of an internal error (exit status 3)"),
)

OPTIONS: dict[str, Option] = {o.name: o for o in _TABLE}
"""Every option of every command, by name."""


def option_for(flag: str) -> Option:
    """The table's option with the flag (or positional name) ``flag``.

    Raises:
        KeyError: no option has that flag.
    """
    for o in OPTIONS.values():
        if flag in o.flags:
            return o
    raise KeyError(f"no option {flag!r} in the table")


def add_options(parser: argparse.ArgumentParser, *names: str, optional: tuple[str, ...] = ()) -> None:
    """Add the options ``names`` of :data:`OPTIONS` to ``parser`` (in that order, grouped by section).

    The command's name (the last word of ``parser.prog``) sets ``--out``'s default. ``optional``:
    exclusive groups, or required options, that this command does not require (``doctor`` reads a
    blend's corpus from its config; ``--config`` is optional outside ``doctor``).

    Raises:
        KeyError: a name that is not in the table.
    """
    command = parser.prog.split()[-1]
    groups: dict[str, Any] = parser.__dict__.setdefault("_pt_groups", {})
    for name in names:
        opt = OPTIONS[name]
        target: Any = parser
        if opt.section is not None:
            key = f"section:{opt.section}"
            if key not in groups:
                groups[key] = parser.add_argument_group(SECTIONS[opt.section])
            target = groups[key]
        if opt.exclusive is not None:
            key = f"exclusive:{opt.exclusive}"
            if key not in groups:
                required = EXCLUSIVE[opt.exclusive] and opt.exclusive not in optional
                groups[key] = target.add_mutually_exclusive_group(required=required)
            target = groups[key]
        kwargs = opt.kwargs(command)
        if name in optional:
            kwargs.pop("required", None)
        target.add_argument(*opt.flags, **kwargs)
