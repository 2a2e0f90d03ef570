"""AgentTrainer, TrainerProcessor and the engine registry, as the AWorld Trainer spec describes them."""

from __future__ import annotations

import inspect
import logging
import subprocess
import sys
import textwrap

import pytest
import yaml
from datasets import Dataset

from engines import AgentTrainer, CheckError, TrainerProcessor, logger
from engines.core import registry
from engines.results.check_result import CheckResult
from engines.inputs.config import ConfigField
from engines.runs.rundir import FINISHED
from engines.core.standard import StandardProcessor


class Recorder(TrainerProcessor):
    """Records every call AgentTrainer makes, in order, with its arguments."""

    calls: list = []

    def __init__(self, run_path: str):
        super().__init__(run_path)
        Recorder.calls.append(("init", run_path))

    def mark_initialized(self) -> None:
        Recorder.calls.append(("mark_initialized",))
        super().mark_initialized()

    def train(self):
        Recorder.calls.append(("train",))
        return "trained"

    def check_agent(self, agent):
        Recorder.calls.append(("check_agent", agent))

    def check_dataset(self, dataset=None, test_dataset=None):
        Recorder.calls.append(("check_dataset", dataset, test_dataset))

    def check_reward(self, reward_func=None):
        Recorder.calls.append(("check_reward", reward_func))

    def check_config(self, config=None):
        Recorder.calls.append(("check_config", config))
        return {**(config or {}), "filled_by_engine": True}


@pytest.fixture
def recorder(clean_registry):
    Recorder.calls = []
    AgentTrainer.register_processor("recorder", Recorder)
    return Recorder


# -- TrainerProcessor ------------------------------------------------------------------------------
def test_trainer_processor_is_an_abstract_base_class():
    with pytest.raises(TypeError, match="abstract"):
        TrainerProcessor("runs")

    class NoReward(TrainerProcessor):  # check_reward missing
        def train(self): ...
        def check_agent(self, agent): ...
        def check_dataset(self, dataset=None, test_dataset=None): ...
        def check_config(self, config=None): ...

    with pytest.raises(TypeError, match="check_reward"):
        NoReward("runs")
    assert {
        "train",
        "check_agent",
        "check_dataset",
        "check_reward",
        "check_config",
    } <= TrainerProcessor.__abstractmethods__


def test_trainer_processor_state(tmp_path):
    p = Recorder(str(tmp_path / "out"))
    assert p.run_path == str(tmp_path / "out")
    assert p.initialized is False
    p.mark_initialized()
    assert p.initialized is True
    assert TrainerProcessor.get_default_config() == {}
    assert isinstance(inspect.getattr_static(TrainerProcessor, "get_default_config"), staticmethod)


# -- AgentTrainer flow -------------------------------------------------------------------------------
def test_agent_trainer_signature_matches_the_spec():
    params = inspect.signature(AgentTrainer.__init__).parameters
    assert list(params)[1:8] == [
        "agent",
        "train_dataset",
        "test_dataset",
        "reward_func",
        "config",
        "run_path",
        "train_engine_name",
    ]
    assert params["run_path"].default == "runs"
    assert params["train_engine_name"].default == "verl"
    for name in ("train_dataset", "test_dataset", "reward_func", "config"):
        assert params[name].default is None


def test_flow_runs_the_checks_in_the_spec_order_and_returns_the_enhanced_config(recorder, tmp_path):
    run_path = str(tmp_path / "outputs")
    trainer = AgentTrainer(
        agent="agent.yaml",
        train_dataset="train.csv",
        test_dataset="test.csv",
        reward_func="exact_match",
        config={"lr": 0.1},
        run_path=run_path,
        train_engine_name="recorder",
    )
    assert recorder.calls == [
        ("init", run_path),
        ("check_agent", "agent.yaml"),
        ("check_dataset", "train.csv", "test.csv"),
        ("check_reward", "exact_match"),
        ("check_config", {"lr": 0.1}),
        ("mark_initialized",),
    ]
    assert isinstance(trainer.train_processor, Recorder)
    assert trainer.train_processor.run_path == run_path
    assert trainer.train_processor.initialized
    assert trainer.config == {"lr": 0.1, "filled_by_engine": True}  # the engine's enhanced config
    assert trainer.train() == "trained"
    assert recorder.calls[-1] == ("train",)


