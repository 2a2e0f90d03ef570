"""Export: a checkpoint becomes a standalone Hugging Face model folder that loads with
``AutoModelForCausalLM.from_pretrained`` and gives exactly the checkpoint's greedy outputs (a LoRA adapter
merged into its base); the model card records the run and its latest evaluation; the Hub push takes its
token from the environment and never shows it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engines.core.modules import Modules
from engines import CheckError
from engines.inference.checkpoints import load, resolve
from engines.inputs.data import load_datasets, prompt_messages
from engines.inference.export import export_checkpoint
from engines.core.prepare import prepare_run

ROOT = Path(__file__).resolve().parent.parent
TEST_SET = ROOT / "assets/datasets/letters_test.jsonl"


def held_out_prompts(system: str) -> list[list[dict]]:
    """The demo's held-out test prompts (all 16) as the engines give them to the model: the agent's system
    prompt, then the row's prompt (engines.inputs.data.prompt_messages)."""
    bundle = load_datasets(str(TEST_SET))
    return [prompt_messages(row, bundle.columns, system) for row in bundle.train]


def greedy(model, tokenizer, system: str, n_tokens: int = 4) -> list[list[int]]:
    import torch

    out = []
    for messages in held_out_prompts(system):
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        enc = tokenizer(text, return_tensors="pt", add_special_tokens=False)
        with torch.no_grad():
            ids = model.generate(**enc, max_new_tokens=n_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id)
        out.append(ids[0, enc["input_ids"].shape[1] :].tolist())
    return out


def test_an_export_loads_alone_and_reproduces_the_checkpoint(trained_letters, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run = trained_letters.train_processor.run
    asyncio_eval = subprocess.run(
        [sys.executable, "-m", "engines", "eval", "--run", str(run.path)], capture_output=True, text=True, timeout=600
    )
    assert asyncio_eval.returncode == 0, asyncio_eval.stderr[-2000:]
    out = subprocess.run(
        [sys.executable, "-m", "engines", "export", "--run", str(run.path), "--out", str(tmp_path / "model")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    folder = Path(out.stdout.strip().splitlines()[-1])
    names = {p.name for p in folder.iterdir()}
    assert {"model.safetensors", "config.json", "generation_config.json", "tokenizer.json", "README.md"} <= names
    assert "chat_template.jinja" in names or "chat_template" in (folder / "tokenizer_config.json").read_text()
    card = (folder / "README.md").read_text()
    assert "checkpoint-300" in card and run.run_id in card and "| reward |" in card and "learning_rate" in card
    exported = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    system = trained_letters.train_processor.agent_spec.system_prompt
    ckpt_model, ckpt_tok = load(
        resolve("checkpoint-300", trained_letters.train_processor.agent_spec.model, run), device="cpu"
    )
    outputs = greedy(exported, tokenizer, system)
    assert len(outputs) == 16 and outputs == greedy(ckpt_model, ckpt_tok, system)  # every held-out prompt


def test_the_runs_tab_labels_an_export_as_a_model_and_a_checkpoint_as_an_archive(trained_letters):
    """Issue 42 item 8: the export's zip was offered under the label "Checkpoint archive" (the file box is shared)."""
    from aworld_gui.core.studio import Studio
    from aworld_gui.rendering.i18n import localize
    from aworld_gui.tabs.runs_tab import RunsTab

    import zipfile

    run = trained_letters.train_processor.run
    tab = RunsTab(Studio(run.path.parent))
    # issue 41, fifth probe: user code planted .exports/<run>-<checkpoint>-hf -> a folder of someone else's; the
    # export wrote the model into it, and its zip took that folder's files (a key) for download
    elsewhere = run.path.parent.parent / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    (elsewhere / "id_rsa").write_text("a private key")
    planted = run.path.parent / ".exports" / f"{run.run_id}-checkpoint-300-hf"
    planted.parent.mkdir(exist_ok=True)
    planted.symlink_to(elsewhere, target_is_directory=True)
    try:
        exported, said = tab.on_export(run.run_id, "checkpoint-300")
    finally:
        planted.unlink()
    assert sorted(p.name for p in elsewhere.iterdir()) == ["id_rsa"]  # nothing written through the link
    names = zipfile.ZipFile(exported["value"]).namelist()
    assert "id_rsa" not in str(names) and any(n.endswith("config.json") for n in names), names
    assert localize(str(exported["label"]), "en") == "Exported model (a Hugging Face folder, zipped)", said
    assert exported["value"].endswith(".zip") and "checkpoint-300" in localize(str(said), "en")
    archive, _ = tab.on_checkpoint(run.run_id, "checkpoint-300")
    assert localize(str(archive["label"]), "en") == "Checkpoint archive" and archive["value"].endswith(".zip")


def test_a_lora_adapter_is_merged_into_its_base(tmp_path, demo):
    import torch
    from peft import LoraConfig, PeftModel, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run = prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl"),
        runs_dir=str(tmp_path / "runs"),
    )
    torch.manual_seed(0)
    peft = get_peft_model(
        AutoModelForCausalLM.from_pretrained(demo["model"]),
        LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"], task_type="CAUSAL_LM"),
    )
    for name, p in peft.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.8)  # an adapter that changes what the model says
    adapter_dir = run.checkpoints_dir / "checkpoint-1"
    peft.save_pretrained(adapter_dir)
    assert (adapter_dir / "adapter_config.json").exists() and not (adapter_dir / "model.safetensors").exists()
    folder = export_checkpoint(run.path, "checkpoint-1", tmp_path / "merged")
    assert not (folder / "adapter_config.json").exists()
    merged = AutoModelForCausalLM.from_pretrained(folder)
    tok = AutoTokenizer.from_pretrained(folder)
    system = "Reply with one capital letter."
    with_adapter = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(demo["model"]), adapter_dir)
    plain = AutoModelForCausalLM.from_pretrained(demo["model"])
    assert greedy(merged, tok, system) == greedy(with_adapter, tok, system)
    assert greedy(merged, tok, system, 6) != greedy(plain, tok, system, 6)  # the adapter is really in there


