"""The declared mixture: α shares or token targets, JSON or YAML, refused when malformed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from packing_theory.audit.declared import DeclaredMixture, read_mixture
from packing_theory.errors import InputError


def test_alpha_and_token_targets(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text(json.dumps({"name": "eq", "alpha": {"a": 0.25, "b": 0.75}}))
    m = read_mixture(tmp_path / "m.json")
    assert (m.name, m.kind, m.alpha, m.targets, m.sources) == ("eq", "alpha", {"a": 0.25, "b": 0.75}, None,
                                                               ("a", "b"))
    (tmp_path / "t.yaml").write_text("tokens:\n  a: 75144263\n  b: 75144263\n  c: 0\n")
    t = read_mixture(tmp_path / "t.yaml")
    assert t.kind == "tokens" and t.alpha == {"a": 0.5, "b": 0.5, "c": 0.0} and t.targets["a"] == 75144263
    assert t.to_dict()["targets"] == {"a": 75144263, "b": 75144263, "c": 0}


@pytest.mark.parametrize(("doc", "message"), [
    ({"alpha": {"a": 0.5}}, "alpha sums to 0.5, not 1"),
    ({"alpha": {"a": -0.5, "b": 1.5}}, r"alpha\['a'\] must be a number >= 0, got -0.5"),
    ({"alpha": {"a": True}}, r"alpha\['a'\] must be a number"),
    ({"tokens": {"a": 1.5}}, r"tokens\['a'\] must be an integer >= 0, got 1.5"),
    ({"tokens": {"a": 0}}, "tokens are all zero"),
    ({"alpha": {"a": 1.0}, "tokens": {"a": 1}}, "exactly one of 'alpha'"),
    ({}, "exactly one of 'alpha'"),
    ({"alpha": {}}, "non-empty object"),
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
