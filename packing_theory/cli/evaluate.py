"""``packing-theory evaluate``: the evaluation protocol of *Source Exclusion in Streaming Pretraining*
(the minimum-crop packing audit) for two or more models.

``packing-theory evaluate --demo`` packs the default corpus (with planted
token ids) under ``discard`` and ``segment-first``, fits a trigram model on
each packed stream, and compares them by stratum and position with a
paired-source bootstrap and a whole-source census; it writes
``evaluate.json``, ``evaluate.md`` and PNG interval plots to
``./evaluate-report/`` through the safe report writer (checked and locked
before the computation, swapped in as one unit).

``packing-theory evaluate --sources eval.bin --token-bytes tb.npy
--model base=mypkg.models:base_nll --model new=mypkg.models:new_nll``
evaluates your own models: each ``module:attribute`` names an object that
keeps the :class:`~packing_theory.evaluation.NllFn` contract.

``--contrast MODEL:BASELINE`` (repeat) or ``--family FILE.json`` declares
the contrast family — e.g. each intervention against its same-seed control,
the paper's §5.5: 8 contrasts at 99.375 % — instead of every model against
one baseline; the family's Bonferroni level and every dropped stratum are
printed. ``--natural-contexts`` runs the §5.7 natural-context assay with its
prefix-region control; ``--ranking ROWS.npz`` runs the §5.6 prefix ranking
check on row-level statistics.

Self-contained: everything this command needs beyond the library is in this module.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from typing import Any

from ..errors import InputError
from ._options import add_options
from ._paths import named_inputs

__all__ = ["parse_models", "register", "resolve_model", "run"]


def parse_models(values: list[str] | None) -> dict[str, str]:
    """``["a=m:f", "b=m:g"]`` -> ``{"a": "m:f", "b": "m:g"}``, validated.

    >>> parse_models(["base=pkg.mod:fn", "new=pkg.mod:obj"])
    {'base': 'pkg.mod:fn', 'new': 'pkg.mod:obj'}
    >>> parse_models(["oops"])
    Traceback (most recent call last):
    packing_theory.InputError: --model must be NAME=module:attribute, got 'oops'
    """
    out: dict[str, str] = {}
    for v in values or []:
        name, sep, target = v.partition("=")
        if not sep or not name or ":" not in target:
            raise InputError(f"--model must be NAME=module:attribute, got {v!r}")
        if name in out:
            raise InputError(f"--model names {name!r} twice")
        out[name] = target
    return out


def resolve_model(spec: str) -> Any:
    """Import ``module:attribute`` and return it if it is callable (an NllFn).

    Raises:
        InputError: the module cannot be imported or raises while it is imported, the
            attribute is missing or raises when read, or the object is not callable
            (each naming ``--model`` and ``spec``).
    """
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise InputError(f"--model {spec!r}: cannot import module {module_name!r} ({exc})") from exc
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # the user's module may raise anything while it loads its weights
        raise InputError(f"--model {spec!r}: importing {module_name!r} raised {type(exc).__name__}: "
                         f"{_detail(exc)}") from exc
    obj = module
    for part in attr.split("."):
        try:
            if not hasattr(obj, part):
                raise InputError(f"--model {spec!r}: {module_name} has no attribute {attr!r}")
            obj = getattr(obj, part)
        except (InputError, MemoryError, RecursionError):
            raise
        except Exception as exc:  # a lazy attribute that loads a model on first access
            raise InputError(f"--model {spec!r}: reading {module_name}.{attr} raised "
                             f"{type(exc).__name__}: {_detail(exc)}") from exc
    if not callable(obj):
        raise InputError(f"--model {spec!r}: {module_name}.{attr} is not callable (an NllFn is "
                         f"nll_fn(input_ids, segment_ids) -> nll)")
    return _NamedModel(obj, spec)


def _detail(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


class _NamedModel:
    """A ``--model`` callable whose failures while scoring are bad input naming ``--model`` (status 2)."""

    def __init__(self, fn: Any, spec: str) -> None:
        self.fn = fn
        self.spec = spec

    def __call__(self, input_ids: Any, segment_ids: Any, /) -> Any:
        from ..errors import PackingTheoryError

        try:
            return self.fn(input_ids, segment_ids)
        except (MemoryError, RecursionError, PackingTheoryError):
            raise
        except Exception as exc:  # the user's model may raise anything: name it
            raise InputError(f"--model {self.spec!r} raised {type(exc).__name__} while scoring input_ids "
                             f"of shape {getattr(input_ids, 'shape', '?')}: {_detail(exc)}") from exc


def register(sub: Any) -> None:
    """Add the ``evaluate`` subcommand."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "evaluate",
        description="Score two or more models on beginning, tail and natural-tail windows of a stratified "
                    "sample of documents (and optionally a whole-document census), with bits-per-byte "
                    "conventions, position bins and a paired-document bootstrap with Bonferroni-adjusted "
                    "intervals. --demo fits n-gram models on the default corpus packed by two policies "
                    "(--policy). Writes evaluate.json, evaluate.md and PNG plots.",
    )
    add_options(parser, "demo", "sources", "model", "baseline", "token-bytes", "exclude-shards", "policy",
                "kinds", "capacity", "seq-length", "context", "stride", "natural-targets", "per-stratum",
                "sample-seed", "census", "census-limit", "family-strata", "contrast", "family",
                "natural-contexts", "natural-above", "ranking", "ranking-prefixes", "ranking-subsets",
                "ranking-seed", "replicates", "bootstrap-seed", "level", "batch-size", "train-rows",
                "eval-candidates", "out", "force", "no-plots", "no-progress", "json")
    parser.set_defaults(run=run)


