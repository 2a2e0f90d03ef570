"""The run cache and plot data: incremental reads, bounded downsampling, a 100k-step run."""

from __future__ import annotations

import json
import re
import time

import pytest

from testing.fake_run import metric_row, write_history


class NoWorker:
    """A check worker stand-in: these tests only read run directories."""

    def start(self):
        pass


from aworld_gui.core.run_cache import MAX_POINTS, RunCache, RunState, Series  # noqa: E402
from aworld_gui.tabs.runs_tab import overlay_chart  # noqa: E402
from engines.runs.rundir import RunDir  # noqa: E402


def test_series_downsamples_incrementally_and_keeps_the_mean():
    s = Series(max_points=100)
    for i in range(1, 10_001):
        s.add(i, float(i % 2))  # alternating 0/1: every bucket of even width averages 0.5
    assert s.count == 10_000
    assert 50 <= len(s.xs) <= 100
    assert all(abs(y - 0.5) < 1e-9 for y in s.ys[:-1])
    assert s.xs == sorted(s.xs)
    assert sum(s.ns) == 10_000
    assert s.last_x == 10_000 and s.last_y == 0.0


def test_series_smoothing_is_a_debiased_ema():
    s = Series()
    for i in range(50):
        s.add(i, 1.0)
    xs, ys = s.points(0.9)
    assert len(xs) == 50 and all(abs(y - 1.0) < 1e-9 for y in ys)  # debiased: no ramp from 0


def test_run_state_reads_only_new_lines_and_torn_lines(tmp_path):
    run = RunDir.create(tmp_path, "fake")
    run.write_status(state="running", step=0, total_steps=10)
    st = RunState(run.path)
    st.refresh(force=True)
    assert st.series == {}
    run.append_metrics(1, {"loss": 1.0, "reward": 0.1})
    with open(run.file("metrics.jsonl"), "a") as f:
        f.write('{"step": 2, "time": 1.0, "loss": 0.5, "rew')  # the writer is mid-line
    st.refresh(force=True)
    assert st.series["loss"].count == 1
    with open(run.file("metrics.jsonl"), "a") as f:
        f.write('ard": 0.2}\n')
    st.refresh(force=True)
    assert st.series["loss"].count == 2 and st.latest["reward"] == 0.2
    v = st.metrics_version
    st.refresh(force=True)
    assert st.metrics_version == v  # nothing new, nothing changed


def test_the_runs_tables_status_read_never_puts_an_older_status_back(tmp_path, monkeypatch):
    """``refresh_status_only`` (the Runs table) read and wrote ``status`` outside the run cache's lock: its read,
    made before a stream's newer one and kept after it, put the older status back. The interleaving is forced:
    the table's read is held between reading status.json and keeping it while the run ends and the stream reads
    it again — the stream then has to wait for the table's read, or (without the lock) is done before it."""
    import threading

    from aworld_gui.core import run_cache

    truth = {"state": "stopping"}  # what status.json says now
    table_read, go, stream_waits_or_is_done = threading.Event(), threading.Event(), threading.Event()

    def effective_status(run):
        seen = dict(truth)
        if threading.current_thread().name == "runs-table":
            table_read.set()
            assert go.wait(10)
        return seen

    class WatchedLock:
        """A lock that says when a thread has to wait for it."""

        def __init__(self):
            self.lock = threading.Lock()

        def __enter__(self):
            if not self.lock.acquire(blocking=False):
                stream_waits_or_is_done.set()
                self.lock.acquire()

        def __exit__(self, *exc):
            self.lock.release()

    def stream():
        st.refresh(force=True)
        stream_waits_or_is_done.set()

    monkeypatch.setattr(run_cache, "effective_status", effective_status)
    st = RunState(RunDir.create(tmp_path, "fake").path)
    st._lock = WatchedLock()
    threads = [threading.Thread(target=st.refresh_status_only, name="runs-table"), threading.Thread(target=stream)]
    threads[0].start()
    assert table_read.wait(10)  # the table has read "stopping"...
    truth["state"] = "stopped"  # ...the run ends...
    threads[1].start()  # ...and the stream reads it
    assert stream_waits_or_is_done.wait(10)
    go.set()  # the table keeps what it read
    for t in threads:
        t.join(10)
    assert st.status["state"] == "stopped" and st.state == "stopped"


