"""Where a class can reach this server: the machine's network addresses, the interface the server listens on and
the websocket origins it accepts, found once per process.

A teacher who opens the explorer as ``localhost`` (or 127.0.0.1) and presents would hand the class a join link that
names each student's own device. :func:`class_address` says which address of this machine the class can use
instead, or why there is none and what to set (``ADDRESS``, ``BOKEH_ALLOW_WS_ORIGIN``: docs/operations.md).
"""

from __future__ import annotations

import functools
import ipaddress
import os
import socket
import struct
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from bokeh.server.util import check_allowlist, create_hosts_allowlist
from bokeh.settings import settings

#: What ``ADDRESS`` is when unset under ``python app.py`` / ``python -m server`` (server/serve.py's default).
DEFAULT_ADDRESS = "127.0.0.1"
#: Linux's ioctl asking an interface for its IPv4 address (<linux/sockios.h>).
_SIOCGIFADDR = 0x8915


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an IP address, IPv6 with or without brackets) names the machine it is typed on.

    >>> [is_loopback(h) for h in ("localhost", "127.0.0.1", "[::1]", "192.0.2.2", "school.example")]
    [True, True, True, False, False]
    """
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _reachable(ip: str) -> bool:
    """An address other machines may reach: IPv4, not loopback, link-local, unspecified or multicast."""
    try:
        a = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return a.version == 4 and not (a.is_loopback or a.is_link_local or a.is_unspecified or a.is_multicast)


def _linux_interfaces() -> list[str]:
    """Each interface's IPv4 address (Linux's SIOCGIFADDR); empty elsewhere or where the call fails."""
    try:
        import fcntl
    except ImportError:  # Windows
        return []
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:  # an interface without an IPv4 address
                continue
            found.append(socket.inet_ntoa(packed[20:24]))
    return found


def _default_route_address() -> str | None:
    """The address this machine would send from to another network: a UDP socket's "connect" sends nothing."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.254.254.254", 1))
            return s.getsockname()[0]
        except OSError:  # no route: a machine on no network
            return None


@functools.cache
def interface_addresses() -> tuple[str, ...]:
    """This machine's IPv4 addresses another machine on its networks could reach, the default route's first.

    Found once per process (the standard library only: a UDP socket's route, Linux's interfaces, the host name's
    addresses); a machine on no network has none.
    """
    found = [_default_route_address(), *_linux_interfaces()]
    try:
        found += [info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)]
    except OSError:
        pass
    return tuple(dict.fromkeys(ip for ip in found if ip and _reachable(ip)))


def _flag(argv: Sequence[str], name: str) -> list[str]:
    """Every value of ``--name VALUE`` / ``--name=VALUE`` in a command line."""
    values = []
    for k, arg in enumerate(argv):
        if arg == name and k + 1 < len(argv):
            values.append(argv[k + 1])
        elif arg.startswith(name + "="):
            values.append(arg.split("=", 1)[1])
    return values


