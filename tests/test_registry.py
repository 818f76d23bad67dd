"""The packer registry: one entry per packer, one way to build it, capacity = row width, loud plug-in loaders.

The recipes of CONTRIBUTING.md (a new policy, a new peer) are followed, in a
copy of the package, by ``tests/test_recipes.py``.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path

import pytest

import packing_theory.peers as peers_pkg
from packing_theory import InputError, PackerConfig, build_packer
from packing_theory.cli import COMMANDS, main
from packing_theory.engine import compiled
from packing_theory.engine import policies as policies_module
from packing_theory.engine.compiled import COMPILED_POLICIES, CompiledPacker, compiled_available
from packing_theory.engine.knobs import Knob
from packing_theory.engine.policies import COMMON_KNOBS, POLICIES, STREAMING_POLICIES
from packing_theory.invariant import OUTSIDE_FAMILY
from packing_theory.peers import PEER_MODULES, peer_policies
from packing_theory.registry import entries, entry, names

ROOT = Path(peers_pkg.__file__).resolve().parent.parent.parent  # the repository


R_ANY = 16
"""A row width every packer accepts (OLMo-core needs a power of two)."""


# ----------------------------------------------------------------------------- the table


def test_every_packer_has_one_entry_streaming_first() -> None:
    table = entries()
    assert list(table)[: len(POLICIES)] == list(POLICIES)
    assert set(table) == set(POLICIES) | set(peer_policies())
    assert names("streaming") == POLICIES and names("peer") == tuple(peer_policies())
    for name, e in table.items():
        assert e.name == name and e.family and e.reference and e.row_width.rule and e.trainer_view
        assert e.status in ("family member", "outside the family", "outside the family: not applicable")
        assert e.in_family == (e.status == "family member")
        assert len(set(e.knob_names)) == len(e.knobs)
        assert json.dumps(e.to_dict())  # JSON-ready


def test_family_status_is_declared_once_and_read_everywhere() -> None:
    members = [n for n, e in entries().items() if e.in_family]
    assert members == ["discard", "continue"]
    # the monitor's not-applicable reason is the declared sentence
    for name, p in STREAMING_POLICIES.items():
        assert (name in OUTSIDE_FAMILY) == (not p.protected_set)
        if name in OUTSIDE_FAMILY:
            assert OUTSIDE_FAMILY[name] == f"not applicable: {entry(name).family}"
    assert all(not e.protected_set for e in entries().values() if e.kind == "peer")


def test_streaming_knobs_are_config_fields_with_the_config_defaults() -> None:
    defaults = PackerConfig()
    for name in POLICIES:
        e = entry(name)
        for knob in e.knobs:
            if knob.name == "max_wait":  # None in the config means DEFAULT_MAX_WAIT
                assert PackerConfig(policy=name).wait_threshold == knob.default
            else:
                assert getattr(defaults, knob.name) == knob.default, (name, knob.name)
    assert entry("random-span").takes("seed") and not entry("discard").takes("seed")
    assert entry("bounded-wait").takes("max_wait") and not entry("continue").takes("max_wait")
    assert entry("discard").knobs == COMMON_KNOBS


@pytest.mark.parametrize("name", list(peer_policies()))
def test_peer_knobs_are_the_constructor_keywords_with_their_defaults(name: str) -> None:
    cls = peer_policies()[name]
    params = inspect.signature(cls.__init__).parameters
    keywords = {p.name: p.default for p in params.values() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert {k.name: k.default for k in cls.knobs} == keywords
    assert all(isinstance(k, Knob) and k.help for k in cls.knobs)


# ----------------------------------------------------------------------------- building


@pytest.mark.parametrize("name", names())
def test_capacity_is_the_row_width_of_every_packer(name: str) -> None:
    knobs = {"min_buffer": 2, "refill": 1} if entry(name).kind == "streaming" else {}
    packer = build_packer(name, capacity=R_ANY, **knobs)
    assert packer.capacity == R_ANY
    lengths = [5, 3, 9, 2, 15, 1, 16, 7] * 3
    events = list(packer.events(lengths))
    rows: dict[int, int] = {}
    for ev in events:
        if type(ev).__name__ in ("Placement", "Padding", "Repeat"):
            rows[ev.row] = rows.get(ev.row, 0) + ev.length
    complete = {r: n for r, n in rows.items() if r < events[-1].rows}
    assert complete and set(complete.values()) == {R_ANY}


@pytest.mark.parametrize("name", names())
def test_seq_length_maps_through_the_entry(name: str) -> None:
    e = entry(name)
    L = 16
    R = e.capacity_for(L)
    assert build_packer(name, seq_length=L).capacity == R
    want = {"megatron-gpt": L + 1, "parcae-bestfit": L + 1}.get(name, L + 1 if e.kind == "streaming" else L)
    assert want == R
    assert e.row_width.seq_length(R, e.options()) == L


def test_megatron_and_axolotl_capacity_is_the_row_width() -> None:
    m = build_packer("megatron-gpt", capacity=2049)
    assert (m.capacity, m.sequence_length) == (2049, 2048)
    a = build_packer("axolotl-multipack", seq_length=2048, micro_batch_size=4)
    assert (a.capacity, a.sequence_len) == (8192, 2048)
    assert build_packer("axolotl-multipack", seq_length=2048, micro_batch_size=4,
                        multipack_real_batches=True).capacity == 2048
    assert entry("olmo-truncate").row_width.admissible(2048) == 2048
    assert entry("olmo-truncate").row_width.admissible(2047) == 1024


@pytest.mark.parametrize(("name", "knob"), [("trl-bfd", "windows"), ("discard", "seed"),
                                            ("megatron-gpt", "sequence_length"), ("continue", "max_wait")])
def test_an_unknown_knob_names_itself_the_packer_and_what_it_takes(name: str, knob: str) -> None:
    with pytest.raises(InputError) as exc:
        build_packer(name, capacity=16, **{knob: 3})
    takes = ", ".join(entry(name).knob_names)
    assert str(exc.value) == f"policy {name!r} takes no option {knob!r} (it takes: {takes})"


def test_build_packer_errors() -> None:
    with pytest.raises(InputError, match=r"policy must be one of discard, continue, .*; got 'nope'"):
        build_packer("nope", capacity=8)
    with pytest.raises(InputError, match=r"give exactly one of capacity .* and seq_length"):
        build_packer("discard")
    with pytest.raises(InputError, match="give exactly one of capacity"):
        build_packer("discard", capacity=9, seq_length=8)
    with pytest.raises(InputError, match="peer policy 'trl-bfd' runs on its own implementation"):
        build_packer("trl-bfd", capacity=8, engine="fast")
    with pytest.raises(InputError, match="engine must be one of fast, compiled, reference; got 'slow'"):
        build_packer("discard", capacity=8, engine="slow")
    with pytest.raises(InputError, match="window must be >= 1"):  # the constructor validates values
        build_packer("trl-bfd", capacity=8, window=0)


def test_options_record_every_knob_with_its_default() -> None:
    e = entry("trl-bfd")
    assert e.options({"window": 2}) == {"window": 2, "framework_version": "1.16.0"}
    assert entry("bounded-wait").options()["max_wait"] == 16


# ----------------------------------------------------------------------------- engines


def test_compiled_support_is_the_kernels_table_and_refused_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    from packing_theory.engine import kernel_codes

    assert tuple(n for n, p in STREAMING_POLICIES.items() if p.compiled) == COMPILED_POLICIES
    for name, p in STREAMING_POLICIES.items():  # derived from the kernel's table, never declared
        assert p.compiled == (name in kernel_codes.POLICY_CODES)
        assert ("compiled" in entry(name).engines) == p.compiled
        if not p.compiled:  # a policy without a kernel branch is refused, naming the engines it runs on
            with pytest.raises(InputError, match=rf"the compiled engine implements .*; got policy '{name}'"):
                CompiledPacker(PackerConfig(capacity=8, policy=name))  # type: ignore[arg-type]
    # a policy whose kernel branch goes away is refused by the registry and by the engine
    monkeypatch.setattr(kernel_codes, "POLICY_CODES", {k: v for k, v in kernel_codes.POLICY_CODES.items()
                                                        if k != "bounded-wait"})
    monkeypatch.setattr(policies_module, "POLICY_CODES", kernel_codes.POLICY_CODES)
    assert not STREAMING_POLICIES["bounded-wait"].compiled
    assert entry("bounded-wait").engines == ("fast", "reference")
    with pytest.raises(InputError, match="policy 'bounded-wait' runs on the engines fast, reference"):
        build_packer("bounded-wait", capacity=8, engine="compiled")
    monkeypatch.setattr(compiled, "COMPILED_POLICIES", tuple(p for p in POLICIES if p != "bounded-wait"))
    with pytest.raises(InputError, match=r"the compiled engine implements .*; got policy 'bounded-wait'"):
        CompiledPacker(PackerConfig(capacity=8, policy="bounded-wait"))


@pytest.mark.skipif(not compiled_available(), reason="numba is not installed (the fast extra)")
def test_kernel_codes_are_looked_up_by_name() -> None:
    from packing_theory.engine import _kernel
    from packing_theory.engine.kernel_codes import POLICY_CODES

    assert set(POLICY_CODES) == set(COMPILED_POLICIES)
    assert POLICY_CODES["continue"] == _kernel.CONTINUE
    assert POLICY_CODES["bounded-wait"] == _kernel.BOUNDED_WAIT
    assert len(set(POLICY_CODES.values())) == len(POLICY_CODES)


# ----------------------------------------------------------------------------- one place for names

_NAMES = "|".join(re.escape(n) for n in names())
_COMPARISON = re.compile(
    rf"""(==|!=)\s*"({_NAMES})"|"({_NAMES})"\s*(==|!=|in\s|not\s+in\s)|(\bin|not\s+in)\s*\(\s*"({_NAMES})"|"""
    r"""startswith\(\(?"(trl|olmo|megatron|foundry|torchtune|axolotl|nemo)|POLICIES\.index\(""")
OWN_MODULES = {
    "engine/policies.py": "the streaming policies' own module (crop rules share the policies' names)",
    "engine/variants.py": "the variant engine's continuation knob, whose values are crop rules",
}


def test_no_policy_name_comparison_outside_the_policies_own_modules() -> None:
    found = []
    modules = sorted((ROOT / "packing_theory").rglob("*.py"))
    assert len(modules) > 100
    for path in modules:
        rel = str(path.relative_to(ROOT / "packing_theory"))
        if rel in OWN_MODULES:
            continue
        for k, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if _COMPARISON.search(code) and not code.lstrip().startswith((">>>", "...")):
                found.append(f"{rel}:{k}: {line.strip()}")
    assert not found, "ask packing_theory.registry instead:\n" + "\n".join(found)


def test_the_name_scanner_sees_a_comparison() -> None:
    assert _COMPARISON.search('if policy == "bounded-wait":')
    assert _COMPARISON.search('x = policy in ("discard", "continue")')
    assert _COMPARISON.search('if name.startswith("olmo-"):')
    assert not _COMPARISON.search('entry(name).takes("max_wait")')


# ----------------------------------------------------------------------------- loud plug-in loaders


def test_every_peer_module_is_registered() -> None:
    folder = Path(peers_pkg.__file__).parent
    modules = sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))
    assert sorted(PEER_MODULES) == modules


