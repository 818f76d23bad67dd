"""The declared mixture: α shares, token targets or both, JSON or YAML, refused when malformed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from packing_theory.audit.declared import DeclaredMixture, read_mixture
from packing_theory.errors import InputError
from tests.fifo_helpers import raised_within


def test_alpha_and_token_targets(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text(json.dumps({"name": "eq", "alpha": {"a": 0.25, "b": 0.75}}))
    m = read_mixture(tmp_path / "m.json")
    assert (m.name, m.kind, m.alpha, m.targets, m.sources) == ("eq", "alpha", {"a": 0.25, "b": 0.75}, None,
                                                               ("a", "b"))
    (tmp_path / "t.yaml").write_text("tokens:\n  a: 75144263\n  b: 75144263\n  c: 0\n")
    t = read_mixture(tmp_path / "t.yaml")
    # token targets are not a sampling frequency: no α is made up from them
    assert t.kind == "tokens" and t.alpha is None and t.targets is not None and t.targets["a"] == 75144263
    assert t.target_shares == {"a": 0.5, "b": 0.5, "c": 0.0} and t.sources == ("a", "b", "c")
    assert t.to_dict()["targets"] == {"a": 75144263, "b": 75144263, "c": 0}
    (tmp_path / "both.yaml").write_text("name: v1\nalpha: {a: 0.9, 7: 0.1}\ntokens: {a: 100, 7: 300}\n")
    both = read_mixture(tmp_path / "both.yaml")
    assert both.kind == "alpha+tokens" and both.alpha == {"a": 0.9, "7": 0.1}
    assert both.target_shares == {"a": 0.25, "7": 0.75} and both.sources == ("7", "a")
    assert both.to_dict()["target_shares"] == {"7": 0.75, "a": 0.25}


def test_a_declaration_needs_alpha_or_targets() -> None:
    with pytest.raises(InputError, match="needs 'alpha'"):
        DeclaredMixture(None, None)


@pytest.mark.parametrize(("doc", "message"), [
    ({"alpha": {"a": 0.5}}, "alpha sums to 0.5, not 1"),
    ({"alpha": {"a": -0.5, "b": 1.5}}, r"alpha\['a'\] must be a number >= 0, got -0.5"),
    ({"alpha": {"a": True}}, r"alpha\['a'\] must be a number"),
    ({"tokens": {"a": 1.5}}, r"tokens\['a'\] must be an integer >= 0, got 1.5"),
    ({"tokens": {"a": 0}}, "tokens are all zero"),
    ({}, "must give 'alpha' .*'tokens' .*or both"),
    ({"name": "x"}, "must give 'alpha'"),
    ({"alpha": {}}, "alpha must be a non-empty object"),
    ({"tokens": [1, 2]}, "tokens must be a non-empty object"),
    ({"alpha": {"a": 0.5, "b": 0.5}, "tokens": {"a": 1, "c": 1}},
     r"source\(s\) \['b'\] in 'alpha' but not in 'tokens'"),
    ({"alpha": {"a": 1.0}, "tokens": {"a": 1, "c": 1}},
     r"source\(s\) \['c'\] in 'tokens' but not in 'alpha'"),
    ({"alpha": {"a": 1.0}, "tokens": {"a": -1}}, r"tokens\['a'\] must be an integer >= 0, got -1"),
    ({"alpha": {"": 1.0}}, "alpha has a source name '': give a non-empty string"),
    ({"tokens": {None: 1}}, "tokens has a source name None"),
    ({"alpha": {7: 0.5, "7": 0.5}}, "alpha names source '7' twice"),
    ({"alpha": {"a": 1.0}, "name": 3}, "name must be a string, got 3"),
    ({"alpha": {"a": 1.0}, "weights": 1}, r"unknown key\(s\) \['weights'\]"),
    ([1], "must be an object"),
])
def test_a_malformed_declaration_is_refused(doc: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        DeclaredMixture.from_document(doc)


def test_bad_files(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text("{nope")
    with pytest.raises(InputError, match=r"mixture '.*m.json' is not valid JSON"):
        read_mixture(tmp_path / "m.json")
    (tmp_path / "m.toml").write_text("")
    with pytest.raises(InputError, match=r"must be a .json, .yaml or .yml file"):
        read_mixture(tmp_path / "m.toml")
    (tmp_path / "m.yml").write_text("alpha: [unclosed\n")
    with pytest.raises(InputError, match="is not valid YAML"):
        read_mixture(tmp_path / "m.yml")
    with pytest.raises(FileNotFoundError):
        read_mixture(tmp_path / "missing.json")


@pytest.mark.parametrize(("name", "text"), [
    ("m.json", '{"alpha": {"a": 0.5, "b": 0.5, "a": 0.0}}'),
    ("m.json", '{"tokens": {"a": 1}, "tokens": {"a": 1, "b": 2}}'),
    ("m.yaml", "alpha:\n  a: 0.5\n  b: 0.5\n  a: 0.0\n"),
    ("m.yml", "tokens: {a: 1}\ntokens: {b: 2}\n"),
])
def test_a_repeated_key_is_refused_not_resolved_silently(tmp_path: Path, name: str, text: str) -> None:
    """Before the fix the last value won: {"a": 0.5, "b": 0.5, "a": 0.0} read as a = 0 and failed the sum."""
    if name.endswith(("yaml", "yml")):
        pytest.importorskip("yaml")
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match=r"mixture .* repeats the key '(a|tokens)'"):
        read_mixture(tmp_path / name)


def test_a_mixture_that_is_not_a_regular_file_or_too_deep_is_refused(tmp_path: Path) -> None:
    import os

    os.mkfifo(tmp_path / "m.json")
    error = raised_within(read_mixture, tmp_path / "m.json", fifos=[tmp_path / "m.json"])
    assert isinstance(error, InputError) and "is not a regular file (a pipe" in str(error)
    (tmp_path / "deep.json").write_text('{"alpha": ' + "[" * 100_000)
    with pytest.raises(InputError, match="nested too deeply"):
        read_mixture(tmp_path / "deep.json")
    (tmp_path / "nested.json").write_text('{"alpha": ' + "[" * 100 + "]" * 100 + "}")
    with pytest.raises(InputError, match="nests deeper than 64 levels"):
        read_mixture(tmp_path / "nested.json")