def test_non_numeric_and_nan_values_are_skipped(tmp_path):
    run = RunDir.create(tmp_path, "fake")
    with open(run.file("metrics.jsonl"), "w") as f:
        f.write(json.dumps({"step": 1, "time": 1, "loss": None, "note": "x", "flag": True, "reward": 0.5}) + "\n")
    st = RunState(run.path).refresh(force=True)
    assert set(st.series) == {"reward"}


@pytest.fixture(scope="module")
def long_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("long")
    run = RunDir.create(base, "fake")
    run.write_spec({"engine": "fake"})
    run.mark_process("running", started=time.time(), step=100_000, total_steps=200_000)
    write_history(run, 100_000)
    return run


def test_a_tick_on_a_100k_step_run_costs_new_lines_not_history(long_run):
    cache = RunCache()
    t0 = time.perf_counter()
    st = cache.refresh(long_run.path, force=True)  # reattach: the whole history, once
    first_load = time.perf_counter() - t0
    assert st.series["reward"].count == 100_000
    assert len(st.series["reward"].xs) <= MAX_POINTS
    ticks = []
    for i in range(30):
        with open(long_run.file("metrics.jsonl"), "a") as f:
            f.write(json.dumps(metric_row(100_001 + i, time.time())) + "\n")
        t0 = time.thread_time()  # CPU time of this thread: robust to other load on the machine
        st = cache.refresh(long_run.path, force=True)
        chart = overlay_chart({"run": st.series["reward"]}, "reward", 0.6)
        ticks.append(time.thread_time() - t0)
    ticks.sort()
    p95 = ticks[int(0.95 * len(ticks)) - 1]
    assert st.series["reward"].count == 100_030
    assert int(chart.split('data-points="')[1].split('"')[0]) <= MAX_POINTS
    assert p95 < 0.020, f"tick p95 {p95 * 1000:.1f} ms (first load {first_load:.2f} s)"
    assert first_load < 10.0


def test_monitor_refresh_on_a_100k_step_run(long_run, monkeypatch):
    """One poll of the Monitor page with everything due (header, three SVG curves, trajectories,
    log, events) stays under 20 ms of CPU on a 100k-step run; curves stay within the point budget."""
    from aworld_gui.core import run_cache
    from aworld_gui.tabs.monitor_tab import MonitorTab
    from aworld_gui.core.studio import Studio

    studio = Studio(long_run.path.parent, worker=NoWorker(), cache=RunCache())
    tab = MonitorTab(studio)
    monkeypatch.setattr(run_cache, "MIN_REFRESH_S", 0.0)  # no read sharing between sessions here
    tab.live(long_run.run_id, "g", [], 0.6, {})  # loads the history
    times = []
    for i in range(30):
        with open(long_run.file("metrics.jsonl"), "a") as f:
            f.write(json.dumps(metric_row(200_001 + i, time.time())) + "\n")
        t0 = time.thread_time()
        out = tab.live(long_run.run_id, "g", ["kl"], 0.6, {})
        json.dumps(out)
        times.append(time.thread_time() - t0)
    times.sort()
    assert times[int(0.95 * len(times)) - 1] < 0.020, f"poll CPU times (ms): {[round(t * 1000, 1) for t in times]}"
    reward = out["charts"]["reward"]  # downsampled: one smoothed polyline of bucket means, no raw line
    assert reward.count("<polyline") == 1
    assert MAX_POINTS // 2 <= int(reward.split('data-points="')[1].split('"')[0]) <= MAX_POINTS
    assert 'data-step="200030"' in out["header"] and "kl" in out["charts"]["custom"]


