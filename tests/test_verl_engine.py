"""The verl engine in the registry: light to import, honest about what this machine lacks."""

import json
import subprocess
import sys

from engines.core.registry import get_processor_class
from engines.verl import VerlProcessor


def test_importing_the_engine_imports_neither_verl_torch_nor_ray():
    code = (
        "import sys, json; from engines.core.registry import get_processor_class; cls = get_processor_class('verl'); "
        "print(json.dumps([cls.__name__, sorted(m for m in ('verl', 'torch', 'ray', 'hydra', 'transformers', "
        "'datasets', 'vllm') if m in sys.modules)]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    name, heavy = json.loads(out.stdout.strip().splitlines()[-1])
    assert name == "VerlProcessor" and heavy == []


def test_registry_maps_verl_to_the_processor():
    assert get_processor_class("verl") is VerlProcessor
    assert VerlProcessor.engine_name == "verl"
    fields = {f["name"]: f for f in VerlProcessor.describe_config()}
    assert {"algorithm", "batch_size", "num_generations", "ray_address", "verl_python"} <= set(fields)


def test_availability_says_what_is_missing_with_the_install_hint(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("AWORLD_VERL_PYTHON", raising=False)
    ok, reason = VerlProcessor.availability()
    assert ok is False  # this CPU machine has neither a GPU nor vllm/sglang
    assert "no CUDA GPU found" in reason and "vllm or sglang" in reason
    assert "pip install 'verl[vllm]==0.9.1'" in reason and "AWORLD_VERL_PYTHON" in reason


def test_availability_probes_the_configured_verl_python(tmp_path, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    fake = tmp_path / "python"
    modules = {"verl": True, "vllm": True, "sglang": False, "transfer_queue": True, "cloudpickle": True}
    answer = {"modules": modules, "versions": {}, "python": "3.11", "locations": {}, "gpus": 2}
    fake.write_text(f"#!/bin/sh\necho '{json.dumps(answer)}'\n")  # engines/plugins/interpreter_probe.py's answer
    fake.chmod(0o755)
    monkeypatch.setenv("AWORLD_VERL_PYTHON", str(fake))
    ok, reason = VerlProcessor.availability()
    assert ok and "2 CUDA GPU(s), rollout backend vllm" in reason
    monkeypatch.setenv("AWORLD_VERL_PYTHON", str(tmp_path / "missing"))
    ok, reason = VerlProcessor.availability()
    assert not ok and "missing" in reason


def test_a_ray_address_makes_the_engine_available_without_local_gpus(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "http://10.0.0.1:8265")
    ok, reason = VerlProcessor.availability()
    assert ok and "10.0.0.1" in reason
