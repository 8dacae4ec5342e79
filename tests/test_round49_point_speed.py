"""Round 49: a sweep point's validation does less work twice, and refuses and finds the same.

- :func:`tiersim.scenario._may_refuse_numbers` stands before the walk of a validated scenario's
  dump (:func:`tiersim.scenario_yaml._reject_non_finite`): where it says False the walk refuses
  nothing, so it is not run; where the walk refuses, it says True (and the walk words it).
- :func:`tiersim.paths.bundled_dirs` keeps the package folder resolved, and resolves it again
  when the folder as imported is another one (a link on the way moved); a bundled file that is
  no link is its own resolved path without resolving each part (:func:`tiersim.paths._resolved`).
"""

from __future__ import annotations

import math
import random
import warnings
from pathlib import Path

import pytest

import tiersim
from tiersim import paths
from tiersim import scenario as sc
from tiersim.errors import ScenarioError
from tiersim.numbers import MAX_INT_BITS
from tiersim.scenario_yaml import NearWhole, _Overlong, _reject_non_finite, _Underflow

HUGE = 1 << (MAX_INT_BITS + 1)

LEAVES = [0, 1, -3, True, False, None, "x", "nan", 1.5, -0.0, 2.0 ** 60, math.inf, -math.inf,
          math.nan, HUGE, -HUGE, 1 << MAX_INT_BITS, _Underflow("1e-400"), NearWhole(2.0, "1.99"),
          _Overlong(1000), (math.nan,), (HUGE, 1)]
"""Values the walk refuses (and some it passes, a tuple's numbers among them: it looks into
maps and lists only)."""


class _Map(dict):
    """A map of another type than dict (looked at as a map)."""


class _List(list):
    """A list of another type than list."""


def _random_value(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth < 5 and roll < 0.3:
        kind = rng.choice([dict, _Map])
        keys = [rng.choice(["a", "b", "c", 1, 2, HUGE, True]) for _ in range(rng.randint(0, 3))]
        return kind({key: _random_value(rng, depth + 1) for key in keys})
    if depth < 5 and roll < 0.5:
        kind = rng.choice([list, _List])
        return kind(_random_value(rng, depth + 1) for _ in range(rng.randint(0, 3)))
    return rng.choice(LEAVES)


def _walk_refuses(data) -> bool:
    try:
        _reject_non_finite(data, "s.yaml", None, ())
    except ScenarioError:
        return True
    return False


def test_the_quick_look_says_true_wherever_the_walk_refuses():
    rng = random.Random(49)
    seen = {True: 0, False: 0}
    for _ in range(3000):
        data = _random_value(rng)
        refused = _walk_refuses(data)
        seen[refused] += 1
        assert sc._may_refuse_numbers(data) == refused, data
    assert min(seen.values()) > 300  # both cases were tried


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, HUGE, -HUGE,
                                   _Underflow("1e-400"), _Overlong(2000)])
def test_each_number_the_walk_refuses_is_seen_in_a_map_and_a_list(value):
    for data in ({"a": {"b": [1, value]}}, [[{"c": value}]], _Map(a=_List([value]))):
        assert _walk_refuses(data)
        assert sc._may_refuse_numbers(data)
    assert sc._may_refuse_numbers({"a": {HUGE: 1}}) and _walk_refuses({"a": {HUGE: 1}})


def test_deep_data_is_left_to_the_walk():
    data: object = 1
    for _ in range(sc._DEEPEST_QUICK - 1):  # that many levels, the number the last
        data = [data]
    assert not sc._may_refuse_numbers(data)
    assert sc._may_refuse_numbers([data])


def test_a_sweep_value_of_nan_is_refused_as_before():
    """``sweep`` takes any value, which pydantic passes as given: the walk of the dump refuses
    a non-finite number there, at its place, spelt as YAML writes it (``.nan``: the value came
    with no text of its own)."""
    warnings.simplefilter("ignore")  # tiny.yaml's notes; pytest restores the filters
    data, _ = sc.read_yaml(paths.bundled("scenarios", "tiny.yaml"))
    for value, words in ((math.nan, "must be a finite number (got .nan)"),
                         (HUGE, "bits"), (_Underflow("1e-400"), "1e-400")):
        point = {**data, "sweep": {"x": [1, value]}}
        with pytest.raises(ScenarioError) as err:
            sc.scenario_from_dict(point, "p.yaml")
        assert "sweep.x[1]" in str(err.value) and words in str(err.value), str(err.value)