def test_polls_send_only_what_changed(tmp_path):
    """A finished run is sent once; later polls with the page's keys carry nothing."""
    from aworld_gui.tabs.monitor_tab import MonitorTab
    from aworld_gui.core.studio import Studio

    run = RunDir.create(tmp_path, "fake")
    run.write_spec({"engine": "fake"})
    run.write_status(state="finished", step=3, total_steps=3)
    for s in range(1, 4):
        run.append_metrics(s, {"loss": 1.0 / s, "reward": s / 3})
    tab = MonitorTab(Studio(tmp_path, worker=NoWorker(), cache=RunCache()))
    out = tab.live(run.run_id, "g", [], 0.0, {})
    assert 'data-state="finished"' in out["header"] and 'data-points="3"' in out["charts"]["reward"]
    keys = out["keys"]
    for _ in range(3):
        time.sleep(0.25)
        out = tab.live(run.run_id, "g", [], 0.0, keys)
        assert [out[k] for k in ("header", "charts", "samples", "log", "events")] == [None] * 5
        keys = out["keys"]
    import psutil

    me = psutil.Process()
    run.write_status(state="running", pid=me.pid, pid_create_time=me.create_time())  # training again
    run.append_metrics(4, {"loss": 0.2, "reward": 1.0})  # new data: header and curves, nothing else
    time.sleep(0.25)
    out = tab.live(run.run_id, "g", [], 0.0, keys, due=())  # curves not due yet: owed, not lost
    assert out["header"] and out["charts"] is None
    out = tab.live(run.run_id, "g", [], 0.0, out["keys"])
    assert 'data-points="4"' in out["charts"]["reward"] and out["samples"] is None
    assert 'data-step="4"' in out["header"]  # the header of the same read comes with them
    run.append_metrics(5, {"loss": 0.1, "reward": 1.0})
    run.write_status(state="finished", step=5)  # the run ends before its curves were due:
    time.sleep(0.25)
    out = tab.live(run.run_id, "g", [], 0.0, out["keys"], due=())
    assert 'data-points="5"' in out["charts"]["reward"] and 'data-state="finished"' in out["header"]


def test_the_first_curves_are_not_held_back_to_their_pace(tmp_path):
    """At the first steps the header showed step 3 while the curves still said "waiting"."""
    import psutil

    from aworld_gui.tabs.monitor_tab import MonitorTab
    from aworld_gui.core.studio import Studio

    run = RunDir.create(tmp_path, "fake")
    run.write_spec({"engine": "fake"})
    me = psutil.Process()
    run.write_status(state="running", step=0, total_steps=10, pid=me.pid, pid_create_time=me.create_time())
    tab = MonitorTab(Studio(tmp_path, worker=NoWorker(), cache=RunCache()))
    out = tab.live(run.run_id, "g", [], 0.6, {})
    assert "waiting for the first logged step" in out["charts"]["reward"]
    for step in (1, 2, 3):
        run.append_metrics(step, {"loss": 1.0 / step, "reward": step / 3})
    time.sleep(0.25)
    out = tab.live(run.run_id, "g", [], 0.6, out["keys"], due=())  # nothing due by the pace...
    assert 'data-points="3"' in out["charts"]["reward"] and 'data-step="3"' in out["header"]  # ...yet sent
    # the legend says which number is which: the latest (as in the header) and the smoothed one
    assert "train · latest <b>1.000</b>" in out["charts"]["reward"]
    assert "train · smoothed 0.6" in out["charts"]["reward"]
    run.append_metrics(4, {"loss": 0.2, "reward": 0.5})
    time.sleep(0.25)
    assert tab.live(run.run_id, "g", [], 0.6, out["keys"], due=())["charts"] is None  # then at its pace


def test_svg_chart_axes_and_empty_state():
    from aworld_gui.rendering.charts import Line, svg_chart, ticks

    assert [round(t, 6) for t in ticks(0.0, 1.0, 5)] == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert [round(t) for t in ticks(1, 100_000, 5)] == [20000, 40000, 60000, 80000, 100000]
    assert 'data-points="0"' in svg_chart([Line("r", [], [], "#000")])
    html = svg_chart([Line("reward", [1, 2, 3], [0.1, 0.5, 0.9], "#123456")], "reward", chart_id="reward")
    assert 'data-points="3"' in html and 'data-last-step="3"' in html and "<polyline" in html
    assert "reward <b>0.900</b>" in html  # the legend shows the latest value
    one = svg_chart([Line("x", [5], [2.0], "#000", markers=True)])  # a single point still draws
    assert "<circle" in one and "nan" not in one.lower()


