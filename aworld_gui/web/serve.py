"""AWorld Trainer Studio: ``aworld-studio`` (or ``python app.py``) serves on http://127.0.0.1:7860.

    aworld-studio [--host 127.0.0.1] [--port 7860] [--runs-dir runs] [--auth-file FILE | --auth user:password]
                  [--stop-timeout 30] [--share]

Login: ``--auth-file FILE`` (its first line ``user:password``), the environment variable
``AWORLD_STUDIO_AUTH=user:password`` or ``--auth user:password``. Whichever it is, the studio starts
itself again without it in its environment or command line (:mod:`aworld_gui.web.clean_start`).
No public share link is created unless ``--share`` is given.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from aworld_gui.web import clean_start
from aworld_gui.web.origin_gate import ALLOWED_ENV, parse_hosts
from engines.env_values.env_invitation import ALLOW_OPTION, STUDIO_ALLOW_ENV, invite, parse_names


def parse_auth(value: str | None) -> tuple[str, str] | None:
    if not value:
        return None
    user, sep, password = value.partition(":")
    if not sep or not user or not password:
        raise SystemExit("error: --auth / AWORLD_STUDIO_AUTH must be 'user:password'")
    return user, password


def keep_credentials_private() -> None:
    """The login stays in this process: out of the environment its children inherit (the check worker and
    runs get a scrubbed one anyway: engines.isolation.user_env), and this process made non-dumpable, so another
    process of the same (non-root) user cannot read it from /proc/<pid>/environ or its memory."""
    os.environ.pop("AWORLD_STUDIO_AUTH", None)
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


class StopSignal:
    """SIGTERM and Ctrl-C end the studio. While it starts they are only noted: an exception raised at an
    arbitrary point of Gradio's start-up was swallowed (in an event loop's ``__del__``) and the studio served
    on. Once it serves, the main thread does nothing but wait, and the signal interrupts that wait."""

    def __init__(self) -> None:
        self.requested = False
        self.serving = False

    def install(self) -> None:
        signal.signal(signal.SIGTERM, self)
        signal.signal(signal.SIGINT, self)

    def __call__(self, signum, frame) -> None:
        self.requested = True
        if self.serving:
            raise KeyboardInterrupt


def wait_until_interrupted(demo, stop: StopSignal) -> None:
    """Serve until SIGTERM or Ctrl-C. (Gradio's ``block_thread`` wakes the main thread 10 times a second to
    look at a flag; this sleeps until a signal.) Runs keep training: they are not our children."""
    try:
        stop.serving = True
        if not stop.requested:  # a signal during start-up: close at once
            threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        print("Interrupted: closing the studio (runs keep training).", flush=True)
        demo.close()


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Each option's help ends with its default, where it has one (never a login: --auth has none)."""

    def _get_help_string(self, action):
        return action.help if action.default is None else super()._get_help_string(action)


#: the operator's list of trusted proxies (``--forwarded-allow-ips``)
FORWARDED_ENV = "AWORLD_STUDIO_FORWARDED_ALLOW_IPS"


