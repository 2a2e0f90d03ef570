"""sweep.yaml in Optuna's terms: parsed into Optuna's distributions, samplers and pruners; bad sweeps refused
with the key and the fix; every param's range checked against the engine's own config check."""

from __future__ import annotations

import pytest

from engines.core.modules import Modules
from engines.results.check_result import ERROR, CheckError
from engines.sweeps.launch import check_sweep
from engines.sweeps.spec import parse_sweep


def test_a_sweep_becomes_optuna_distributions_sampler_and_pruner():
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    spec = parse_sweep(
        {
            "trials": 6,
            "sampler": "tpe",
            "pruner": "median",
            "seed": 3,
            "objective": {"metric": "eval/reward", "direction": "maximize"},
            "params": {
                "learning_rate": {"low": 1e-4, "high": 1e-2, "log": True},
                "beta": [0.0, 0.04],
                "num_generations": {"low": 4, "high": 8, "step": 4},
            },
        }
    )
    assert spec.params["learning_rate"] == FloatDistribution(1e-4, 1e-2, log=True)
    assert spec.params["beta"] == CategoricalDistribution([0.0, 0.04])
    assert spec.params["num_generations"] == IntDistribution(4, 8, step=4)
    assert isinstance(spec.make_sampler(), optuna.samplers.TPESampler)
    assert isinstance(spec.make_pruner(), optuna.pruners.MedianPruner)
    assert (spec.metric, spec.direction, spec.trials) == ("eval/reward", "maximize", 6)
    # the ends of every range and every choice, in all their combinations (2 × 2 × 2)
    assert len(spec.corner_configs()) == 8
    assert {"learning_rate": 1e-2, "beta": 0.04, "num_generations": 8} in spec.corner_configs()
    # what is written back parses to the same sweep
    assert parse_sweep(spec.to_dict()).params == spec.params


def test_a_grid_runs_its_size_by_default_and_refuses_more():
    spec = parse_sweep(
        {"sampler": "grid", "params": {"beta": [0.0, 0.04], "num_generations": {"low": 4, "high": 8, "step": 2}}}
    )
    assert spec.trials == 6 and spec.grid()["num_generations"] == [4, 6, 8]
    with pytest.raises(CheckError, match="the grid has only 6 point"):
        parse_sweep(
            {
                "sampler": "grid",
                "trials": 7,
                "params": {"beta": [0.0, 0.04], "num_generations": {"low": 4, "high": 8, "step": 2}},
            }
        )
    with pytest.raises(CheckError, match="range without a step"):
        parse_sweep({"sampler": "grid", "params": {"learning_rate": {"low": 1e-4, "high": 1e-2}}})


def test_a_grid_is_asked_and_told_to_its_last_point():
    """Optuna's GridSampler stops an optimize() loop after its last point (study.stop raises outside one): the
    sweep's grid sampler is told every point, each once."""
    import optuna

    spec = parse_sweep({"sampler": "grid", "seed": 0, "params": {"beta": [0.0, 0.04], "seed": [1, 2]}})
    study = optuna.create_study(sampler=spec.make_sampler(), direction="maximize")
    seen = []
    for _ in range(spec.trials):
        trial = study.ask(dict(spec.params))
        seen.append((trial.params["beta"], trial.params["seed"]))
        study.tell(trial, 1.0)
    assert sorted(seen) == [(0.0, 1), (0.0, 2), (0.04, 1), (0.04, 2)]


@pytest.mark.parametrize(
    "sweep, message",
    [
        ({"trials": 2, "params": {"learning_rate": {"low": 0.0, "high": 1e-2, "log": True}}}, "learning_rate.*low"),
        ({"trials": 2, "params": {"learning_rate": {"low": 1e-2, "high": 1e-4}}}, "learning_rate"),
        ({"trials": 2, "params": {"learning_rate": {"low": 1e-4, "hihg": 1e-2}}}, 'did you mean "high"'),
        ({"trials": 2, "params": {"beta": []}}, "empty list"),
        ({"trials": 2, "sampler": "tpe2", "params": {"beta": [0.0]}}, 'did you mean "tpe"'),
        ({"trials": 2, "pruner": "hyperband", "params": {"beta": [0.0]}}, "not one of median, none"),
        ({"trials": 2, "pruner": {"type": "median", "n_startup": 1}, "params": {"beta": [0.0]}}, "n_startup_trials"),
        (
            {"trials": 2, "objective": {"metric": "loss", "direction": "down"}, "params": {"beta": [0.0]}},
            "maximize or minimize",
        ),
        ({"trials": 0, "params": {"beta": [0.0]}}, "at least 1"),
        ({"params": {"beta": [0.0]}}, "how many trials"),
        ({"trials": 2, "parms": {"beta": [0.0]}}, 'did you mean "params"'),
        ({"trials": 2}, "no params"),
    ],
)
def test_a_bad_sweep_is_refused_naming_the_key(sweep, message):
    with pytest.raises(CheckError, match=message) as e:
        parse_sweep(sweep)
    assert e.value.module == "sweep"


def test_parallel_trials_need_a_gpu_each():
    with pytest.raises(CheckError, match="parallel = 2 needs 2 GPUs.*0 are visible"):
        parse_sweep({"trials": 2, "parallel": 2, "params": {"beta": [0.0, 0.04]}}, gpus=0)
    assert parse_sweep({"trials": 2, "parallel": 2, "params": {"beta": [0.0, 0.04]}}, gpus=2).parallel == 2


def test_a_sweep_file_with_a_yaml_error_says_where(tmp_path):
    f = tmp_path / "sweep.yaml"
    f.write_text("trials: 3\nparams:\n  beta: [0.0, 0.04\n")
    with pytest.raises(CheckError, match="sweep.yaml"):
        parse_sweep(str(f))


def test_every_range_is_checked_against_the_engines_config_check(demo):
    """A range whose end the trl engine refuses is refused before anything runs, with the engine's own message;
    the same sweep within the engine's bounds passes every check."""
    base = dict(
        agent=demo["agent"],
        train_dataset=demo["train"],
        test_dataset=demo["test"],
        reward_func=demo["reward"],
        config={"max_steps": 2, "prompts_per_step": 2, "num_generations": 4},
        train_engine_name="trl",
    )
    _, results = check_sweep(
        {"trials": 2, "params": {"learning_rate": {"low": 1e-4, "high": 2.0, "log": True}}}, Modules(**base)
    )
    sweep = results[-1]
    assert sweep.module == "sweep" and sweep.status == ERROR
    assert "learning_rate=2.0" in sweep.message and "above its maximum 1.0" in sweep.message

    _, results = check_sweep({"trials": 2, "params": {"learning_rat": [1e-3, 1e-4]}}, Modules(**base))
    assert results[-1].status == ERROR and 'did you mean "learning_rate"' in results[-1].message

    # within the engine's bounds: every corner (2 learning-rate ends × 2 betas) passes its config check
    spec, results = check_sweep(
        {"trials": 2, "params": {"learning_rate": {"low": 1e-4, "high": 1e-2, "log": True}, "beta": [0.0, 0.04]}},
        Modules(**base),
    )
    assert [r.status for r in results if r.status == ERROR] == []
    assert results[-1].module == "sweep" and results[-1].details["checked"] == spec.corner_configs()