def test_pushing_needs_a_token_and_never_shows_it(tmp_path, demo, monkeypatch):
    run = prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl"),
        runs_dir=str(tmp_path / "runs"),
    )
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(CheckError, match="needs a Hugging Face token.*set HF_TOKEN"):
        export_checkpoint(run.path, "base", tmp_path / "x", push_to_hub="me/letters")
    secret = "hf_" + "s3cr3t" * 5
    monkeypatch.setenv("HF_TOKEN", secret)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(CheckError) as err:
        export_checkpoint(run.path, "base", tmp_path / "y", push_to_hub="me/letters")
    assert "pushing to the Hub repo me/letters failed" in str(err.value) and secret not in str(err.value)
    assert not any(secret in p.read_text(errors="ignore") for p in (tmp_path / "y").rglob("*") if p.is_file())


def test_a_secret_written_literally_in_run_yaml_reaches_no_file_of_the_export(tmp_path, demo):
    """run.yaml keeps a literal key for the run's own process (tests/test_secrets.py); the exported folder
    (served by the studio, pushed to the Hub) shows it masked in its model card."""
    key, password = "sk-literal-wandb-key-0123", "url-pass-0456"
    run = prepare_run(
        Modules(demo["agent"], demo["train"], demo["test"], demo["reward"], {"max_steps": 1}, train_engine_name="trl"),
        runs_dir=str(tmp_path / "runs"),
    )
    spec = run.read_spec()
    spec["config"]["env_vars"] = {"WANDB_API_KEY": key, "WANDB_PROJECT": "letters"}
    spec["config"]["mlflow_tracking_uri"] = f"http://me:{password}@127.0.0.1:5000"
    run.write_spec(spec)
    assert key in run.file("run.yaml").read_text()
    folder = export_checkpoint(run.path, "base", tmp_path / "model")
    leaks = [
        p.name
        for p in folder.rglob("*")
        if p.is_file() and (key.encode() in p.read_bytes() or password.encode() in p.read_bytes())
    ]
    assert leaks == []
    card = (folder / "README.md").read_text()
    assert "WANDB_API_KEY: '****'" in card and "WANDB_PROJECT: letters" in card  # masked, not dropped
    assert "http://me:****@127.0.0.1:5000" in card
