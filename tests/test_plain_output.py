"""The CLI's and the run process's standard error is plain text unless it is a terminal (issue 42 item 8: CLI
training of an AWorld agent printed AWorld's colour codes into a file): AWorld writes the codes into its messages
and adds its console handler with colorize=True, so the stream itself drops them (engines/core/plain_output.py)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

from engines.core.plain_output import PlainText

LOG = (
    "from engines.cli import setup_logging; setup_logging(); "
    "from aworld.logs.util import logger; logger.info('hello from aworld'); "
    "import logging; logging.getLogger('engines').warning('and from us')"
)


def test_aworld_s_colour_codes_do_not_reach_a_file_or_a_pipe(tmp_path):
    out = tmp_path / "train.log"
    with out.open("w") as f:
        subprocess.run([sys.executable, "-c", LOG], stderr=f, check=True, timeout=120)
    text = out.read_text()
    assert "hello from aworld" in text and "and from us" in text
    assert "\x1b" not in text, repr(text)


def test_a_terminal_keeps_its_colours():
    main, child = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-c", LOG], stderr=child, stdout=subprocess.DEVNULL, timeout=120)
        os.close(child)
        child = -1
        chunks = []
        while True:
            try:
                data = os.read(main, 4096)
            except OSError:  # the terminal's other end closed: all read
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(main)
        if child != -1:
            os.close(child)
    assert proc.returncode == 0
    text = b"".join(chunks).decode(errors="replace")
    assert "hello from aworld" in text and "\x1b[32m" in text


def test_the_plain_stream_drops_every_escape_and_keeps_the_rest(tmp_path):
    path = tmp_path / "out.txt"
    with path.open("w") as f:
        stream = PlainText(f)
        assert stream.write("\x1b[1m\x1b[32mok\x1b[0m \x1b[2K100%\x1b[1A café\n") == len(
            "\x1b[1m\x1b[32mok\x1b[0m \x1b[2K100%\x1b[1A café\n"
        )
        stream.flush()
        assert not stream.isatty() and stream.fileno() == f.fileno()
    assert path.read_text() == "ok 100% café\n"