def test_bundled_folders_are_resolved_paths():
    for kind in paths.KINDS:
        (folder,) = paths.bundled_dirs(kind)
        assert folder == (Path(tiersim.__file__).resolve().parent / kind)
    found = paths.find_bundled("scenarios", "tiny")
    assert found is not None and paths.resolved_path(found) == found.resolve()


def test_the_package_folder_is_resolved_again_when_a_link_to_it_moves(tmp_path, monkeypatch):
    """A link on the way to the package moved to another copy (a release swapped under a
    running sweep): the bundled folders are the new copy's, as when each call resolved it."""
    for copy in ("one", "two"):
        (tmp_path / copy / "scenarios").mkdir(parents=True)
        (tmp_path / copy / "__init__.py").write_text("")
        (tmp_path / copy / "scenarios" / f"{copy}.yaml").write_text("seed: 1\n")
    link = tmp_path / "current"
    link.symlink_to(tmp_path / "one")
    monkeypatch.setattr(tiersim, "__file__", str(link / "__init__.py"))
    assert paths.bundled_dirs("scenarios") == [tmp_path / "one" / "scenarios"]
    assert paths.find_bundled("scenarios", "one") == tmp_path / "one" / "scenarios" / "one.yaml"
    link.unlink()
    link.symlink_to(tmp_path / "two")
    assert paths.bundled_dirs("scenarios") == [tmp_path / "two" / "scenarios"]
    assert paths.find_bundled("scenarios", "one") is None
    assert paths.find_bundled("scenarios", "two") == tmp_path / "two" / "scenarios" / "two.yaml"
    (tmp_path / "two").rename(tmp_path / "three")  # the kept folder renamed: resolved again
    link.unlink()
    link.symlink_to(tmp_path / "three")
    assert paths.bundled_dirs("scenarios") == [tmp_path / "three" / "scenarios"]


def test_a_link_in_a_bundled_folder_is_resolved_as_before(tmp_path, monkeypatch):
    """A bundled file that is a link, one in a bundled folder that is a link, and one that
    leads out of the folder: each is resolved (and found or not) as ``Path.resolve`` says."""
    package = tmp_path / "pkg"
    (package / "profiles").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "out.json").write_text("{}")
    (package / "profiles" / "plain.json").write_text("{}")
    (package / "profiles" / "inside.json").symlink_to(package / "profiles" / "plain.json")
    (package / "profiles" / "out.json").symlink_to(elsewhere / "out.json")
    (package / "traces").symlink_to(elsewhere, target_is_directory=True)
    (elsewhere / "t.csv").write_text("a\n")
    monkeypatch.setattr(tiersim, "__file__", str(package / "__init__.py"))
    for path in (package / "profiles" / "plain.json", package / "profiles" / "inside.json",
                 package / "profiles" / "out.json", package / "traces" / "t.csv",
                 package / "profiles" / "missing.json"):
        assert paths.resolved_path(path) == path.resolve(), path
    assert paths.find_bundled("profiles", "plain") == package / "profiles" / "plain.json"
    assert paths.find_bundled("profiles", "inside") == package / "profiles" / "inside.json"
    assert paths.find_bundled("profiles", "out") is None  # it leads out of the folder
    assert paths.find_bundled("traces", "t.csv") is None  # the folder itself is a link
    assert paths.find_bundled("profiles", "../pkg/profiles/plain") is None


