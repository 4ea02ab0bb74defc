"""Where a class can reach the server (services/network.py): a presenter who opened the page as localhost gets a join
link on this machine's network address, or what to set to serve the class."""

from __future__ import annotations

import ipaddress

import pytest

from services.network import (
    allowed_origins,
    class_address,
    interface_addresses,
    is_loopback,
    listen_address,
)

LAN = ["192.0.2.2", "198.51.100.7"]  # documentation addresses (RFC 5737): two interfaces of one machine


def test_a_page_opened_at_an_address_the_class_shares_keeps_it():
    for page in ("http://school.example:5006/", "http://192.0.2.2:5006/explorer/"):
        reach = class_address(page, "0.0.0.0", LAN, ["192.0.2.2:5006"])
        assert (reach.url, reach.problem, reach.replaced) == (page, "", False)


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "127.0.1.1"])
def test_localhost_becomes_the_first_network_address_the_server_accepts(host):
    reach = class_address(f"http://{host}:5006/explorer/", "0.0.0.0", LAN, ["198.51.100.7:5006"])
    assert reach.url == "http://198.51.100.7:5006/explorer/"  # the prefix kept, the one allowed address used
    assert reach.problem == "" and reach.replaced
    assert reach.addresses == ("198.51.100.7:5006", "192.0.2.2:5006")


def test_a_server_on_this_computer_only_says_what_to_set():
    reach = class_address("http://localhost:5006/", "127.0.0.1", LAN, ["localhost:5006"])
    assert reach.problem == "loopback" and reach.url == "http://localhost:5006/"
    assert reach.addresses == ("192.0.2.2:5006", "198.51.100.7:5006")


def test_origins_that_refuse_every_network_address_say_so():
    reach = class_address("http://localhost:5006/", "", LAN, ["localhost:5006"])
    assert reach.problem == "origin" and not reach.replaced


def test_a_server_on_one_interface_offers_that_address_only():
    assert class_address("http://localhost:5006/", "198.51.100.7", LAN, ["*"]).url == "http://198.51.100.7:5006/"


def test_a_machine_on_no_network_says_so():
    assert class_address("http://localhost:5006/", "0.0.0.0", [], ["*"]).problem == "offline"


def test_loopback_hosts():
    assert [is_loopback(h) for h in ("LOCALHOST", "app.localhost", "::1", "127.8.0.1")] == [True] * 4
    assert not any(is_loopback(h) for h in ("0.0.0.0", "10.0.0.1", "localhost.school.example", ""))


def test_the_listening_interface_comes_from_the_command_line_or_address():
    assert listen_address(["panel", "serve", "app.py", "--address", "10.0.0.1"], {"ADDRESS": "x"}) == "10.0.0.1"
    assert listen_address(["python", "-m", "server"], {"ADDRESS": " 0.0.0.0 "}) == "0.0.0.0"
    assert listen_address(["app.py"], {}) == "127.0.0.1"


def test_allowed_origins_are_bokeh_s(monkeypatch):
    monkeypatch.delenv("BOKEH_ALLOW_WS_ORIGIN", raising=False)
    assert allowed_origins(5006, ["app.py"]) == ["localhost:5006"]
    assert allowed_origins(5006, ["panel", "serve", "--allow-websocket-origin=a.example:80,b.example"]) == [
        "a.example:80", "b.example:80"]
    monkeypatch.setenv("BOKEH_ALLOW_WS_ORIGIN", "192.0.2.2:5006,school.example:5006")
    assert allowed_origins(5006, ["panel", "serve", "--allow-websocket-origin=a.example"]) == [
        "192.0.2.2:5006", "school.example:5006"]


def test_this_machine_s_addresses_are_reachable_ipv4_ones():
    for ip in interface_addresses():
        a = ipaddress.ip_address(ip)
        assert a.version == 4 and not (a.is_loopback or a.is_link_local or a.is_unspecified)


@pytest.mark.parametrize("setting", [None, "school.example:5006,*.lab.example"])
def test_the_origin_check_reads_the_allowlist_as_bokeh_does_without_its_log_line(monkeypatch, caplog, setting):
    """server/ws_origin.py asks the allowlist itself, so that Bokeh's line (the whole origin, no client) is not
    written: each origin is allowed or refused exactly as Bokeh's own check would, with its settings."""
    from types import SimpleNamespace

    from bokeh.server.views.ws import WSHandler

    from server.ws_origin import origin_allowed

    if setting is None:
        monkeypatch.delenv("BOKEH_ALLOW_WS_ORIGIN", raising=False)
    else:
        monkeypatch.setenv("BOKEH_ALLOW_WS_ORIGIN", setting)
    handler = SimpleNamespace(application=SimpleNamespace(websocket_origins={"localhost:5006", "127.0.0.1:5006"}))
    origins = ["http://localhost:5006", "http://LOCALHOST:5006", "http://localhost:5007", "http://127.0.0.1:5006",
               "https://school.example:5006", "http://school.example", "http://a.lab.example:80", "http://evil.example",
               "null", ""]
    with caplog.at_level("ERROR", logger="bokeh.server.views.ws"):
        ours = [origin_allowed(handler, o) for o in origins]
        assert not caplog.records  # nothing logged by ours
        bokehs = [WSHandler.check_origin(handler, o) for o in origins]
    assert ours == bokehs and any(ours) and not all(ours)
