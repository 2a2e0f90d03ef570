"""Secrets never leak: not into files on disk (uploads, run directories, Gradio's cache), not through
Gradio's file route, not in a response, and not into the environment user code sees (checks and run
processes). A studio started with a login and a provider key in its environment, driven by gradio_client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import httpx
import psutil
import pytest
import yaml

from engines.isolation.processes import terminate_tree
from engines.runs.rundir import RunDir
from engines.runs.lifecycle import spawn_run
from testing.studio import StudioProcess

LOGIN = ("admin", "studio-login-s3cret")
PROVIDER_KEY = "sk-provider-in-the-environment-0042"
UNINVITED_KEY = "held-unasked-in-the-environment-0055"  # HELD_UNASKED_KEY: in the studio's environment, not invited
LITERAL_KEY = "sk-literal-in-the-upload-0099"
LITERAL_HEADER = "Bearer literal-header-token-0077"
MODEL = Path(__file__).resolve().parent.parent / "assets" / "models" / "tiny-letters"
SECRETS = (LOGIN[1], PROVIDER_KEY, LITERAL_KEY, LITERAL_HEADER.split()[1], UNINVITED_KEY)


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    base = tmp_path_factory.mktemp("secrets")
    cache = base / "gradio-cache"
    saved = dict(os.environ)
    os.environ.update(
        {
            "AWORLD_STUDIO_AUTH": ":".join(LOGIN),
            "OPENAI_API_KEY": PROVIDER_KEY,
            "HELD_UNASKED_KEY": UNINVITED_KEY,
            "AWORLD_STUDIO_ENV_ALLOW": "OPENAI_API_KEY",
            "GRADIO_TEMP_DIR": str(cache),
        }
    )
    try:
        # the operator invites OPENAI_API_KEY: a ${OPENAI_API_KEY} in an upload may name it (issue 41.1) — set in
        # the environment, which the studio's clean restart (its login is there too) takes out and puts back
        app = StudioProcess(base / "runs").start(timeout_s=180)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    from gradio_client import Client

    client = Client(app.url, verbose=False, auth=LOGIN)
    yield app, client, base, cache
    app.stop()


def env_dump_reward(folder: Path) -> Path:
    """A reward that writes the environment it sees (its user code) into a file, then scores."""
    out = folder / "seen_env.json"
    reward = folder / "env_reward.py"
    reward.write_text(
        f"import json, os\n\ndef seen(completion, answer, **kw):\n"
        f"    json.dump(dict(os.environ), open({str(out)!r}, 'w'))\n"
        f"    return 1.0 if completion == answer else 0.0\n"
    )
    return reward


def leaks_in(folder: Path) -> list[str]:
    found = []
    for f in folder.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            found += [f"{f}: {s}" for s in SECRETS if s.encode() in data]
    return found


def test_a_literal_key_in_an_uploaded_agent_is_stored_and_served_masked(studio, tmp_path):
    from gradio_client import handle_file

    app, client, base, cache = studio
    agent = tmp_path / "agent.yaml"
    agent.write_text(
        f"# an agent with keys written in it\nname: leaky\nmodel: {MODEL}\nsystem_prompt: Reply.\n"
        f"api_key: {LITERAL_KEY}   # oops\nextra_headers:\n  Authorization: {LITERAL_HEADER}\n"
    )
    reward = env_dump_reward(tmp_path)
    res = client.predict(
        handle_file(str(agent)),
        None,
        None,
        handle_file(str(reward)),
        "env_reward.py:seen@1",
        "",
        "trl",
        api_name="/check",
    )
    text = json.dumps(res)
    assert res["modules"]["agent"]["status"] != "error", res["modules"]["agent"]
    assert "a key written literally is never stored" in text  # the user is told, and how to pass it
    assert not any(s in text for s in SECRETS), text  # responses
    assert leaks_in(app.runs_dir) == []  # uploads and everything under the runs dir
    assert leaks_in(cache) == []  # Gradio's upload cache
    stored = next(app.runs_dir.glob(".uploads/*/agent.yaml"))
    lines = stored.read_text().splitlines()
    assert lines[4] == 'api_key: "****"   # oops' and len(lines) == 7  # masked in place: lines kept

    # Gradio's file route serves what was uploaded (to whoever has its path): the copy the studio got is masked
    with httpx.Client(base_url=app.url, timeout=60) as http:
        assert http.post("login", data={"username": LOGIN[0], "password": LOGIN[1]}).status_code == 200
        up = http.post("gradio_api/upload", files={"files": ("agent.yaml", agent.read_bytes())})
        assert up.status_code == 200, up.text
        server_path = up.json()[0]
        # masked before its path was even answered (aworld_gui/core/upload_guard.py; issue 29 item 3)
        assert LITERAL_KEY.encode() not in http.get("gradio_api/file=" + server_path).content
        fd = {"path": server_path, "meta": {"_type": "gradio.FileData"}, "orig_name": "agent.yaml"}
        client.predict(fd, None, None, None, "", "", "trl", api_name="/check")
        served = http.get("gradio_api/file=" + server_path)
        assert served.status_code == 200 and b'api_key: "****"' in served.content  # and after a check
        assert not any(s.encode() in served.content for s in SECRETS)


def test_user_code_sees_no_login_and_only_the_keys_its_agent_names(studio, tmp_path):
    from gradio_client import handle_file

    app, client, base, cache = studio
    reward = env_dump_reward(tmp_path)
    seen_file = tmp_path / "seen_env.json"
    res = client.predict(
        None, None, None, handle_file(str(reward)), "env_reward.py:seen@1", "", "trl", api_name="/check"
    )
    assert res["modules"]["reward"]["status"] == "ok", res["modules"]["reward"]
    seen = json.loads(seen_file.read_text())
    assert "AWORLD_STUDIO_AUTH" not in seen and "OPENAI_API_KEY" not in seen
    assert not any(s in json.dumps(seen) for s in SECRETS)
    assert seen.get("PATH")  # the rest of the environment is there

    agent = tmp_path / "named.yaml"

    def check_agent_asking_for(name: str) -> tuple[dict, dict]:
        """/check of an agent whose api_key asks for ``name``, with the reward that records its environment: (the
        answer, the environment the reward saw)."""
        agent.write_text(f"name: named\nmodel: {MODEL}\nsystem_prompt: Reply.\napi_key: ${{{name}}}\n")
        seen_file.unlink()  # the last check wrote it: this one must write it again
        answer = client.predict(
            handle_file(str(agent)),
            None,
            None,
            handle_file(str(reward)),
            "env_reward.py:seen@1",
            "",
            "trl",
            api_name="/check",
        )
        return answer, json.loads(seen_file.read_text())

    res, seen = check_agent_asking_for("OPENAI_API_KEY")  # an agent that asks for the key by name
    assert seen["OPENAI_API_KEY"] == PROVIDER_KEY  # asked for by ${OPENAI_API_KEY}
    assert "AWORLD_STUDIO_AUTH" not in seen and LOGIN[1] not in json.dumps(seen)  # never the login
    assert PROVIDER_KEY not in json.dumps(res)  # and the response holds no value

    # a variable the operator did not invite cannot be asked for by naming it (issue 41.1): not substituted in the
    # agent, not handed to user code, its value nowhere in the answer
    res, seen = check_agent_asking_for("HELD_UNASKED_KEY")
    assert res["modules"]["agent"]["status"] == "error"
    assert "${HELD_UNASKED_KEY} is not substituted" in res["modules"]["agent"]["message"]
    assert "--env-allow HELD_UNASKED_KEY" in res["modules"]["agent"]["message"]
    assert "HELD_UNASKED_KEY" not in seen and UNINVITED_KEY not in json.dumps(seen)
    assert UNINVITED_KEY not in json.dumps(res)


def test_the_check_worker_holds_no_credential_in_its_environment(studio):
    app = studio[0]
    studio_proc = psutil.Process(app.proc.pid)
    workers = [p for p in studio_proc.children(recursive=True) if "aworld_gui.worker.zygote" in " ".join(p.cmdline())]
    assert workers
    env = workers[0].environ()
    assert "AWORLD_STUDIO_AUTH" not in env and "OPENAI_API_KEY" not in env


def test_a_run_process_gets_only_what_its_spec_names(tmp_path, monkeypatch):
    monkeypatch.setenv("AWORLD_STUDIO_AUTH", ":".join(LOGIN))
    monkeypatch.setenv("OPENAI_API_KEY", PROVIDER_KEY)
    monkeypatch.setenv("HF_TOKEN", "hf_not_named_anywhere")
    run = RunDir.create(tmp_path / "runs", "nothing")
    run.write_spec(
        {
            "engine": "no-such-engine",
            "run_id": run.run_id,
            "agent": {"model": "m", "api_key": "${OPENAI_API_KEY}"},
            "machine_slot": False,
        }
    )
    pid = spawn_run(run.path)
    try:
        env = psutil.Process(pid).environ()
    finally:
        terminate_tree(pid, grace_s=0)
    assert env.get("OPENAI_API_KEY") == PROVIDER_KEY
    assert "AWORLD_STUDIO_AUTH" not in env and "HF_TOKEN" not in env


def test_run_specs_are_shown_and_exported_with_secrets_masked(tmp_path):
    from aworld_gui.worker.check_worker import CheckWorker
    from aworld_gui.core.studio import Studio

    studio = Studio(tmp_path / "runs", worker=CheckWorker())  # not started: no worker process
    run = RunDir.create(studio.runs_dir, "verl")
    run.write_spec(
        {
            "engine": "verl",
            "run_id": run.run_id,
            "agent": {"model": "m", "api_key": "${OPENAI_API_KEY}"},
            "config": {"env_vars": {"WANDB_API_KEY": LITERAL_KEY, "WANDB_PROJECT": "p"}},
        }
    )
    run.write_status(state="finished")
    shown = studio.spec_text(run.run_id)
    assert LITERAL_KEY not in shown and 'WANDB_API_KEY: "****"' in shown and "${OPENAI_API_KEY}" in shown
    exported = Path(studio.export_spec(run.run_id))
    assert LITERAL_KEY not in exported.read_text()
    assert yaml.safe_load(exported.read_text())["config"]["env_vars"]["WANDB_PROJECT"] == "p"
    assert LITERAL_KEY in run.file("run.yaml").read_text()  # the run itself keeps what it needs (not served)


def test_the_studio_login_is_not_left_in_its_environment(tmp_path):
    """serve.keep_credentials_private: the login is taken out of the environment children inherit."""
    import subprocess

    code = (
        "import os\nfrom aworld_gui.web.serve import keep_credentials_private\nos.environ['AWORLD_STUDIO_AUTH']='a:b'\n"
        "keep_credentials_private()\nimport subprocess, sys\n"
        "print(subprocess.run([sys.executable, '-c', 'import os; print(os.environ.get(\"AWORLD_STUDIO_AUTH\"))'],"
        " capture_output=True, text=True).stdout.strip())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.splitlines()[0] == "None", out.stdout + out.stderr