def trust_forwarded_headers_from(proxies: str) -> None:
    """Uvicorn, which Gradio starts, rewrites a request's client from X-Forwarded-For when the peer is in
    ``FORWARDED_ALLOW_IPS`` — 127.0.0.1 unless set, so anyone reaching the studio through 127.0.0.1 (a local user,
    an SSH tunnel) could name a new address per login attempt. Only the proxies the operator names are trusted."""
    os.environ["FORWARDED_ALLOW_IPS"] = ",".join(h.strip() for h in proxies.split(",") if h.strip())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="aworld-studio",
        description="AWorld Trainer Studio: set up, launch, watch, evaluate and chat with agent training runs, "
        "in the browser. Runs keep training when the studio stops.",
        formatter_class=_Help,
    )
    p.add_argument(
        "--host",
        default=os.environ.get("AWORLD_STUDIO_HOST", "127.0.0.1"),
        help="the address to serve on (or AWORLD_STUDIO_HOST); 0.0.0.0 opens it to the network: set a login",
    )
    p.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("AWORLD_STUDIO_PORT", "7860")),
        help="the port to serve on (or AWORLD_STUDIO_PORT)",
    )
    p.add_argument(
        "--runs-dir",
        default=os.environ.get("AWORLD_RUNS_DIR", "runs"),
        help="where runs, uploads and exports are kept (or AWORLD_RUNS_DIR)",
    )
    p.add_argument(
        "--auth",
        help="user:password (or set AWORLD_STUDIO_AUTH; --auth-file keeps it off the command line)",
    )
    p.add_argument("--auth-file", help="a file whose first line is user:password")
    p.add_argument(clean_start.SECRETS_FD_OPTION, type=int, help=argparse.SUPPRESS)
    p.add_argument(
        "--stop-timeout", type=float, default=30.0, help="seconds a run gets to stop after Stop before it is killed"
    )
    p.add_argument(
        "--forwarded-allow-ips",
        default=os.environ.get(FORWARDED_ENV, ""),
        help="the proxies (addresses or networks, comma-separated) whose X-Forwarded-For names the client: the "
        f"login throttle counts per client (or {FORWARDED_ENV}); none by default — every address, 127.0.0.1 too, "
        "is its own client, so a forged header earns no fresh guesses",
    )
    p.add_argument(
        "--allowed-hosts",
        default=os.environ.get(ALLOWED_ENV, ""),
        help="names (comma-separated; '.example.com' for a domain) the studio is served under besides its addresses, "
        f"localhost and this machine's name — a reverse proxy's or a tunnel's (or {ALLOWED_ENV}); a request under "
        "another name (DNS rebinding) or from another site's page is refused",
    )
    p.add_argument(
        ALLOW_OPTION,
        default=os.environ.get(STUDIO_ALLOW_ENV, ""),
        help="the environment variables (comma-separated) a ${NAME} in an uploaded config may name — only in an "
        "agent's api_key and llm_base_url, an MCP server's env, headers and url, an engine config's env_vars "
        f"(or {STUDIO_ALLOW_ENV}); none by default: whoever reaches the page cannot read the studio's "
        "environment by naming a variable",
    )
    p.add_argument("--check-timeout", type=float, default=60.0, help="time limit of one check in the worker")
    p.add_argument(
        "--no-demo-run",
        action="store_true",
        help="do not add the trained letters demo as a finished run to a runs folder that holds no run (it is "
        "added by default, so Chat, Evaluate and Export have a trained model to try at once)",
    )
    p.add_argument("--share", action="store_true", help="create a public gradio.live link")
    p.add_argument(
        "--max-upload-mb",
        type=float,
        default=float(os.environ.get("AWORLD_STUDIO_MAX_UPLOAD_MB", "100")),
        help="the largest upload taken (MB); a bigger one is refused while it streams in (413)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    a = build_parser().parse_args(args)
    if a.secrets_fd is not None:  # restarted clean: the login and credentials come from the memory file
        login = clean_start.take_secrets(a.secrets_fd)
    else:
        login = (
            clean_start.read_auth_file(a.auth_file) if a.auth_file else a.auth or os.environ.get(clean_start.AUTH_ENV)
        )
        parse_auth(login)  # a malformed login is refused before anything else
        if clean_start.supported() and clean_start.needed(args, os.environ):
            clean_start.restart_clean(args, login)  # does not return
    auth = parse_auth(login)
    # the settings read from AWORLD_STUDIO_* variables: a clean restart took them out of the environment with the
    # login and has just put them back (clean_start.take_secrets)
    a = build_parser().parse_args(args)
    invite(parse_names(a.env_allow))  # this process and all it starts (the check worker too) substitute only these
    keep_credentials_private()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    from aworld_gui.worker.check_worker import CheckWorker

    # the check worker preloads (seconds) while Gradio is imported and the page is built: the page's first build
    # waits for the engines' catalog from it
    worker = CheckWorker(default_timeout_s=a.check_timeout)
    worker.start()
    from aworld_gui.web.page import build_app, launch_kwargs
    from aworld_gui.core.studio import Studio

    runs_dir = Path(a.runs_dir).expanduser().resolve()
    if not a.no_demo_run:
        from engines.core import shipped_demo

        added = shipped_demo.install_if_empty(runs_dir)
        if added is not None:
            logging.getLogger("aworld.studio").info("added the trained demo as the run %s", added.run_id)
    stop = StopSignal()
    stop.install()  # from here SIGTERM ends the studio as Ctrl-C does: the check worker and chat model go too
    studio = None
    try:
        studio = Studio(runs_dir, worker=worker, stop_timeout_s=a.stop_timeout, check_timeout_s=a.check_timeout)
        demo = build_app(runs_dir, studio=studio)
        print(f"AWorld Trainer Studio on http://{a.host}:{a.port}  (runs: {runs_dir})", flush=True)
        trust_forwarded_headers_from(a.forwarded_allow_ips)
        demo.launch(
            server_name=a.host,
            server_port=a.port,
            share=a.share,
            auth=auth,
            show_error=True,
            allowed_paths=[str(runs_dir / ".exports")],
            footer_links=["api", "settings"],  # Settings holds the language (English, 中文)
            max_file_size=int(a.max_upload_mb * (1 << 20)),  # refused as it streams, never held whole
            prevent_thread_lock=True,
            quiet=True,  # the address is printed above; Gradio's own lines suggested share=True
            **launch_kwargs(demo, parse_hosts(a.allowed_hosts) + ([".gradio.live"] if a.share else [])),
        )
        wait_until_interrupted(demo, stop)
    finally:
        if studio is not None:
            studio.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