def listen_address(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The interface the server listens on: ``""`` for every one.

    ``panel serve app.py --address A`` gives A (every interface without the flag: Bokeh's default);
    ``python app.py`` and ``python -m server`` give ``ADDRESS``, 127.0.0.1 when it is unset (server/serve.py).

    >>> listen_address(["panel", "serve", "app.py"], {}), listen_address(["app.py"], {})
    ('', '127.0.0.1')
    >>> listen_address(["app.py"], {"ADDRESS": "0.0.0.0"}), listen_address(["panel", "serve", "--address=::"], {})
    ('0.0.0.0', '::')
    """
    argv = sys.argv if argv is None else argv
    environ = os.environ if environ is None else environ
    given = _flag(argv, "--address")
    if given:
        return given[-1]
    if len(argv) > 1 and argv[1] == "serve":
        return ""
    return environ.get("ADDRESS", "").strip() or DEFAULT_ADDRESS


def allowed_origins(port: int | None, argv: Sequence[str] | None = None) -> list[str]:
    """The ``host:port`` patterns whose pages the server's websocket accepts, as Bokeh decides them
    (bokeh/server/views/ws.py): ``BOKEH_ALLOW_WS_ORIGIN`` if set, else ``--allow-websocket-origin``, else
    ``localhost:PORT``. (``server/serve.py`` allows ``127.0.0.1:PORT`` too, where the variable is unset: a loopback
    address, which no caller looks up here.)"""
    from_env = settings.allowed_ws_origin()
    if from_env:
        return list(from_env)
    argv = sys.argv if argv is None else argv
    flags = [h for value in _flag(argv, "--allow-websocket-origin") for h in value.split(",") if h]
    return create_hosts_allowlist(flags or None, port)


@dataclass(frozen=True)
class ClassAddress:
    """Where a class joins a room presented from ``page`` (:func:`class_address`).

    Attributes
    ----------
    url : str
        The page's address with the host a class can reach (the page's own when it is not loopback).
    host : str
        The host the teacher's page was opened at (``localhost``, ``127.0.0.1``...).
    problem : str
        ``""`` (the class can open ``url``), ``"loopback"`` (the server listens on this machine only),
        ``"origin"`` (its websocket refuses pages from the machine's addresses) or ``"offline"`` (this machine has
        no network address).
    addresses : tuple of str
        ``host:port`` of each of this machine's addresses (the one in ``url`` first, where there is one).
    """

    url: str
    host: str
    problem: str = ""
    addresses: tuple[str, ...] = ()

    @property
    def replaced(self) -> bool:
        """Whether ``url`` names another host than the page's."""
        return urlsplit(self.url).hostname != urlsplit(f"//{self.host}").hostname


def class_address(page: str, listen: str, interfaces: Sequence[str], allowed: Sequence[str]) -> ClassAddress:
    """Where a class opens a page the teacher opened at ``page`` (``http://localhost:5006/``).

    Parameters
    ----------
    page : str
        The teacher's page address, without its query.
    listen : str
        The interface the server listens on (:func:`listen_address`; ``""`` every one).
    interfaces : sequence of str
        This machine's reachable IPv4 addresses (:func:`interface_addresses`).
    allowed : sequence of str
        The websocket's allowed ``host:port`` patterns (:func:`allowed_origins`).

    Returns
    -------
    ClassAddress
        ``page`` itself when its host is not loopback; else ``page`` on the first of this machine's addresses the
        server listens on and accepts pages from, or ``page`` with the reason no such address exists.

    Examples
    --------
    >>> class_address("http://school.example:5006/", "0.0.0.0", [], []).url
    'http://school.example:5006/'
    >>> a = class_address("http://localhost:5006/", "0.0.0.0", ["192.0.2.2"], ["192.0.2.2:5006"])
    >>> a.url, a.problem, a.replaced
    ('http://192.0.2.2:5006/', '', True)
    >>> class_address("http://localhost:5006/", "127.0.0.1", ["192.0.2.2"], []).problem
    'loopback'
    >>> class_address("http://localhost:5006/", "0.0.0.0", ["192.0.2.2"], ["localhost:5006"]).problem
    'origin'
    """
    parts = urlsplit(page)
    host = parts.hostname or ""
    if not is_loopback(host):
        return ClassAddress(page, parts.netloc)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if listen and listen not in ("0.0.0.0", "::"):
        listened = [] if is_loopback(listen) else [listen]  # one interface: only its address reaches the server
    else:
        listened = list(interfaces)
    addresses = tuple(f"{ip}:{port}" for ip in (listened or interfaces))
    if not interfaces and not listened:
        return ClassAddress(page, parts.netloc, "offline")
    if not listened:
        return ClassAddress(page, parts.netloc, "loopback", addresses)
    ok = [a for a in addresses if check_allowlist(a, list(allowed))]
    if not ok:
        return ClassAddress(page, parts.netloc, "origin", addresses)
    url = urlunsplit((parts.scheme, ok[0], parts.path, "", ""))
    return ClassAddress(url, parts.netloc, "", (ok[0], *(a for a in addresses if a != ok[0])))


def class_address_of(page: str) -> ClassAddress:
    """:func:`class_address` for this server: its listening interface, this machine's addresses, its origins."""
    parts = urlsplit(page)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return class_address(page, listen_address(), interface_addresses(), allowed_origins(port))
