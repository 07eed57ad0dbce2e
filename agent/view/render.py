"""The viewer's HTML: one self-contained file (inline style and script, data as JSON), with a
Content-Security-Policy that lets nothing run or load but its own two inline blocks.

Data never becomes markup here: the page title is escaped, everything else travels as JSON in a
<script type="application/json"> block and the page's script shows it as text.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from functools import cache
from importlib import resources
from typing import Any

from agent.view.models import BatchView

# In a JSON string these are plain escapes; in HTML they could end the <script> block or start
# a comment, and U+2028/2029 end a line in older JavaScript parsers.
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


@cache
def _asset(name: str) -> str:
    text = resources.files("agent.view").joinpath("assets", name).read_text(encoding="utf-8")
    if "</" in text:  # would end its own inline <script>/<style> block early
        raise AssertionError(f"asset {name} holds '</'")
    return text


def embed_json(value: Any) -> str:
    """JSON that is safe between <script type="application/json"> and </script>."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    for char, escape in _JSON_ESCAPES.items():  # str.replace: a 60 MB page in well under a second
        text = text.replace(char, escape)
    return text


def csp_hash(block: str) -> str:
    digest = hashlib.sha256(block.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def content_security_policy() -> str:
    """Only this page's own style and script, by hash; no connections, frames, forms or plugins;
    and Trusted Types, so that even a mistaken innerHTML with a string throws instead of parsing."""
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src {csp_hash(_asset('view.js'))}",
            f"style-src {csp_hash(_asset('view.css'))}",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
            "require-trusted-types-for 'script'",
            "trusted-types 'none'",
        ]
    )


def render(view: BatchView) -> str:
    title = html.escape(f"codebox · {view.title}")
    csp = html.escape(content_security_policy())
    data = embed_json(view.page_data())
    return (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{title}</title>\n"
        f"<style>{_asset('view.css')}</style>\n"
        "</head>\n<body>\n"
        '<div id="app"><noscript>codebox view draws its pages with JavaScript: allow scripts for this file.'
        "</noscript></div>\n"
        f'<script id="codebox-data" type="application/json">{data}</script>\n'
        f"<script>{_asset('view.js')}</script>\n"
        "</body>\n</html>\n"
    )
