"""Environment ids and `normjax.make` (no compilation: ids are plain strings)."""

import dataclasses

import pytest

import normjax
from normjax import env as env_module
from normjax.env import PHASES
from normjax.layouts import LAYOUTS
from normjax.norms import NORM_NAMES
from normjax.registration import env_id, parse_env_id, registered_envs


def test_registered_envs_cover_every_layout_norm_and_phase():
    assert len(registered_envs) == len(LAYOUTS) * (len(NORM_NAMES) + 1) * len(PHASES) == 1530
    assert len(set(registered_envs)) == len(registered_envs)
    assert normjax.registered_envs is registered_envs
    for layout in LAYOUTS:
        for norm in ("none", *NORM_NAMES):
            for phase in PHASES:
                assert f"NormGym-{layout}-{norm}-{phase}-v0" in registered_envs


def test_make_from_id_sets_layout_norm_and_phase():
    env = normjax.make("NormGym-bank-clockwise_circulation-test-v0")
    assert isinstance(env, normjax.NormGymEnv)
    assert (env.layout, env.norm, env.phase) == ("bank", "clockwise_circulation", "test")
    assert env.capacity == 10 and env.reward_condition == "sparse_penalty"
    none = normjax.make("NormGym-cafe-none-interaction-v0")
    assert none.norm is None and none.phase == "interaction"
    assert int(none.default_params.norm_id) == -1
    assert int(none.default_params.n_blind) == 1  # the interaction phase's blind member


def test_make_overrides_are_env_fields():
    env = normjax.make(
        "NormGym-cafe-none-train-v0", capacity=6, reward_condition="dense", norm="zone_r_capacity_1", phase="test"
    )
    assert env == normjax.NormGymEnv(
        layout="cafe", norm="zone_r_capacity_1", capacity=6, phase="test", reward_condition="dense"
    )
    assert float(env.default_params.dense_reward) == 6.0
    with pytest.raises(TypeError, match="max_stepz.*valid: layout, norm, capacity"):
        normjax.make("NormGym-cafe-none-train-v0", max_stepz=3)
    with pytest.raises(ValueError, match="capacity"):
        normjax.make("NormGym-cafe-none-train-v0", capacity=7)
    with pytest.raises(TypeError, match="keywords"):
        normjax.make("NormGym-cafe-none-train-v0", 6)


def test_unknown_id_names_the_closest_ids():
    with pytest.raises(ValueError) as err:
        normjax.make("NormGym-cafe-clockwise_circulaton-trian-v0")
    msg = str(err.value)
    assert "unknown environment id 'NormGym-cafe-clockwise_circulaton-trian-v0'" in msg
    assert "NormGym-cafe-clockwise_circulation-train-v0" in msg
    with pytest.raises(ValueError, match="NormGym-cafe-none-test-v0"):
        normjax.make("NormGym-cafee-none-test-v0")
    with pytest.raises(ValueError, match="NormGym-hospital-none-train-v0"):
        normjax.make("NormGym-hospital-none-train-v1")
    # Nothing close: the message still shows the scheme and an example.
    with pytest.raises(ValueError, match="<layout>-<norm or none>-<phase>.*for example"):
        normjax.make("x-y")


def test_keyword_and_positional_construction_unchanged():
    for args, kwargs in [
        ((), dict(layout="cafe", norm="clockwise_circulation", phase="test")),
        (("cafe", "clockwise_circulation"), dict(phase="test", capacity=8)),
        ((), {}),
        (("library", 3, 6, "interaction", "no_penalty"), {}),
    ]:
        assert normjax.make(*args, **kwargs) == env_module.make(*args, **kwargs)
    # Legacy errors are the legacy ones (a bare layout name is not read as an id).
    with pytest.raises(ValueError, match="unknown layout"):
        normjax.make("caf")
    with pytest.raises(ValueError, match="unknown norm"):
        normjax.make(layout="cafe", norm="no_such_norm")


def test_env_id_round_trips():
    for name in registered_envs[::97]:
        fields = parse_env_id(name)
        assert env_id(**fields) == name
        env = normjax.make(name)
        assert {f.name: getattr(env, f.name) for f in dataclasses.fields(env) if f.name in fields} == fields
    assert env_id("cafe", 12, "test") == "NormGym-cafe-clockwise_circulation-test-v0"
    assert env_id("cafe", -1) == env_id("cafe", None) == "NormGym-cafe-none-train-v0"
    with pytest.raises(ValueError, match="closest valid ids"):
        env_id("cafe", "clockwise", "train")
    with pytest.raises(TypeError):
        parse_env_id(3)


def test_make_has_typed_overloads_with_its_real_parameters():
    """IDEs and type checkers see the fields and what `return_params` returns; runtime is unchanged."""
    import inspect
    import typing

    overloads = [inspect.signature(f) for f in typing.get_overloads(normjax.make)]
    fields = [f.name for f in dataclasses.fields(normjax.NormGymEnv)]
    returns = {"Literal[False]": "NormGymEnv", "Literal[True]": "tuple[GymnaxEnv, WorldParams]"}
    assert len(overloads) == 4
    for sig in overloads:
        names = list(sig.parameters)
        assert names[-1] == "return_params" and sig.parameters["return_params"].kind == inspect.Parameter.KEYWORD_ONLY
        assert sig.return_annotation == returns[sig.parameters["return_params"].annotation]
        if names[0] == "env_id":  # an id, then the fields as keyword overrides
            assert sig.parameters["env_id"].kind == inspect.Parameter.POSITIONAL_ONLY and names[1:-1] == fields
        else:  # the fields, as normjax.env.make takes them (same defaults)
            assert names[:-1] == fields
            assert [sig.parameters[n].default for n in fields] == [
                p.default for p in inspect.signature(env_module.make).parameters.values()
            ]
    assert sorted(str(s.parameters["return_params"].annotation) for s in overloads).count("Literal[True]") == 2
    assert isinstance(normjax.make(layout="bank", capacity=6), normjax.NormGymEnv)  # the runtime function