def test_axis_labels_write_every_gridline_exactly():
    """Gridlines at 0.25/0.75 read 0.25/0.75 (they read 0.2/0.8), 0.025 reads 0.025 (it read 0.03)."""
    import re

    from aworld_gui.rendering.charts import Line, nice_step, svg_chart, tick_label, ticks

    for lo, hi, target, want in (
        (0.0, 1.0, 4, ["0", "0.25", "0.50", "0.75", "1.00"]),
        (0.0, 0.1, 4, ["0", "0.025", "0.050", "0.075", "0.100"]),
        (0.0, 10.0, 4, ["0", "2.5", "5.0", "7.5", "10.0"]),
        (0.0, 300.0, 6, ["0", "50", "100", "150", "200", "250", "300"]),
        (-1.0, 1.0, 4, ["-1.0", "-0.5", "0", "0.5", "1.0"]),
    ):
        step = nice_step(hi - lo, target)
        assert [tick_label(v, step) for v in ticks(lo, hi, target)] == want
    # the same through a drawn chart: a reward between 0 and 1 labelled in quarters
    html = svg_chart([Line("reward", list(range(1, 9)), [0.0, 0.1, 0.3, 0.5, 0.6, 0.7, 0.9, 1.0], "#000")])
    labels = re.findall(r'class="aw-tick" text-anchor="end">([^<]+)<', html)
    assert all(float(x) in {0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 0.25, 0.5, 0.75} for x in labels) and len(labels) >= 3
    assert len(set(labels)) == len(labels)  # no two gridlines with the same label


def test_the_y_axis_is_titled_and_the_step_axis_shows_whole_steps_from_the_first_draw():
    """The first draw (one logged step) labelled steps -1..1 and 5.5; the y axis had no title (issue 32 §4)."""
    import re

    from aworld_gui.rendering.charts import Line, svg_chart
    from aworld_gui.rendering.i18n import _, localize

    def step_labels(html: str) -> list[str]:
        return re.findall(r'class="aw-tick" text-anchor="middle">([^<]+)<', html)

    first = svg_chart([Line("reward", [1], [0.25], "#000", markers=True)], _("reward"))
    assert step_labels(first) == ["0", "1", "2"]
    for n in (2, 3, 4, 7):
        labels = step_labels(svg_chart([Line("reward", list(range(1, n + 1)), [0.1] * n, "#000")], "reward"))
        assert labels and all(x.isdigit() for x in labels), (n, labels)
    titles = re.findall(r"rotate\(-90[^>]*>([^<]+)<", localize(first, "zh"))
    assert titles == ["奖励"]


def test_the_overlay_names_runs_by_their_names_with_the_live_run_first_and_on_top():
    """The overlay's legend listed run ids in the order picked, the training run among them (issue 32 §4)."""
    import re

    from aworld_gui.core.run_cache import Series
    from aworld_gui.rendering.i18n import localize

    def series(ys):
        s = Series()
        for i, y in enumerate(ys, 1):
            s.add(i, y)
        return s

    chart = overlay_chart(
        {"r-old": series([0.1, 0.2]), "r-live": series([0.3, 0.4]), "r-unnamed": series([0.5, 0.6])},
        "reward",
        names={"r-old": "baseline", "r-live": "lr 3e-3", "r-unnamed": ""},
        live="r-live",
    )
    chart = localize(chart, "en")
    legend = re.findall(r'<span class="aw-key">.*?</i>([^<]*?) <b>', chart)
    assert legend == ["lr 3e-3 · live", "baseline", "r-unnamed"], legend
    drawn = re.findall(r"<polyline[^>]*><title>([^<]*)</title>", chart)
    assert drawn[-1] == "lr 3e-3 · live" and drawn[:2] == ["baseline", "r-unnamed"]


def test_a_run_deleted_while_watched_is_reported_once(tmp_path):
    import shutil

    from aworld_gui.tabs.monitor_tab import MonitorTab
    from aworld_gui.core.studio import Studio

    run = RunDir.create(tmp_path, "fake")
    run.write_status(state="finished", step=1, total_steps=1)
    tab = MonitorTab(Studio(tmp_path, worker=NoWorker(), cache=RunCache()))
    keys = tab.live(run.run_id, "g", [], 0.0, {})["keys"]
    shutil.rmtree(run.path)
    out = tab.live(run.run_id, "g", [], 0.0, keys)
    assert "no run" in out["header"] and "data-run" not in out["header"]  # the page clears the rest
    assert tab.live(run.run_id, "g", [], 0.0, out["keys"])["header"] is None