def test_default_engine_is_verl(recorder):
    AgentTrainer.unregister_processor("verl")
    AgentTrainer.register_processor("verl", Recorder)
    trainer = AgentTrainer(agent={"model": "m"})
    assert isinstance(trainer.train_processor, Recorder)
    assert trainer.train_engine_name == "verl"


def test_train_refuses_an_uninitialized_processor(recorder):
    trainer = AgentTrainer(agent="a.yaml", train_engine_name="recorder")
    trainer.train_processor = Recorder("runs")  # a fresh processor nobody checked
    with pytest.raises(ValueError, match="not initialized") as err:
        trainer.train()
    assert "construct AgentTrainer" in str(err.value)
    assert ("train",) not in recorder.calls


@pytest.mark.parametrize("agent", [None, "", "   ", {}, []])
def test_empty_agent_is_rejected_before_any_engine_work(recorder, agent):
    with pytest.raises(ValueError, match="agent is empty") as err:
        AgentTrainer(agent=agent, train_engine_name="recorder")
    assert "pass an agent config path" in str(err.value)
    assert recorder.calls == []  # no engine instantiated


def test_unknown_engine_lists_the_registered_ones(recorder):
    with pytest.raises(ValueError) as err:
        AgentTrainer(agent="a.yaml", train_engine_name="recordr")
    msg = str(err.value)
    assert "unknown training engine 'recordr'" in msg
    assert 'did you mean "recorder"' in msg
    assert "registered engines:" in msg
    for name in ("recorder", "trl", "verl"):
        assert name in msg
    assert recorder.calls == []


def test_a_failing_check_raises_a_value_error_and_leaves_nothing_initialized(clean_registry, tmp_path):
    class BadAgent(Recorder):
        def check_agent(self, agent):
            raise CheckError("agent", "the agent names no model", "set `model:`")

    Recorder.calls = []
    AgentTrainer.register_processor("bad", BadAgent)
    with pytest.raises(ValueError, match=r"\[agent\] the agent names no model — set `model:`") as err:
        AgentTrainer(agent="a.yaml", train_engine_name="bad", run_path=str(tmp_path))
    assert isinstance(err.value, CheckError)
    assert err.value.result == CheckResult("agent", "error", "the agent names no model — set `model:`")
    assert ("mark_initialized",) not in Recorder.calls
    assert not any(c[0] == "check_dataset" for c in Recorder.calls)


# -- registry --------------------------------------------------------------------------------------
def test_register_and_unregister(clean_registry):
    AgentTrainer.register_processor(train_engine_name="custom", train_type=Recorder)
    assert "custom" in AgentTrainer.registered_engines()
    assert registry.get_processor_class("custom") is Recorder
    assert Recorder.engine_name == "custom"
    AgentTrainer.unregister_processor(train_engine_name="custom")
    assert "custom" not in AgentTrainer.registered_engines()
    with pytest.raises(ValueError, match="unknown training engine 'custom'"):
        AgentTrainer(agent="a.yaml", train_engine_name="custom")


def test_duplicate_registration_is_rejected(clean_registry):
    AgentTrainer.register_processor("custom", Recorder)
    with pytest.raises(ValueError) as err:
        AgentTrainer.register_processor("custom", Recorder)
    assert "'custom' is already registered" in str(err.value)
    assert "unregister_processor() it first or pick another name" in str(err.value)
    with pytest.raises(ValueError, match="'trl' is already registered"):  # built-ins are taken too
        AgentTrainer.register_processor("trl", Recorder)
    assert registry.get_processor_class("custom") is Recorder


@pytest.mark.parametrize("bad", [dict, Recorder("runs"), lambda run_path: None, "engines.trl:TrlProcessor"])
def test_only_trainer_processor_classes_can_be_registered(clean_registry, bad):
    with pytest.raises(ValueError) as err:
        AgentTrainer.register_processor("bad", bad)
    assert "is not a TrainerProcessor subclass" in str(err.value)
    assert "subclass engines.TrainerProcessor" in str(err.value)
    assert "bad" not in AgentTrainer.registered_engines()


