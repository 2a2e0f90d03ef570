"""Gradio's file route serves nothing through a link (issue 41's third probe): a reward replaced ``<runs>/.exports``
with a link to ``/`` and ``GET /gradio_api/file=/etc/shadow`` answered with the file. The guard (aworld_gui/web/
file_route_guard.py) is in front of a real Starlette file route here, as it is in front of Gradio's in the studio."""

from __future__ import annotations

import os

from starlette.applications import Starlette
from starlette.responses import FileResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from aworld_gui.web.file_route_guard import FileRouteGuard
from aworld_gui.web.page import launch_kwargs


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
