"""The consent page's text as HTML: a restricted markdown subset, escaped first.

The researcher's text is HTML-escaped as a whole, then only these forms
become markup: ``#``/``##``/``###`` headings, ``- `` or ``* `` list items,
blank-line separated paragraphs, ``**bold**``, ``*italic*`` and
``` `code` ```.  No links,
images or raw HTML: whatever the file holds, the page gets no markup but
these tags, so a pasted ``<script>`` shows as text.
"""

from __future__ import annotations

import html
import re

_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])")


def _inline(text: str) -> str:
    text = _CODE.sub(r"<code>\1</code>", text)
    return _ITALIC.sub(r"<em>\1</em>", _BOLD.sub(r"<strong>\1</strong>", text))


def render(markdown: str) -> str:
    """The HTML of `markdown` (module docstring); every character of the input is escaped."""
    out: list[str] = []
    para: list[str] = []
    items: list[str] = []

    def close():
        if para:
            out.append("<p>" + _inline(" ".join(para)) + "</p>")
            para.clear()
        if items:
            out.append("<ul>" + "".join(f"<li>{_inline(x)}</li>" for x in items) + "</ul>")
            items.clear()

    for raw in html.escape(markdown, quote=True).splitlines():
        line = raw.strip()
        heading = re.match(r"(#{1,3})\s+(.*)", line)
        if not line:
            close()
        elif heading:
            close()
            level = len(heading.group(1)) + 2  # the page's own title is h2
            out.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif re.match(r"[-*]\s", line):
            if para:
                close()
            items.append(line[2:].strip())
        elif items and raw[:1].isspace():  # an indented continuation of a list item
            items[-1] += " " + line
        else:
            if items:
                close()
            para.append(line)
    close()
    return "\n".join(out)


__all__ = ["render"]