def test_register_needs_a_name(clean_registry):
    with pytest.raises(ValueError, match="non-empty string"):
        AgentTrainer.register_processor("  ", Recorder)


def test_unregistering_an_unknown_engine_says_which_exist(clean_registry):
    with pytest.raises(ValueError) as err:
        AgentTrainer.unregister_processor("nope")
    assert "no training engine named 'nope'" in str(err.value)
    assert "trl" in str(err.value) and "verl" in str(err.value)


# -- entry points ----------------------------------------------------------------------------------
def _install_distribution(root, module: str, source: str, entry_points: dict[str, str]):
    """A real (tiny) installed distribution: a module plus a dist-info with entry_points.txt."""
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    info = root / f"{module.replace('_', '-')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    lines = "".join(f"{name} = {ref}\n" for name, ref in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{registry.ENTRY_POINT_GROUP}]\n{lines}")


ENGINE_SOURCE = """
    from engines import TrainerProcessor

    class PluginTrainer(TrainerProcessor):
        def train(self):
            return "plugin trained"
        def check_agent(self, agent): pass
        def check_dataset(self, dataset=None, test_dataset=None): pass
        def check_reward(self, reward_func=None): pass
        def check_config(self, config=None):
            return {"from": "plugin"}

    class NotAnEngine:
        pass
"""


