"""How the server answers a request for the page: a link too long to be one of ours gets a page that says so.

Everything the page writes into its own address fits in a couple of kilobytes (session/address.py). A much
longer link was typed, pasted or made up; Tornado used to drop any request whose headers pass 64 KB
without a word, and the browser showed an empty response. The server now reads headers up to
:data:`MAX_HEADER_BYTES` and answers a page request over :data:`MAX_LINK_CHARS` with HTTP 414 and a short
page in plain words. (A request beyond :data:`MAX_HEADER_BYTES` is still cut off by Tornado; browsers
refuse to send such links anyway.)
"""

from __future__ import annotations

from panel.io.server import DocHandler

#: Longest page address served, in characters: far beyond any address the page writes.
MAX_LINK_CHARS = 16 * 1024
#: Largest request head read (Tornado's default is 64 KiB, past which it answers nothing at all).
MAX_HEADER_BYTES = 1024 * 1024

TOO_LONG_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Link too long · Attention Explorer</title></head>
<body style="font: 20px/1.5 system-ui, sans-serif; max-width: 40em; margin: 3em auto; padding: 0 1em">
<h1>This link is too long</h1>
<p>The address has {length:,} characters; Attention Explorer's own links are a few hundred. It may have been
cut and pasted twice, or changed by hand.</p>
<p><a href="{home}">Open Attention Explorer</a> without it, and share the view again from there.</p>
</body></html>"""


#: Arguments of Bokeh's embedding (``autoload.js``) that Panel also reads from a page's own address and writes,
#: unescaped, into the page's ``<script src>`` and ``<link href>`` (``panel.io.application``: the session's
#: ``rel_path``): a link carrying one could run a script of anyone's on this site. No page of the app's has them.
EMBEDDING_ARGUMENTS = ("bokeh-absolute-url",)

NOT_OURS_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Not a link of ours · Attention Explorer</title></head>
<body style="font: 20px/1.5 system-ui, sans-serif; max-width: 40em; margin: 3em auto; padding: 0 1em">
<h1>This is not a link Attention Explorer makes</h1>
<p>It asks the page to load its scripts from another address, which this server never does.</p>
<p><a href="{home}">Open Attention Explorer</a> without it.</p>
</body></html>"""


def embedding_argument(request) -> str | None:
    """The first of :data:`EMBEDDING_ARGUMENTS` in ``request``'s query (a Tornado request), or None."""
    return next((name for name in EMBEDDING_ARGUMENTS if name in request.query_arguments), None)


class LinkCheckedDocHandler(DocHandler):
    """Panel's page handler, which answers a request for a link over :data:`MAX_LINK_CHARS` with a page saying so,
    and one with an argument of Bokeh's embedding (:data:`EMBEDDING_ARGUMENTS`) with HTTP 400 and a page saying so."""

    async def prepare(self):
        length = len(self.request.uri or "")
        if length > MAX_LINK_CHARS:
            self._plain(414, TOO_LONG_PAGE.format(length=length, home=self.request.path))
            return
        if embedding_argument(self.request):
            self._plain(400, NOT_OURS_PAGE.format(home=self.request.path))
            return
        await super().prepare()

    def _plain(self, status: int, page: str) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.finish(page)


def install_link_limit(server_kwargs: dict) -> None:
    """Serve each app's page with :class:`LinkCheckedDocHandler` and let Tornado read long request heads.

    ``server_kwargs`` are the keyword arguments of Bokeh's ``Server`` (``panel serve``'s
    ``customize_kwargs``); the route table is Bokeh's ``per_app_patterns``, which Panel itself edits in place
    when it is imported. Idempotent.
    """
    from bokeh.server.urls import per_app_patterns

    per_app_patterns[:] = [(route, LinkCheckedDocHandler if handler is DocHandler else handler, *rest)
                           for route, handler, *rest in per_app_patterns]
    http = dict(server_kwargs.get("http_server_kwargs") or {})
    http["max_header_size"] = max(http.get("max_header_size", 0), MAX_HEADER_BYTES)
    server_kwargs["http_server_kwargs"] = http
