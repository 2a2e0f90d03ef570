"""The studio driven through its named Gradio endpoints with ``gradio_client``, against a real
``python app.py`` in a subprocess (free port, temporary runs dir) and the real trl engine."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import psutil
import httpx
import pytest
from testing.waiting import wait_for

from aworld_gui.core import inputs as inp
from testing.studio import StudioProcess, end_process_group, start_fake_run

from gradio_client import Client, handle_file  # noqa: E402 - in requirements.txt

DEMO_REWARD_FILE = inp.REWARDS_DIR / "letter_reward.py"
LONG_CONFIG = "learning_rate: 0.001\nprompts_per_step: 8\nnum_generations: 16\nmax_steps: 5000\nsave_steps: 5000\n"


@pytest.fixture(scope="module")
def studio(tmp_path_factory):
    base = tmp_path_factory.mktemp("studio-api")
    app = StudioProcess(base / "runs", extra=["--stop-timeout", "4"]).start()
    started: list = []
    yield app, started
    app.stop()
    for pid in started:
        end_process_group(pid)


@pytest.fixture(scope="module")
def client(studio):
    return Client(studio[0].url, verbose=False)


def demo_files():
    return [
        handle_file(str(inp.DEMO_AGENT)),
        handle_file(str(inp.DEMO_TRAIN)),
        handle_file(str(inp.DEMO_TEST)),
        handle_file(str(DEMO_REWARD_FILE)),
        "letter_reward.py:letter_reward@1",
    ]


def test_endpoints_are_named(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {"/check", "/probe", "/launch", "/status", "/stop", "/list_runs"} <= names


def test_probe_samples_the_base_model_and_a_second_call_reuses_the_stored_report(client, studio):
    """Issue 44: the probe from the client API, as from Setup's Probe button and the CLI — the report (no sample rows:
    they stay in the stored file), then the same report again without sampling; bad input is a clear error."""
    config = "num_generations: 4\nmax_completion_length: 8\nmax_steps: 20\n"
    first = client.predict(*demo_files(), config, "trl", 6, api_name="/probe")
    assert first["ok"] is True and first["reused"] is False, first
    report = first["report"]
    assert report["pass_rates"]["prompts"] == 6 and report["zero_spread"]["group_size"] == 4
    assert "sample_rows" not in report and first["stored"] == str(
        studio[0].runs_dir / ".probes" / f"{report['key']}.json"
    )
    again = client.predict(*demo_files(), config, "trl", 6, api_name="/probe")
    assert again["reused"] is True and again["report"]["key"] == report["key"]
    bad = client.predict(*demo_files(), config, "trl", 0, api_name="/probe")
    assert bad == {"ok": False, "error": "prompts is 0: probe at least 1 prompt", "module": None}
    broken = client.predict(*demo_files(), "learning_rate: abc\n", "trl", 6, api_name="/probe")
    assert broken["ok"] is False and broken["module"] == "config" and "learning_rate" in broken["error"], broken


def test_check_uploaded_demo_files_all_green(client):
    res = client.predict(*demo_files(), LONG_CONFIG, "trl", api_name="/check")
    assert res["ok"] is True, res
    assert {m: r["status"] for m, r in res["modules"].items()} == {
        "agent": "ok",
        "dataset": "ok",
        "reward": "ok",
        "config": "ok",
        "engine": "ok",
    }
    assert res["effective_config"]["max_steps"] == 5000
    assert "Say the letter A:" in res["rendered_prompt"]


def test_concurrent_checks_from_one_client_each_get_their_result(studio):
    """Issue 29 item 9: 200 concurrent /check calls from one gradio_client got 198 "cancelled" (they share the
    client's session, and a page's newer check cancels its older one). An API call is never cancelled by another."""
    from concurrent.futures import ThreadPoolExecutor

    one = Client(studio[0].url, verbose=False)
    files = demo_files()
    jobs = [one.submit(*files, LONG_CONFIG, "trl", api_name="/check") for _ in range(20)]
    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(lambda job: job.result(timeout=240), jobs))
    bad = [
        {"cancelled": r.get("cancelled"), **{m: (v["status"], v["message"][:300]) for m, v in r["modules"].items()}}
        for r in results
        if r["ok"] is not True or r.get("cancelled")
    ]
    assert not bad, f"{len(bad)} of {len(results)} calls: {bad}"


def test_check_bad_dataset_reports_its_error(client, tmp_path):
    bad = tmp_path / "broken_train.jsonl"
    bad.write_text('{"prompt": "Say A", "answer": "A"}\n{"prompt": oops\n')
    files = demo_files()
    files[1] = handle_file(str(bad))
    res = client.predict(*files, "", "trl", api_name="/check")
    assert res["ok"] is False
    assert res["modules"]["dataset"]["status"] == "error"
    assert "broken_train.jsonl" in res["modules"]["dataset"]["message"]
    launch = client.predict(*files, "", "trl", api_name="/launch")
    assert launch["ok"] is False and launch["modules"]["dataset"]["status"] == "error"


def test_an_agent_uploaded_under_another_suffix_is_checked_and_never_served_unmasked(client, studio, tmp_path):
    """Issue 41 item 7: an agent saved as ``agent.yaml.bak`` got ``event: error, data: null`` from /check (Gradio
    refused the suffix, the reason only in the studio's log) and its cached copy was served with its key. Now the
    check reads it as the YAML it is, and the copy Gradio serves is masked like any agent's."""
    key = "sk-bak-suffix-agent-key-5521"
    text = inp.DEMO_AGENT.read_text(encoding="utf-8").replace(
        "../models/tiny-letters", str(inp.DEMO_AGENT.parent.parent / "models" / "tiny-letters")
    )
    bak = tmp_path / "agent.yaml.bak"
    bak.write_text(text + f"api_key: {key}\n", encoding="utf-8")
    files = demo_files()
    files[0] = handle_file(str(bak))
    res = client.predict(*files, "", "trl", api_name="/check")
    agent = res["modules"]["agent"]  # checked, its key masked in the copy it read (and said so)
    assert agent["status"] == "warning" and "letters-agent" in agent["message"], agent
    assert any("never stored" in w for w in agent["warnings"]) and key not in json.dumps(res), agent
    r = httpx.post(studio[0].url + "gradio_api/upload", files={"files": (bak.name, bak.read_bytes())}, timeout=60)
    [path] = r.json()
    served = httpx.get(studio[0].url + f"gradio_api/file={path}", timeout=60)
    assert served.status_code == 200 and key not in served.text and "****" in served.text, served.text[:300]


def test_a_1mb_prompt_comes_back_cut_with_its_length_named(client, tmp_path):
    big = tmp_path / "big_first_row.jsonl"
    big_row = {"prompt": "Say the letter A: " + "please " * 150_000, "answer": "A"}
    big.write_text(json.dumps(big_row) + "\n" + inp.DEMO_TRAIN.read_text())
    files = demo_files()
    files[1] = handle_file(str(big))
    res = client.predict(*files, "", "trl", api_name="/check")
    shown = res["rendered_prompt"]
    assert "Say the letter A: please please" in shown
    assert len(shown) < 5_000, len(shown)
    assert "more characters not shown" in shown
    config = res["modules"]["config"]
    assert config["status"] == "error" and "line 1" in config["message"] and "tokens" in config["message"], config


@pytest.mark.parametrize("run_id", ["x" * 5000, "../" * 40 + "etc", "a/b", " "])
def test_status_and_stop_answer_a_bad_run_id_with_an_error(client, run_id):
    status = client.predict(run_id, api_name="/status")
    stop = client.predict(run_id, False, api_name="/stop")
    if not run_id.strip():  # empty: status means the latest run (none here may exist), stop needs an id
        assert "error" in stop
        return
    for res in (status, stop):
        assert "is not a run id" in res["error"] and len(res["error"]) < 300, res
    assert "runs" in client.predict(api_name="/list_runs")  # the studio still answers


def test_status_stop_and_list_on_a_streaming_run(client, studio):
    app, started = studio
    run, pid = start_fake_run(app.runs_dir, "--steps", "100000", "--rate", "20")
    started.append(pid)
    first = wait_for(
        lambda: (s := client.predict(run.run_id, api_name="/status")).get("step", 0) >= 5 and s,
        30,
        "the fake run to stream",
    )
    assert first["state"] == "running"
    later = wait_for(
        lambda: (s := client.predict(run.run_id, api_name="/status"))["step"] > first["step"] + 5 and s,
        20,
        "more steps",
    )
    assert later["points"]["reward"] > first["points"]["reward"]
    runs = client.predict(api_name="/list_runs")["runs"]
    assert run.run_id in [r["run_id"] for r in runs]
    client.predict(run.run_id, False, api_name="/stop")
    wait_for(lambda: client.predict(run.run_id, api_name="/status")["state"] == "stopped", 20, "stopped")


def header_id(url: str, opener=urllib.request.build_opener()) -> int:  # noqa: B008
    cfg = json.load(opener.open(url + "config", timeout=10))
    return next(c["id"] for c in cfg["components"] if c.get("props", {}).get("elem_id") == "run-header")


def live_ticket(url: str, run_id: str, opener=urllib.request.build_opener(), component_id: int | None = None) -> str:  # noqa: B008
    """What the Monitor page does to watch a run: ask the run header's server function for a ticket."""
    body = json.dumps(
        {
            "component_id": component_id or header_id(url, opener),
            "fn_name": "live_ticket",
            "session_hash": "test",
            "data": [run_id, "g1", ["kl"], 0.6],
        }
    ).encode()
    req = urllib.request.Request(
        url + "gradio_api/component_server", data=body, headers={"Content-Type": "application/json"}
    )
    return json.load(opener.open(req, timeout=10))


def stream_messages(url: str, n: int, opener=urllib.request.build_opener()) -> list[dict]:  # noqa: B008
    out = []
    with opener.open(url, timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/event-stream")
        for line in r:
            if line.startswith(b"data: "):
                out.append(json.loads(line[6:]))
                if len(out) == n:
                    return out
    return out


def test_the_monitor_stream_pushes_a_live_run(client, studio):
    app, started = studio
    run, pid = start_fake_run(app.runs_dir, "--steps", "100000", "--rate", "20")
    started.append(pid)
    wait_for(lambda: client.predict(run.run_id, api_name="/status").get("step", 0) >= 3, 30, "the fake run")
    ticket = live_ticket(app.url, run.run_id)
    first, second, third = stream_messages(app.url + "aworld/live/" + ticket, 3)
    assert f'data-run="{run.run_id}"' in first["header"] and 'data-state="running"' in first["header"]
    assert "kl" in first["charts"]["custom"] and first["log"] is not None  # everything, once
    step = lambda m: int(m["header"].split('data-step="')[1].split('"')[0])  # noqa: E731
    assert step(first) < step(second) < step(third)  # then pushed as the run writes
    assert third["log"] is None or third["log"] != first["log"]  # a part is resent only when it changed
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(app.url + "aworld/live/not-a-ticket", timeout=10)
    assert e.value.code == 404
    client.predict(run.run_id, True, api_name="/stop")


def test_a_run_that_ignores_stop_is_killed_after_the_timeout(client, studio):
    app, started = studio
    run, pid = start_fake_run(app.runs_dir, "--steps", "100000", "--rate", "20", "--ignore-stop")
    started.append(pid)
    wait_for(lambda: client.predict(run.run_id, api_name="/status").get("step", 0) > 2, 30, "streaming")
    client.predict(run.run_id, False, api_name="/stop")
    st = wait_for(
        lambda: (s := client.predict(run.run_id, api_name="/status"))["state"] == "stopped" and s,
        40,
        "the watchdog to kill it (stop timeout 4 s)",
    )
    assert st["stop_requested"] and st["step"] < 100000
    wait_for(
        lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
        15,
        "the process to be gone, not just marked",
    )


def test_launch_trains_the_demo_queues_a_second_run_stops_and_survives_a_restart(client, studio, tmp_path):
    app, _ = studio
    first = client.predict(*demo_files(), LONG_CONFIG, "trl", api_name="/launch")
    assert first["ok"] is True, first
    rid = first["run_id"]
    # the reward curve gains points while the model trains in its own process
    st = wait_for(
        lambda: (s := client.predict(rid, api_name="/status")).get("points", {}).get("reward", 0) >= 3 and s,
        180,
        "reward points from the trl run",
    )
    assert st["state"] == "running" and st["engine"] == "trl"
    # a second launch while the machine is busy is queued
    second = client.predict(*demo_files(), LONG_CONFIG, "trl", api_name="/launch")
    assert second["ok"] is True and second["queued"] is True
    wait_for(lambda: client.predict(second["run_id"], api_name="/status")["state"] == "queued", 30, "queued")
    client.predict(second["run_id"], False, api_name="/stop")
    wait_for(
        lambda: client.predict(second["run_id"], api_name="/status")["state"] == "stopped", 30, "the queued run to stop"
    )
    # restart the studio mid-run: the run keeps training and is listed with its full history
    before = client.predict(rid, api_name="/status")
    app.stop()
    time.sleep(1.0)
    app.start()
    client2 = Client(app.url, verbose=False)
    runs = client2.predict(api_name="/list_runs")["runs"]
    assert rid in [r["run_id"] for r in runs]
    after = wait_for(
        lambda: (s := client2.predict(rid, api_name="/status"))["step"] > before["step"] and s,
        90,
        "the run to keep streaming after the restart",
    )
    assert after["state"] == "running"
    assert after["points"]["reward"] >= before["points"]["reward"]  # full history, not just new lines
    # graceful stop at a step boundary
    client2.predict(rid, False, api_name="/stop")
    final = wait_for(
        lambda: (s := client2.predict(rid, api_name="/status"))["state"] in ("stopped", "failed") and s,
        120,
        "the trl run to stop",
    )
    assert final["state"] == "stopped", final


def test_login_protects_the_page_and_the_api(tmp_path, monkeypatch):
    import urllib.error
    import urllib.request

    monkeypatch.setenv("AWORLD_STUDIO_AUTH", "alice:s3cret")  # the environment variable form
    with StudioProcess(tmp_path / "runs") as app:
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(app.url + "gradio_api/info", timeout=10)
        assert e.value.code in (401, 403)
        with pytest.raises(Exception):  # noqa: B017
            Client(app.url, verbose=False)
        client = Client(app.url, auth=("alice", "s3cret"), verbose=False)
        assert client.predict(api_name="/list_runs") == {"runs": []}
        # the Monitor's stream: its ticket comes through Gradio's login like every other call
        session = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        session.open(app.url + "login", data=b"username=alice&password=s3cret", timeout=10)
        ticket = live_ticket(app.url, "no-such-run", session)
        (msg,) = stream_messages(app.url + "aworld/live/" + ticket, 1)
        assert "no-such-run" in msg["header"] and "data-run=" not in msg["header"]
        with pytest.raises(urllib.error.HTTPError) as e:  # the same call without the login
            live_ticket(app.url, "no-such-run", component_id=header_id(app.url, session))
        assert e.value.code in (401, 403)