def test_unprintable_finds_what_it_found_character_by_character():
    """:func:`tiersim.errors.unprintable` answers None for printable text without looking at
    each character: for every code point, alone and in text, it finds what the look at each
    character's category found."""
    import sys
    import unicodedata

    from tiersim.errors import unprintable

    def looked(text):
        return next((c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")),
                    None)

    for point in range(sys.maxunicode + 1):
        char = chr(point)
        assert unprintable(char) == looked(char), hex(point)
    for text in ("plain", "a b", "tab\there", "rtl\u202eoff", "nbsp\u00a0", "ideo\u3000",
                 "sep\u2028", "\ud800", "zw\u200bj", ""):
        assert unprintable(text) == looked(text), ascii(text)


def _item_type_worked_out(kind, value, i):
    """:func:`tiersim.scenario._item_type` as it was, each call worked out from the type."""
    import typing
    from typing import Any

    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if isinstance(value, dict):
        return args[1] if origin is dict and len(args) == 2 else Any
    if origin in (list, set, frozenset) and args:
        return args[0]
    if origin is tuple and args:
        return args[0] if len(args) == 2 and args[1] is Ellipsis else (
            args[i] if i < len(args) else Any)
    return Any


def test_item_types_kept_per_type_are_those_worked_out():
    import typing
    from typing import Any

    kinds = [list[int], tuple[int, ...], tuple[int, str], tuple[()], dict[str, float],
             dict, list, set[int], frozenset[float], int, Any, list[int] | None,
             list[dict[str, int]], tuple[float, float, float]]
    models = [sc.Scenario]
    seen = set()
    while models:  # and every field type of the scenario's models, with their members
        model = models.pop()
        if model in seen:
            continue
        seen.add(model)
        for field in model.model_fields.values():
            stack = [field.annotation]
            while stack:
                kind = stack.pop()
                kinds.append(kind)
                stack.extend(typing.get_args(kind))
                models += sc._models_in(kind)
    for kind in kinds:
        for value in ({}, {"a": 1}, [], [1, 2, 3, 4]):
            for i in (["a"] if isinstance(value, dict) else range(5)):
                assert sc._item_type(kind, value, i) == _item_type_worked_out(kind, value, i)


def test_file_places_of_keys_given_as_a_list_as_of_a_tuple():
    data, _ = sc.read_yaml(paths.bundled("scenarios", "cascade_models.yaml"))
    places = sc.file_places(data)
    assert len(places) > 2
    assert sc.file_places(data, list(sc.file_keys())) == places  # a list: not kept
    assert sc.model_places(data) == [p for p in places if p[0][-1] in ("model", "draft_model")]


def test_kv_capacities_kept_are_those_worked_out():
    """:func:`tiersim.perf.memory.kv_capacity_blocks` keeps its answers (a pure function of its
    arguments): each equals the one worked out, asked twice; a tier that does not fit raises
    the same FitError each time (never kept)."""
    from tiersim.errors import FitError
    from tiersim.hardware import MODELS, get_gpu
    from tiersim.perf import memory

    gpus = [get_gpu(name) for name in ("H200", "H100")]
    tried = fits = 0
    for arch in list(MODELS.values())[:8]:
        for gpu in gpus:
            for tp in (1, 2, 8):
                for kv in ("bf16", "auto"):
                    args = (arch, "bf16", gpu, tp, 16, 0.9, None, kv, 8192, 1, 1, None, "auto")
                    try:
                        worked = memory._kv_capacity_blocks(*args)
                    except (FitError, ValueError) as err:
                        for _ in range(2):
                            with pytest.raises(type(err)) as again:
                                memory.kv_capacity_blocks(*args)
                            assert str(again.value) == str(err)
                        continue
                    finally:
                        tried += 1
                    fits += 1
                    assert memory.kv_capacity_blocks(*args) == worked
                    assert memory.kv_capacity_blocks(*args) == worked
                    assert type(memory.kv_capacity_blocks(*args)) is int
    assert fits > 10 and tried > fits


def test_kv_capacity_of_an_argument_that_cannot_be_kept_is_worked_out():
    from tiersim.hardware import get_gpu, get_model
    from tiersim.perf import memory

    class Unkept(str):
        __hash__ = None  # type: ignore[assignment]

    arch, gpu = get_model("llama-3.1-8b"), get_gpu("H200")
    assert memory.kv_capacity_blocks(arch, "bf16", gpu, kv_dtype=Unkept("bf16")) == (
        memory.kv_capacity_blocks(arch, "bf16", gpu))