def test_entry_point_engines_are_discovered(clean_registry, tmp_path, monkeypatch):
    assert registry.ENTRY_POINT_GROUP == "aworld_trainer.engines"
    _install_distribution(
        tmp_path,
        "aworld_plugin_demo",
        ENGINE_SOURCE,
        {
            "plugin": "aworld_plugin_demo:PluginTrainer",
            "broken": "aworld_plugin_demo:NotAnEngine",
            "trl": "aworld_plugin_demo:PluginTrainer",  # cannot shadow a built-in
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._ENTRY_POINTS_LOADED = False

    assert {"plugin", "broken", "trl", "verl"} <= set(AgentTrainer.registered_engines())
    trainer = AgentTrainer(agent="a.yaml", train_engine_name="plugin", run_path=str(tmp_path / "runs"))
    assert type(trainer.train_processor).__name__ == "PluginTrainer"
    assert trainer.train_processor.engine_name == "plugin"
    assert trainer.config == {"from": "plugin"}
    assert trainer.train() == "plugin trained"

    with pytest.raises(ValueError, match="engine 'broken' .* is not a TrainerProcessor subclass"):
        AgentTrainer(agent="a.yaml", train_engine_name="broken")
    assert registry.get_processor_class("trl").__name__ == "TrlProcessor"  # the plugin did not shadow ours
    # an entry-point engine is unregistered like any other
    AgentTrainer.unregister_processor("plugin")
    assert "plugin" not in AgentTrainer.registered_engines()


def test_an_entry_point_whose_module_fails_to_import_gives_a_clear_error(clean_registry, tmp_path, monkeypatch):
    _install_distribution(
        tmp_path, "aworld_plugin_bad", "import no_such_module_xyz\n", {"badimport": "aworld_plugin_bad:Trainer"}
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._ENTRY_POINTS_LOADED = False
    with pytest.raises(ValueError) as err:
        AgentTrainer(agent="a.yaml", train_engine_name="badimport")
    assert "training engine 'badimport' (aworld_plugin_bad:Trainer) cannot be loaded" in str(err.value)
    assert "cannot import module 'aworld_plugin_bad'" in str(err.value)
    assert "unregister_processor('badimport')" in str(err.value)
    assert "no_such_module_xyz" in str(err.value)


# -- the spec's custom processor, verbatim -----------------------------------------------------------
class _ListHandler(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture
def logged():
    """The application's side: a handler and INFO level (``import engines`` configures neither)."""
    handler, level = _ListHandler(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler.messages
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_importing_engines_configures_no_logging():
    code = "import logging, engines; print(logging.getLogger('aworld.trainer').handlers, logging.getLogger().handlers)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[] []", out.stderr[-2000:]


def test_the_spec_custom_processor_trains_through_agent_trainer(clean_registry, tmp_path, logged, demo):
    from my_framework_trainer import MyFrameworkTrainer

    AgentTrainer.register_processor("my_framework", MyFrameworkTrainer)
    train = Dataset.from_list([{"prompt": "Say A:", "answer": "A"}])
    trainer = AgentTrainer(
        agent=demo["agent"],
        train_dataset=train,
        test_dataset=demo["test"],
        reward_func=lambda completion, answer: float(completion == answer),
        run_path=str(tmp_path / "outputs"),
        train_engine_name="my_framework",
    )
    assert trainer.train_processor.initialized
    assert trainer.train_processor.run_path == str(tmp_path / "outputs")
    assert trainer.config == MyFrameworkTrainer.get_default_config() == trainer.train_processor.framework_config
    assert trainer.train() is None
    assert logged == [
        f"Loading agent from {demo['agent']}",
        "Validating dataset format",
        "Validating reward function",
        "AgentTrainer initialized with engine 'my_framework'",
        "Starting training with MyFramework...",
        "Training completed!",
    ]


def test_the_spec_custom_processor_rejects_a_bad_reward_and_loads_a_config_path(clean_registry, tmp_path, logged):
    from my_framework_trainer import MyFrameworkTrainer

    AgentTrainer.register_processor("my_framework", MyFrameworkTrainer)
    with pytest.raises(ValueError, match="Reward func must be callable or file path"):
        AgentTrainer(agent={"model": "m"}, reward_func=42, train_engine_name="my_framework")
    cfg = str(tmp_path / "cfg.yaml")
    trainer = AgentTrainer(
        agent={"model": "m"},
        train_dataset="data.csv",
        reward_func="r.py:fn",
        config=cfg,
        train_engine_name="my_framework",
    )
    assert trainer.config == cfg
    assert "Validating Agent object" in logged
    assert "Loading dataset from data.csv" in logged
    assert "Loading reward function from r.py:fn" in logged
    assert f"Loading config from {cfg}" in logged


# -- a StandardProcessor engine: the shared loaders behind check_* ---------------------------------------
class LiteProcessor(StandardProcessor):
    """A minimal real engine on the shared loaders (no torch): checks everything, trains nothing."""

    config_fields = [
        ConfigField("batch_size", int, 8, min=1, main=True),
        ConfigField("num_generations", int, 4, min=1, main=True),
    ]

    def cross_check_config(self, cfg):
        if cfg["batch_size"] % cfg["num_generations"]:
            raise CheckError(
                "config",
                f"batch_size {cfg['batch_size']} is not a multiple of num_generations {cfg['num_generations']}",
                "make batch_size a multiple of num_generations",
            )
        return []

    def _train(self):
        return FINISHED


def test_a_standard_engine_checks_real_modules_and_trains(clean_registry, tmp_path, demo):
    AgentTrainer.register_processor("lite", LiteProcessor)
    agent = tmp_path / "agent.yaml"
    agent.write_text(yaml.safe_dump({"name": "a", "model": demo["model"], "system_prompt": "Reply."}))
    trainer = AgentTrainer(
        agent=str(agent),
        train_dataset=demo["train"],
        test_dataset=demo["test"],
        reward_func=[{"ref": demo["reward"], "weight": 2.0}, "exact_match"],
        config={"batch_size": 16},
        run_path=str(tmp_path / "runs"),
        train_engine_name="lite",
    )
    assert trainer.config == {"batch_size": 16, "num_generations": 4}
    results = {r.module: r for r in trainer.check_results}
    assert list(results) == ["agent", "dataset", "reward", "config"]
    assert all(r.status in ("ok", "warning") for r in results.values())
    assert results["dataset"].details["train"]["rows"] == 24
    assert trainer.train() == FINISHED
    run = trainer.train_processor.run
    assert run.path.parent == tmp_path / "runs"
    assert run.read_status()["state"] == FINISHED
    spec = run.read_spec()
    assert spec["engine"] == "lite" and spec["config"] == {"batch_size": 16, "num_generations": 4}
    assert spec["reward"][0]["weight"] == 2.0 and spec["reward"][1] == {"name": "exact_match", "weight": 1.0}

    with pytest.raises(ValueError, match="make batch_size a multiple of num_generations"):
        AgentTrainer(
            agent=str(agent),
            train_dataset=demo["train"],
            reward_func="exact_match",
            config={"batch_size": 6},
            run_path=str(tmp_path / "runs"),
            train_engine_name="lite",
        )
