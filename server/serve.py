"""Serve Attention Explorer through Panel's own ``panel serve``, configured from environment variables.

``python -m server`` is the container's command and ``python app.py`` lands here too, so a laptop, a
projector demo and a school server read the same settings (see ``SETTINGS`` and the table in docs/operations.md).
Each setting maps to one ``panel serve`` flag; only what the command line cannot express is added in
code (server/routes.py): gzip for HTTP responses (Tornado's, each static file compressed once per process), which
``panel serve`` has no flag for, the link limit, and the routes of a room's live channel and of KaTeX's fonts.

The server runs with ``PYTHONMALLOC=malloc`` (``main`` starts Python again with it when it is unset), so
the memory of closed sessions can go back to the system (``server/housekeeping.py``).

``python -m server --health`` asks the running server's liveness endpoint to build a page (the image's
``HEALTHCHECK``); exit status 0 when it could.

Websocket origins use Bokeh's own ``BOKEH_ALLOW_WS_ORIGIN`` (comma-separated ``host[:port]``); when it
is unset only this machine's pages open the websocket: at ``localhost`` and ``127.0.0.1`` on the served port, and,
when the server listens on the network (``ADDRESS``), at this machine's own addresses.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from services.network import interface_addresses, is_loopback
from services.rooms import RoomSecret, redis_url_from_env
from services.sessions import write_wait_from_env

APP = Path(__file__).resolve().parents[1] / "app.py"
APP_ENDPOINT = "/" + APP.stem


class SettingError(ValueError):
    """An environment variable holds a value its setting cannot use."""


def _whole(low: int, high: int | None = None) -> Callable[[str], str]:
    def parse(text: str) -> str:
        try:
            value = int(text)
        except ValueError:
            raise SettingError(f"must be a whole number, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
            raise SettingError(f"must be {bounds}, got {value}")
        return str(value)
    return parse


def _prefix(text: str) -> str:
    text = text.strip().strip("/")
    if any(c.isspace() or c in "?#" for c in text):
        raise SettingError(f"must be a URL path such as /explorer, got {text!r}")
    return text


def _address(text: str) -> str:
    if not text or any(c.isspace() for c in text):
        raise SettingError(f"must be an IP address or host name such as 0.0.0.0, got {text!r}")
    return text


@dataclass(frozen=True)
class Setting:
    """One environment variable and the ``panel serve`` flag it sets."""

    env: str
    flag: str
    default: str
    parse: Callable[[str], str]
    doc: str


SETTINGS: tuple[Setting, ...] = (
    Setting("PORT", "--port", "5006", _whole(1, 65535), "TCP port to listen on"),
    Setting("ADDRESS", "--address", "127.0.0.1", _address,
            "interface to listen on; the container sets 0.0.0.0 so `docker run -p` reaches it"),
    Setting("EXPLORER_NUM_PROCS", "--num-procs", "1", _whole(0),
            "worker processes sharing the port (0: one per CPU); not available on Windows"),
    Setting("EXPLORER_PREFIX", "--prefix", "", _prefix,
            "URL path the app lives under behind a reverse proxy, e.g. /explorer"),
    # A page whose websocket arrives after its session was discarded gets a fresh session whose styles
    # point at Panel's CDN (Panel rewrites them to local URLs only when it renders the page). So a
    # session outlives its token (serve_argv checks), and Bokeh's 15 s lifetime is raised: 60 learners
    # loading the page at once on one school Wi-Fi can take that long.
    Setting("EXPLORER_UNUSED_SESSION_LIFETIME_MS", "--unused-session-lifetime", "60000", _whole(1000),
            "a page opened but never connected is discarded after this many ms"),
    Setting("EXPLORER_CHECK_UNUSED_SESSIONS_MS", "--check-unused-sessions", "15000", _whole(1000),
            "how often (ms) to look for sessions to discard"),
    Setting("EXPLORER_SESSION_TOKEN_EXPIRATION_S", "--session-token-expiration", "60", _whole(1),
            "seconds a served page has to open its websocket"),
    Setting("EXPLORER_WS_MAX_MESSAGE_BYTES", "--websocket-max-message-size", "1048576", _whole(65536),
            "largest websocket message accepted from a browser (Bokeh's default is 20 MB)"),
    Setting("EXPLORER_WS_COMPRESSION_LEVEL", "--websocket-compression-level", "6", _whole(0, 9),
            "zlib level for websocket messages (0: no compression)"),
    Setting("EXPLORER_WS_COMPRESSION_MEM_LEVEL", "--websocket-compression-mem-level", "8", _whole(1, 9),
            "zlib memory level per websocket connection"),
)


def serve_argv(environ: Mapping[str, str] = os.environ) -> list[str]:
    """The ``panel serve`` arguments (after ``panel``) for the settings in ``environ``.

    Raises
    ------
    SettingError
        When a variable holds an unusable value; the message names the variable.

    """
    values = {}
    for s in SETTINGS:
        raw = environ.get(s.env, "")
        try:
            values[s.flag] = s.parse(raw) if raw.strip() else s.default
        except SettingError as e:
            raise SettingError(f"{s.env} {e}") from None
    try:  # a presenter link must not be minted under a secret the school meant to be something else
        RoomSecret.from_env(environ)
        redis_url_from_env(environ)  # nor rooms kept apart when the school meant them shared
        write_wait_from_env(environ)
    except ValueError as e:
        raise SettingError(str(e)) from None
    if sys.platform == "win32" and values["--num-procs"] != "1":
        raise SettingError("EXPLORER_NUM_PROCS must be 1 on Windows (Tornado cannot fork there)")
    if int(values["--unused-session-lifetime"]) < 1000 * int(values["--session-token-expiration"]):
        raise SettingError("EXPLORER_UNUSED_SESSION_LIFETIME_MS must be at least 1000 × "
                           "EXPLORER_SESSION_TOKEN_EXPIRATION_S: a page connecting late would get a new "
                           "session that loads its styles from the internet")
    if values["--websocket-compression-level"] == "0":  # Bokeh's "no compression" is the flag's absence
        del values["--websocket-compression-level"], values["--websocket-compression-mem-level"]
    argv = ["serve", str(APP), "--index", APP.stem, "--liveness"]
    for flag, value in values.items():
        if value:
            argv += [flag, value]
    if environ.get("EXPLORER_USE_XHEADERS", "").strip().lower() in ("1", "true", "yes"):
        argv.append("--use-xheaders")
    if not environ.get("BOKEH_ALLOW_WS_ORIGIN", "").strip():
        # Bokeh's default allows a page at localhost:PORT only; the server's own default address, 127.0.0.1, got in
        # through Tornado 6.6's same-origin shortcut, which the allowlist now overrules (server/ws_origin.py). A
        # server listening on the network also takes pages opened at this machine's own addresses: what a teacher
        # gives the class (the presenter's bar offers them). Numeric addresses only: a page at a name resolving to
        # this machine (DNS rebinding) is still refused.
        hosts = ["localhost", "127.0.0.1"]
        listen = values["--address"]
        if listen in ("0.0.0.0", "::"):
            hosts += interface_addresses()
        elif not is_loopback(listen) and _is_ip(listen):
            hosts.append(listen)
        for host in dict.fromkeys(hosts):
            argv += ["--allow-websocket-origin", f"{host}:{values['--port']}"]
    return argv


def _is_ip(text: str) -> bool:
    """Whether ``text`` is an IPv4 address (an origin names an IPv6 one in brackets, which Bokeh's list does not)."""
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def _serve_command():
    from panel.command.serve import Serve

    class CompressedServe(Serve):
        """Panel's ``serve`` with this app's routes and settings (server/routes.py) and every patch
        (server/patches/)."""

        def customize_kwargs(self, args, server_kwargs):
            from server import patches
            from server.housekeeping import merge_on_free, settle_collector
            from server.routes import add_routes

            kwargs = add_routes(super().customize_kwargs(args, server_kwargs))
            patches.install()
            # everything a page's build imports is loaded by now (app.py runs this, python -m server runs app.py),
            # so the collector can leave it alone from here on
            settle_collector()
            merge_on_free()
            return kwargs

    return CompressedServe


def run(argv: list[str]) -> None:
    """Run Panel's serve command with ``argv`` (as after ``panel``)."""
    from server.logs import install_log_redaction, panel_records_only_when_written

    install_log_redaction()  # before anything logs: every record the process makes is bounded (server/logs.py)
    parser = argparse.ArgumentParser(prog="panel")
    command = _serve_command()(parser=parser.add_subparsers().add_parser("serve"))
    panel_records_only_when_written()  # Panel's logging is set up by now (importing panel.command.serve)
    args = parser.parse_args(argv)
    command.invoke(args)


def health(environ: Mapping[str, str] = os.environ, timeout: float = 10) -> bool:
    """Whether the local server's liveness endpoint can build the app's page."""
    port = environ.get("PORT", "").strip() or "5006"
    address = environ.get("ADDRESS", "").strip()
    host = "127.0.0.1" if address in ("", "0.0.0.0", "::", "localhost") else address
    host = f"[{host}]" if ":" in host else host
    prefix = _prefix(environ.get("EXPLORER_PREFIX", ""))
    url = f"http://{host}:{port}{'/' + prefix if prefix else ''}/liveness?endpoint={APP_ENDPOINT}"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def main(argv: list[str] | None = None) -> None:
    """``python -m server [--health] [extra panel serve flags]``."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--health"]:
        sys.exit(0 if health() else 1)
    try:
        base = serve_argv()
    except SettingError as e:
        sys.exit(f"Attention Explorer: {e}")
    _use_c_allocator()
    # Bokeh checks every model of a page for mistakes in how it was built before sending it: a pass over every
    # model each time a page opens, for a check the tests make once (tests/test_classroom.py)
    os.environ.setdefault("BOKEH_VALIDATE_DOC", "false")
    # and its "error diagnostics": the signature of every callback a page's models are given (inspect.signature,
    # some 90 a page), checked for a mistake in the app's own code the tests would meet first, and a list of similar
    # names in the error for an unknown attribute (difflib over the model's properties), which only a hostile page
    # asks for: its log line stays the same without the list
    os.environ.setdefault("BOKEH_PERFORM_ERROR_DIAGNOSTICS", "false")
    run(base + argv)


def _use_c_allocator() -> None:
    """Start Python again with ``PYTHONMALLOC=malloc`` if it is unset and the server can trim glibc's heap.

    The allocator is chosen when the interpreter starts. With the C library's, the pages freed when sessions
    close can go back to the system (``server/housekeeping.py``); elsewhere (macOS, Windows, musl) nothing would
    trim them, so the default allocator stays. If the new start fails, the server runs on as it is.
    """
    from server import housekeeping

    if "PYTHONMALLOC" in os.environ or sys.flags.ignore_environment or not housekeeping.can_trim():
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], {**os.environ, "PYTHONMALLOC": "malloc"})
    except OSError as e:
        print(f"Attention Explorer: could not restart with PYTHONMALLOC=malloc ({e}); memory of closed sessions "
              "stays with the process", file=sys.stderr)


if __name__ == "__main__":
    main()