def read_stream(streams, w, seconds: float, n_messages: int | None = None, after=None) -> list[dict]:
    """The messages of one stream of ``w`` for up to ``seconds`` (or until ``n_messages``), checking
    its framing and that it is counted in while open; ``after`` runs once the first message is in."""
    import asyncio

    async def read() -> list[dict]:
        got: list[dict] = []
        gen = streams.messages(w)
        assert (await gen.__anext__()).startswith("retry: ")
        assert w.streams == 1

        async def pull():
            async for text in gen:
                assert text.startswith("data: ") and text.endswith("\n\n")
                got.append(json.loads(text[6:]))
                if len(got) == 1 and after:
                    after()
                if len(got) == n_messages:
                    return

        try:
            await asyncio.wait_for(pull(), seconds)
        except asyncio.TimeoutError:
            pass
        await gen.aclose()
        return got

    return asyncio.run(read())


def test_the_live_stream_sends_what_changed_and_nothing_else(tmp_path):
    """The Monitor's server push (aworld_gui/core/live_stream.py): a first message with everything, then
    one only when the run writes something."""
    from aworld_gui.core.live_stream import LiveStreams
    from aworld_gui.tabs.monitor_tab import MonitorTab
    from aworld_gui.core.studio import Studio

    run = RunDir.create(tmp_path, "fake")
    run.write_status(state="finished", step=2, total_steps=10)
    for s in range(1, 3):
        run.append_metrics(s, {"loss": 1.0 / s, "reward": s / 3})
    tab = MonitorTab(Studio(tmp_path, worker=NoWorker(), cache=RunCache()))
    streams = LiveStreams(tab.live, poll_s=0.05)
    ticket = streams.ticket(run.run_id, "g1", ["loss", ""], 0.5)
    w = streams.watch(ticket)
    assert (w.run_id, w.gen, w.picks, w.smoothing) == (run.run_id, "g1", ["loss"], 0.5)
    assert streams.watch("not-a-ticket") is None and streams.ticket(run.run_id, "g1", [], 0) != ticket

    first, *rest = read_stream(streams, w, 1.0, n_messages=2)
    assert rest == []  # 1 s of ticks on an unchanged run: one message, not twenty
    assert 'data-state="finished"' in first["header"] and 'data-gen="g1"' in first["header"]
    assert 'data-points="2"' in first["charts"]["reward"] and "loss" in first["charts"]["custom"]
    assert w.streams == 0  # a closed stream is counted out

    got = read_stream(streams, w, 3.0, n_messages=2, after=lambda: run.append_metrics(3, {"loss": 0.3, "reward": 1.0}))
    assert len(got) == 2 and got[1]["header"] and 'data-step="3"' in got[1]["header"]
    assert 'data-points="3"' in got[1]["charts"]["reward"]
    assert got[1]["samples"] is None and got[1]["log"] is None  # unchanged parts are not resent


def test_the_stream_sends_each_heavy_part_at_its_own_pace():
    """The curves at most every ``every["charts"]``, the trajectories every ``every["samples"]``, a
    part without a pace (the log here) and the header on every poll that changed them.

    The pace is kept on the stream's clock, read when it decides what is due, before the poll runs in a worker
    thread. This test measured it in that thread instead: under load the thread started a few ms later for one
    poll than for the next, and a gap of 0.196 s failed the 0.2 s pace the stream had kept. The clock is injected
    here — each poll moves it 0.05 s — so the pace is checked exactly, and the stream is read for a number of
    messages, not for a time (a read cut off by a timeout could leave a poll counted with its message unread)."""
    from aworld_gui.core.live_stream import HEAVY, LiveStreams

    now = [0.0]
    polls: list[tuple[float, set[str]]] = []  # when each poll ran, on the stream's clock, and what was due

    def live(run_id, gen, picks, smoothing, keys, due, locale="en"):  # a run whose every part changes on every poll
        polls.append((now[0], set(due)))
        n = len(polls)
        now[0] += 0.05
        return {
            "keys": {},
            "header": f"h{n}",
            "events": None,
            **{part: (f"{part}{n}" if part in due else None) for part in HEAVY},
        }

    streams = LiveStreams(live, poll_s=0.0, every={"charts": 0.2, "samples": 60.0}, clock=lambda: now[0])
    w = streams.watch(streams.ticket("r", "g", [], 0.0))

    got = read_stream(streams, w, 60.0, n_messages=13)
    assert len(got) == len(polls) == 13 and all(m["header"] for m in got)  # the header: every poll
    assert all(m["log"] is not None and "log" in due for m, (_, due) in zip(got, polls))  # no pace: every poll
    assert [bool(m["samples"]) for m in got] == [True] + [False] * 12
    charts = [round(t, 6) for t, due in polls if "charts" in due]
    assert charts == [0.0, 0.2, 0.4, 0.6], charts  # every fourth poll of 0.05 s: at most every 0.2 s, never later
    assert [bool(m["charts"]) for m in got] == [i % 4 == 0 for i in range(13)]