def _kinds(text: str) -> tuple[str, ...]:
    from ..evaluation import KINDS

    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    for k in kinds:
        if k not in KINDS or k == "census":
            raise InputError(f"--kinds must name window kinds among beginning, tail, natural-tail "
                             f"(use --census for a census); got {k!r}")
    return kinds


def _ints(text: str | None, option: str) -> tuple[int, ...]:
    """``"1024,2048"`` -> ``(1024, 2048)``; ``"none"`` or ``""`` -> ``()``."""
    if text is None or text.strip().lower() in ("", "none"):
        return ()
    try:
        return tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise InputError(f"{option} must be integers separated by commas, got {text!r}") from None


def _natural_contexts(args: argparse.Namespace) -> tuple[int, ...]:
    """``--natural-contexts``, by default ``C/2, C`` (the paper's §5.7: 1,024 and 2,048 at ``C = 2048``)."""
    if args.natural_contexts is None:
        return (args.context // 2, args.context) if args.context >= 2 else (args.context,)
    return _ints(args.natural_contexts, "--natural-contexts")


def _family_doc(args: argparse.Namespace) -> dict[str, Any] | None:
    """The declared family as a family document from ``--contrast`` or ``--family`` (``None``: default)."""
    from ..evaluation.family import parse_pair, read_family_document

    strata = [s.strip() for s in args.family_strata.split(",") if s.strip()]
    if args.contrast:
        return {"pairs": [list(parse_pair(c)) for c in args.contrast], "strata": strata}
    return read_family_document(args.family) if args.family else None


_SOURCES_ONLY = {"kinds": "beginning,tail", "natural_above": None, "ranking_prefixes": None,
                 "ranking_seed": 0}
"""Options a ``--sources`` run applies and the demo does not (with their defaults)."""


def _capacity(args: argparse.Namespace) -> int:
    """The windows' row width R: ``--capacity``, else ``--seq-length`` + 1, else 2049."""
    if args.capacity is not None:
        return int(args.capacity)
    return (2048 if args.seq_length is None else int(args.seq_length)) + 1


def _demo(args: argparse.Namespace, say: Any) -> Any:
    from ..evaluation.demo import DEMO_POLICIES, DemoConfig, run_demo

    if args.model or args.token_bytes or args.exclude_shards or args.ranking:
        raise InputError("--demo brings its own models, token bytes, training data and official rows; drop "
                         "--model, --token-bytes, --exclude-shards and --ranking or drop --demo")
    own = [f"--{k.replace('_', '-')}" for k, default in _SOURCES_ONLY.items() if getattr(args, k) != default]
    if own:
        raise InputError(f"{', '.join(own)} appl{'ies' if len(own) == 1 else 'y'} to --sources runs; --demo "
                         "scores its own beginning and tail windows (drop it or drop --demo)")
    policies = tuple(args.policy) if args.policy else DEMO_POLICIES
    if len(set(policies)) != len(policies):
        raise InputError(f"--policy names a policy twice: {', '.join(policies)}")
    kw: dict[str, Any] = {"policies": policies, "capacity": _capacity(args), "context": args.context,
                          "stride": args.stride, "natural_targets": args.natural_targets,
                          "sample_seed": args.sample_seed, "replicates": args.replicates,
                          "bootstrap_seed": args.bootstrap_seed, "family": _family_doc(args),
                          "family_strata": tuple(s.strip() for s in args.family_strata.split(",")
                                                 if s.strip()),
                          "natural_contexts": _natural_contexts(args),
                          "ranking_subsets": args.ranking_subsets, "level": args.level,
                          "batch_size": args.batch_size}
    for opt, key in (("per_stratum", "per_stratum"), ("census_limit", "census_candidates"),
                     ("train_rows", "train_rows"), ("eval_candidates", "eval_candidates")):
        if getattr(args, opt) is not None:
            kw[key] = getattr(args, opt)
    if args.baseline is not None and args.baseline != policies[0]:
        raise InputError(f"--demo: the baseline is the first policy ({policies[0]!r}); reorder --policy")
    return run_demo(DemoConfig(**kw), progress=say)


def _own(args: argparse.Namespace, say: Any) -> Any:
    from ..corpus import read_shard
    from ..evaluation import RowStatistics, WindowSpec, family_from_dict, sample_population, token_hash
    from ..evaluation.pipeline import default_family, evaluate_models
    from ..evaluation.ranking import PAPER_PREFIXES

    if not args.sources:
        raise InputError("give --demo, or --sources SHARD... with --token-bytes and two or more --model")
    specs = parse_models(args.model)
    if len(specs) < 2:
        raise InputError(f"give at least two --model NAME=module:attribute (got {len(specs)})")
    if not args.token_bytes:
        raise InputError("--token-bytes FILE.npy is required with --sources")
    import numpy as np

    try:
        tb = np.load(args.token_bytes, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise InputError(f"--token-bytes {args.token_bytes!r} is not a readable .npy array: {exc}") from exc
    models = {name: resolve_model(target) for name, target in specs.items()}
    baseline = args.baseline or next(iter(specs))
    docs: list[Any] = []
    for path in args.sources:
        docs.extend(read_shard(path, check_ids=True).documents())
    exclude: set[str] = set()
    for path in args.exclude_shards or []:
        exclude.update(token_hash(d) for d in read_shard(path).documents())
    per = 256 if args.per_stratum is None else args.per_stratum
    say(f"population: {len(docs):,} candidates, at most {per} per stratum")
    pop = sample_population(docs, per_stratum=per, seed=args.sample_seed, exclude=exclude)
    census_pop = None
    if args.census:
        limit = len(docs) if args.census_limit is None else args.census_limit
        census_pop = sample_population(docs[:limit], per_stratum=None, seed=args.sample_seed, exclude=exclude)
    if args.policy:
        raise InputError("--policy applies to --demo (the policies whose models it fits); with --sources the "
                         "models are --model")
    spec = WindowSpec(kinds=_kinds(args.kinds), capacity=_capacity(args),
                      natural_targets=args.natural_targets,
                      context=args.context, stride=args.stride, natural_above=args.natural_above)
    strata = [s.strip() for s in args.family_strata.split(",") if s.strip()]
    doc = _family_doc(args)
    if doc is not None:
        family: Any = family_from_dict(doc, pop)
    else:
        paired = {"tail", "beginning"} <= set(spec.kinds)
        family = default_family(pop, list(models), baseline, strata) if paired else ()
    ranking = RowStatistics.load(args.ranking) if args.ranking else None
    prefixes = _ints(args.ranking_prefixes, "--ranking-prefixes") or PAPER_PREFIXES
    return evaluate_models(pop, models, tb, baseline=baseline, spec=spec, family=family,
                           replicates=args.replicates, bootstrap_seed=args.bootstrap_seed, level=args.level,
                           census_population=census_pop,
                           census_spec=WindowSpec(kinds=("census",), context=args.context,
                                                  stride=args.stride),
                           batch_size=args.batch_size, progress=say,
                           natural_contexts=_natural_contexts(args),
                           ranking=ranking, ranking_prefixes=prefixes, ranking_subsets=args.ranking_subsets,
                           ranking_seed=args.ranking_seed)


def _config(args: argparse.Namespace) -> dict[str, Any]:
    """Everything that determines the report, for its config hash (inputs and models named, not read)."""
    keys = ("demo", "sources", "model", "baseline", "token_bytes", "exclude_shards", "policy", "kinds",
            "capacity", "context", "stride", "natural_targets", "per_stratum", "sample_seed", "census",
            "census_limit", "family_strata", "contrast", "family", "natural_contexts", "natural_above",
            "ranking", "ranking_prefixes", "ranking_subsets", "ranking_seed", "replicates", "bootstrap_seed",
            "level", "batch_size", "train_rows", "eval_candidates")
    return {"command": "evaluate", **{k: getattr(args, k) for k in keys}, "capacity": _capacity(args),
            "plots": not args.no_plots}


def run(args: argparse.Namespace) -> int:
    """Run the evaluation and write the report.

    The options and ``--out`` are checked before anything is computed; the
    report is written as one unit (:class:`~packing_theory.reporting.ReportWriter`).
    Exit status 0; 2 on bad input or a failed accounting check (a
    ``ValueError`` naming the first mismatch, via the CLI).
    """
    from ..evaluation.report import REPORT_FILES, evaluation_headline, report_dict, write_report_files
    from ..reporting import ReportWriter, progress_bar, require_matplotlib
    from ._common import emit_json, note

    t0 = time.perf_counter()
    plots = not args.no_plots
    require_matplotlib(plots)

    bar = None
    stages = 0

    def say(msg: str) -> None:
        """A stage on the progress line (a terminal only; the report records what matters)."""
        nonlocal stages
        if bar is not None:
            stages += 1
            bar.describe(f"evaluate: {msg}"[:100])
            bar(stages)

    with ReportWriter(args.out, names=REPORT_FILES, config=_config(args), tool="packing-theory evaluate",
                      force=args.force, inputs=named_inputs(args)) as writer:
        bar = progress_bar("evaluate", None, enabled=False if args.no_progress else None, unit="stage")
        try:
            result = _demo(args, say) if args.demo else _own(args, say)
        finally:
            if bar is not None:
                bar.close()
        dropped = (*result.comparison.dropped, *(result.natural.dropped if result.natural else ()))
        if result.settings.get("natural_note"):
            note("evaluate", str(result.settings["natural_note"]))
        for d in dropped:  # on a terminal; the report lists every one with its reason
            note("evaluate", f"dropped {d.what} {d.name}: {d.reason}")
        write_report_files(writer, result, plots=plots)
        writer.commit()
    if args.json:
        emit_json(report_dict(result, run_info=writer.run_info))
    n_windows = next(iter(result.scores.values())).n_windows
    drops = (f"; {len(dropped)} stratum/contrast(s) dropped, each with its reason in the report"
             if dropped else "")
    what = (f"{evaluation_headline(result)} ({n_windows:,} windows; "
            f"{result.comparison.describe_family()}{drops}; {time.perf_counter() - t0:.1f} s)")
    print(writer.summary_line("evaluate", what), file=sys.stderr)
    return 0
