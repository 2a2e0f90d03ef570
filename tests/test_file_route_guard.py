"""Gradio's file route serves nothing through a link (issue 41's third probe): a reward replaced ``<runs>/.exports``
with a link to ``/`` and ``GET /gradio_api/file=/etc/shadow`` answered with the file. The guard (aworld_gui/web/
file_route_guard.py) is in front of a real Starlette file route here, as it is in front of Gradio's in the studio."""

from __future__ import annotations

import os
import threading

from starlette.applications import Starlette
from starlette.responses import FileResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from aworld_gui.web.file_route_guard import FileRouteGuard
from aworld_gui.web.page import launch_kwargs
from testing.swap_race import exchange


def file_route(request):
    return FileResponse(request.path_params["path"])


def serve_files() -> Starlette:
    """What Gradio does for an allowed path: the file at the path the URL names (following links, as open does)."""
    return Starlette(routes=[Route("/gradio_api/file={path:path}", file_route)])


def test_a_file_behind_a_link_in_the_served_folders_is_refused_and_the_others_are_served(tmp_path):
    runs, secret = tmp_path / "runs", tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("the studio's secret", encoding="utf-8")
    exports = runs / ".exports"
    exports.mkdir(parents=True)
    (exports / "run.yaml").write_text("engine: trl\n", encoding="utf-8")
    guarded, bare = TestClient(FileRouteGuard(serve_files(), runs_dir=runs)), TestClient(serve_files())

    assert guarded.get(f"/gradio_api/file={exports}/run.yaml").text == "engine: trl\n"
    os.symlink(secret, exports / "leak.txt")  # a link inside the folder
    assert bare.get(f"/gradio_api/file={exports}/leak.txt").text == "the studio's secret"  # what Gradio alone does
    refused = guarded.get(f"/gradio_api/file={exports}/leak.txt")
    assert refused.status_code == 403 and "link" in refused.text and "secret" not in refused.text

    os.rename(exports, runs / "real-exports")  # the folder itself replaced by a link out of the runs folder
    os.symlink(secret.parent, exports)
    assert bare.get(f"/gradio_api/file={exports}/secret.txt").text == "the studio's secret"
    assert guarded.get(f"/gradio_api/file={exports}/secret.txt").status_code == 403
    assert guarded.get(f"/gradio_api/file={exports}/../.exports/secret.txt").status_code == 403  # spelled otherwise
    # a path under no folder of the studio's is left to Gradio's own rules (which refuse it there)
    assert guarded.get(f"/gradio_api/file={secret}").status_code == 200


def test_the_studio_puts_the_guard_in_front_of_gradio(tmp_path):
    class Demo:
        aworld_routes: list = []

        class studio:
            runs_dir = tmp_path / "runs"

    middleware = launch_kwargs(Demo())["app_kwargs"]["middleware"]
    assert FileRouteGuard in [m.cls for m in middleware]


def test_what_the_guard_checked_is_what_it_serves_while_user_code_swaps_a_file_for_a_link(tmp_path):
    """The fourth probe: the guard checked a path and Gradio opened it again by path; user code swapping ``r.txt`` and
    a link to a secret (``renameat2(RENAME_EXCHANGE)``) in a loop had the studio serve the secret about one request in
    five (and, through ``/proc/self/mem`` and a Range request, the studio's own memory). Served from one descriptor
    opened without following a link, it never is; the bare route, which opens by path, serves it under the same race
    (so the race is real here)."""
    runs, secret = tmp_path / "runs", tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("the studio's secret", encoding="utf-8")
    exports = runs / ".exports"
    exports.mkdir(parents=True)
    (exports / "r.txt").write_text("decoy " * 100, encoding="utf-8")
    os.symlink(secret, exports / "r_alt")
    guarded = TestClient(FileRouteGuard(serve_files(), runs_dir=runs))
    bare = TestClient(serve_files(), raise_server_exceptions=False)  # its stat and its open may meet different files
    stop = threading.Event()

    def swap():
        while not stop.is_set():
            exchange(exports / "r.txt", exports / "r_alt")

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        answers = [guarded.get(f"/gradio_api/file={exports}/r.txt") for _ in range(150)]
        leaked = sum("secret" in bare.get(f"/gradio_api/file={exports}/r.txt").text for _ in range(150))
    finally:
        stop.set()
        swapper.join()
    assert not [a for a in answers if "secret" in a.text]
    assert {a.status_code for a in answers} <= {200, 403}
    assert all(a.text == "decoy " * 100 for a in answers if a.status_code == 200)
    assert any(a.status_code == 200 for a in answers) and any(a.status_code == 403 for a in answers)
    assert leaked, "the bare route never met the link: the race was not run"


def test_a_served_file_answers_head_and_a_range_whole_and_a_folder_pipe_or_hard_link_not(tmp_path):
    runs = tmp_path / "runs"
    exports = runs / ".exports"
    exports.mkdir(parents=True)
    (exports / "run.yaml").write_text("engine: trl\n", encoding="utf-8")
    (exports / "sub").mkdir()
    os.mkfifo(exports / "pipe")  # opened by path, a reader waits for a writer for ever
    (tmp_path / "elsewhere.yaml").write_text("not the studio's\n", encoding="utf-8")
    os.link(tmp_path / "elsewhere.yaml", exports / "second-name.yaml")  # a second name of a file from elsewhere
    client = TestClient(FileRouteGuard(serve_files(), runs_dir=runs))
    head = client.head(f"/gradio_api/file={exports}/run.yaml")
    assert head.status_code == 200 and head.headers["content-length"] == "12" and head.content == b""
    ranged = client.get(f"/gradio_api/file={exports}/run.yaml", headers={"Range": "bytes=0-3"})
    assert ranged.status_code == 200 and ranged.text == "engine: trl\n"  # whole: no size read apart from the bytes
    for name in ("sub", "pipe", "second-name.yaml"):
        assert client.get(f"/gradio_api/file={exports}/{name}").status_code == 403, name
    assert client.get(f"/gradio_api/file={exports}/missing.txt").status_code == 404