def test_unused_tickets_expire(tmp_path):
    from aworld_gui.core.live_stream import LiveStreams

    streams = LiveStreams(lambda *a: {}, poll_s=1.0, ttl_s=0.0)
    old = streams.ticket("r", "g", [], 0.0)
    time.sleep(0.01)
    streams.ticket("r", "g", [], 0.0)  # issuing a ticket forgets those unused for ttl_s
    assert streams.watch(old) is None


class CatalogWorker(NoWorker):
    """Answers the catalog the page is built with: one engine, no rewards."""

    def close(self):
        pass

    def call(self, task, **kw):
        assert task == "catalog"
        engine = {"name": "trl", "available": True, "reason": "", "fields": [], "defaults": {"max_steps": 10}}
        return {"engines": [engine], "rewards": {}}


class HeaderPage:
    """The run header as the page (static/live_monitor.js) keeps it: a Gradio answer replaces it, and a new
    view (``gen``) starts a new stream, its keys empty; the page reads only the shown view's stream. ``states``
    is what the header said after each write."""

    def __init__(self, tab, run_id: str):
        self.tab, self.run_id, self.gen, self.keys, self.states = tab, run_id, None, {}, []

    def _show(self, html: str) -> None:
        gen, state = (re.search(rf'data-{k}="([^"]*)"', html).group(1) for k in ("gen", "state"))
        if gen != self.gen:
            self.gen, self.keys = gen, {}
        label = "stop requested" if state == "running" and "Stop requested" in html else state
        if not self.states or self.states[-1] != label:
            self.states.append(label)

    def answer(self, html: str) -> None:
        from aworld_gui.rendering.i18n import localize

        self._show(localize(html, "en"))  # Gradio translates an answer's markers in the page

    def tick(self) -> None:
        time.sleep(0.25)  # past the run cache's shared-read window
        out = self.tab.live(self.run_id, self.gen, [], 0.6, self.keys)
        self.keys = out["keys"]
        if out["header"]:
            self._show(out["header"])


def monitor_app(tmp_path):
    """(the studio, the app's event handlers, the Monitor tab) of the real page, built without serving it."""
    import warnings

    from aworld_gui.core.studio import Studio
    from aworld_gui.web.page import build_app

    studio = Studio(tmp_path / "runs", worker=CatalogWorker(), cache=RunCache())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        demo = build_app(studio=studio)
    fns = list(demo.fns.values())
    return studio, fns, next(f.fn.__self__ for f in fns if getattr(f.fn, "__name__", "") == "show")


