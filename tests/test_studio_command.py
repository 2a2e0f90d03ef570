"""``aworld-studio`` on the command line (issue 32 §4): ``--help`` gives each option's description and default
(never a login, wherever it is set), and the studio's log never suggests ``share=True``."""

from __future__ import annotations

import os
import subprocess
import sys

from testing.studio import REPO_ROOT, StudioProcess


def test_help_describes_every_option_with_its_default_and_never_the_login():
    env = {**os.environ, "AWORLD_STUDIO_AUTH": "admin:help-secret-5512"}
    out = subprocess.run(
        [sys.executable, "-m", "aworld_gui.web.serve", "--help"],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())  # argparse wraps lines
    for option, default in [
        ("--host", "127.0.0.1"),
        ("--port", "7860"),
        ("--runs-dir", "runs"),
        ("--stop-timeout", "30.0"),
        ("--check-timeout", "60.0"),
        ("--max-upload-mb", "100.0"),
    ]:
        assert option in text and f"(default: {default})" in text, (option, text)
    assert "--auth AUTH user:password" in text and "--share create a public gradio.live link" in text
    assert "help-secret-5512" not in out.stdout and "(default: None)" not in text


def test_the_studio_log_never_suggests_share(tmp_path):
    with StudioProcess(tmp_path / "runs") as app:
        log = app.log_path.read_text(errors="replace")
    assert "AWorld Trainer Studio on http://" in log
    assert "share=True" not in log and "public link" not in log, log[-2000:]