def test_a_missing_peer_module_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(peers_pkg, "PEER_MODULES", (*PEER_MODULES, "no_such_framework"))
    with pytest.raises(ImportError, match=r"PEER_MODULES names 'no_such_framework', but there is no module "
                                          r"packing_theory\.peers\.no_such_framework"):
        peer_policies()
    with pytest.raises(ImportError, match="no_such_framework"):
        entries()


def test_a_missing_command_module_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(COMMANDS, "nope", "packing_theory.cli.no_such_command")
    assert main(["policies"]) == 3  # a fault of the package, never of the user
    err = capsys.readouterr().err
    assert "COMMANDS names 'packing_theory.cli.no_such_command' for the command 'nope'" in err


def test_a_peer_module_missing_a_dependency_is_not_skipped(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "needs_a_dependency.py").write_text("import a_dependency_that_is_not_installed\nPEERS = {}\n")
    monkeypatch.setattr(peers_pkg, "__path__", [*peers_pkg.__path__, str(tmp_path)])
    monkeypatch.setattr(peers_pkg, "PEER_MODULES", (*PEER_MODULES, "needs_a_dependency"))
    with pytest.raises(ModuleNotFoundError, match="a_dependency_that_is_not_installed"):
        peer_policies()
    sys.modules.pop("packing_theory.peers.needs_a_dependency", None)


def test_knob_values_parse_by_their_declared_type() -> None:
    assert Knob("r", "ints", 128, "refill").parse("128,60") == (128, 60)
    assert Knob("r", "ints", 128, "refill").parse("7") == 7
    assert Knob("o", "int-lists", None, "orders", optional=True).parse("[[1, 0], [0, 1]]") == [[1, 0], [0, 1]]
    assert Knob("p", "float", 2.0, "ratio").parse("1.5") == 1.5
    assert Knob("s", "str", "right", "side").parse("left") == "left"
    for knob, text, message in [
        (Knob("n", "int", 1, "n"), "none", "option 'n' must be an int, got 'none'"),
        (Knob("b", "bool", False, "b"), "yes", "option 'b' must be true or false, got 'yes'"),
        (Knob("o", "int-lists", None, "o"), "[1]", "option 'o' must be a JSON list of int lists, got '[1]'"),
    ]:
        with pytest.raises(InputError) as exc:
            knob.parse(text)
        assert str(exc.value) == message
    with pytest.raises(InputError, match="knob 'x': type must be one of"):
        Knob("x", "list", None, "x")  # type: ignore[arg-type]