def test_a_stop_in_the_monitor_never_shows_an_older_state_than_the_stream_showed(tmp_path):
    """Stop pressed, handled as the page handles it: every handler the Stop click chains runs at the press, the
    run moves on (stopping, then stopped), the view's stream reads it and shows it at once, and only then do the
    chain's answers land (they come through Gradio's queue, the stream on its own connection: under load the
    answer comes last). The header has one writer per view, so nothing the Stop click answers can put an older
    state back: its chain re-rendered the header and the page showed stopping → running → stopped (issue 32 §2).
    Kill's chain writes no header either."""

    import psutil

    studio, fns, tab = monitor_app(tmp_path)
    try:
        ui = tab.ui

        def chain(button) -> list:
            first = next(f for f in fns if (button._id, "click") in f.targets)
            out = [first]
            while nxt := [f for f in fns if f.trigger_after == out[-1]._id]:
                out.append(nxt[0])
            return out

        header = ui.header._id

        me = psutil.Process()
        run = RunDir.create(studio.runs_dir, "fake")
        run.write_spec({"engine": "fake", "run_id": run.run_id})
        run.write_status(state="running", pid=me.pid, pid_create_time=me.create_time(), step=2, total_steps=9)
        for s in (1, 2):
            run.append_metrics(s, {"loss": 1.0 / s, "reward": s / 3})
        page = HeaderPage(tab, run.run_id)
        page.answer(tab.show(run.run_id, [], 0.6))  # the run picked: its view, then its stream
        page.tick()
        values = {ui.run._id: run.run_id, ui.picker._id: [], ui.smoothing._id: 0.6}
        answers = []
        for f in chain(ui.stop_btn):  # the press: each handler in order, as the page triggers them
            out = f.fn(*[values[c._id] for c in f.inputs])
            ids = [c._id for c in f.outputs]
            if header in ids:
                answers.append(out if len(ids) == 1 else out[ids.index(header)])
        page.tick()  # the stream reads the stop request
        run.write_status(state="stopping")  # the run at its step boundary, saving its checkpoint
        page.tick()
        for html in answers:  # the chain's answers land after the stream's message
            page.answer(html)
        page.tick()
        run.write_status(state="stopped", ended=time.time())
        page.tick()
        assert page.states == ["running", "stop requested", "stopping", "stopped"], page.states
        assert not [f.fn.__name__ for f in chain(ui.kill_btn) if header in {c._id for c in f.outputs}]
    finally:
        studio.close()


class ButtonsPage:
    """The Stop and Kill buttons as the page keeps them, under Gradio's front-end rules for a dependency
    (``trigger_mode``): a trigger while its answer is in flight is dropped (``once``), kept to run once that answer
    lands (``always_last``) or run (``multiple``); a ``.then`` runs when its predecessor's answer lands. A handler
    runs when triggered and its answer lands ``late`` seconds later (as testing/late_answers.py does it), on a
    virtual clock. ``shown`` is what the buttons showed, after each change."""

    def __init__(self, fns, values: dict, buttons: dict, late: float):
        self.fns, self.values, self.buttons, self.late = fns, values, buttons, late
        self.visible = dict.fromkeys(buttons.values(), False)
        self.shown: list[tuple] = [()]
        self.now, self.flight, self.deferred = 0.0, [], set()

    def trigger(self, f) -> None:
        if any(g is f for _, _, g, _ in self.flight) and f.trigger_mode != "multiple":
            if f.trigger_mode == "always_last":
                self.deferred.add(f._id)
            return
        out = f.fn(*[self.values[c._id] for c in f.inputs])
        self.flight.append((self.now + self.late, len(self.shown) + len(self.flight) * 1e-6, f, out))

    def until(self, t: float) -> None:
        while due := sorted((x for x in self.flight if x[0] <= t), key=lambda x: x[:2]):
            self.flight.remove(due[0])
            self.now, _, f, out = due[0]
            ids = [c._id for c in f.outputs]
            for cid, update in zip(ids, out if len(ids) > 1 else [out]):
                if cid in self.buttons and "visible" in update:
                    self.visible[self.buttons[cid]] = update["visible"]
            state = tuple(name for name, v in self.visible.items() if v)
            if state != self.shown[-1]:
                self.shown.append(state)
            for g in [g for g in self.fns if g.trigger_after == f._id]:
                self.trigger(g)
            if f._id in self.deferred:
                self.deferred.discard(f._id)
                self.trigger(f)
        self.now = t


def test_the_stop_and_kill_buttons_never_go_back_to_an_older_state(tmp_path, monkeypatch):
    """Stop pressed on a run that stops in about two seconds, every Gradio answer landing 2 s late (as under load)
    while the stream, on its own connection, sees each change at its next poll: the buttons go Stop → Kill →
    none, never back. They had several writers — the Stop click's answer, the ``buttons`` it chained, and the
    header's ``apply`` on each state change with Gradio's default ``once``, which drops a trigger while an answer is
    in flight — and the page kept Kill on the stopped run: the chain's read, made while it was stopping, landed
    last, and the stream's ``apply`` for "stopped" was dropped. Now ``buttons`` is their one writer, fired by
    ``apply`` alone, ``always_last``: its answers land in order, the last read after the last change."""

    import psutil

    from aworld_gui.core import run_cache

    monkeypatch.setattr(run_cache, "MIN_REFRESH_S", 0.0)  # each poll reads the run (no wall-clock sleeps)
    studio, fns, tab = monitor_app(tmp_path)
    try:
        ui = tab.ui
        buttons = {ui.stop_btn._id: "stop", ui.kill_btn._id: "kill"}
        writers = [f for f in fns if buttons.keys() & {c._id for c in f.outputs}]
        assert [f.fn.__name__ for f in writers] == ["buttons"], [f.fn.__name__ for f in writers]  # one writer

        me = psutil.Process()
        run = RunDir.create(studio.runs_dir, "fake")
        run.write_spec({"engine": "fake", "run_id": run.run_id})
        run.write_status(state="running", pid=me.pid, pid_create_time=me.create_time(), step=2, total_steps=9)
        values = {ui.run._id: run.run_id, ui.picker._id: [], ui.smoothing._id: 0.6}
        page = ButtonsPage(fns, values, buttons, late=2.0)
        apply = next(f for f in fns if (ui.header._id, "apply") in f.targets)
        click = next(f for f in fns if (ui.stop_btn._id, "click") in f.targets)
        gen, keys, last_b = tab.show(run.run_id, [], 0.6), {}, object()

        def tick():  # the stream's poll; a changed state (or its first message) fires the header's ``apply``
            nonlocal keys, last_b
            keys = tab.live(run.run_id, gen, [], 0.6, keys)["keys"]
            if keys.get("b") != last_b:
                page.trigger(apply)
            last_b = keys.get("b")

        timeline = [(t, tick) for t in (0.0, 0.8, 1.6, 4.0, 4.8, 5.6, 6.4, 7.2, 8.0, 8.8)]
        timeline += [
            (3.0, lambda: page.trigger(click)),  # Stop pressed: the run is asked to stop
            (4.1, lambda: run.write_status(state="stopping")),  # its step boundary: saving a checkpoint
            (5.3, lambda: run.write_status(state="stopped", ended=time.time())),
        ]
        for t, action in sorted(timeline, key=lambda x: x[0]):
            page.until(t)
            action()
        page.until(60.0)
        assert page.shown == [(), ("stop",), ("kill",), ()], page.shown
    finally:
        studio.close()


def test_a_run_of_one_step_shows_its_point_and_a_longer_one_its_line_only():
    """The newcomer's walkthrough: a run of one logged step was in the legend of Runs' Compare and of the Monitor but
    drew nothing (a polyline of one point is invisible). Its point is drawn; a line of several is a line."""
    from aworld_gui.rendering.charts import Line, svg_chart

    one = svg_chart([Line("reward", [1], [0.5], "#123456")], "reward")
    assert 'data-points="1"' in one and one.count("<circle") == 1 and " 1: 0.500</title></circle>" in one
    more = svg_chart([Line("reward", [1, 2, 3], [0.1, 0.2, 0.3], "#123456")], "reward")
    assert more.count("<circle") == 0 and "<polyline" in more


def test_a_stop_request_says_its_kill_limit_in_a_sentence_in_both_languages(tmp_path):
    """The walkthrough (issue 42, F14): the note read "… killed if it has not stopped this many seconds after the
    request: 30" — the number now stands in the sentence, in English and in Chinese."""
    import psutil

    from aworld_gui.rendering.i18n import localize

    studio, _fns, tab = monitor_app(tmp_path)
    try:
        me = psutil.Process()
        run = RunDir.create(studio.runs_dir, "fake")
        run.write_spec({"engine": "fake", "run_id": run.run_id})
        run.write_status(state="running", pid=me.pid, pid_create_time=me.create_time(), step=2, total_steps=9)
        run.request_stop("the user")
        html = tab.show(run.run_id, [], 0.6)
        limit = f"{studio.stop_timeout_s:.0f}"
        assert f"If it has not stopped within {limit} seconds of the request, it is killed." in localize(html, "en")
        assert f"若请求后 {limit} 秒内仍未停止,将被强制终止。" in localize(html, "zh")
    finally:
        studio.close()
