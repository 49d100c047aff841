"""The algorithms' help as plain text for a terminal: ``qgis_process help ioueval:...`` prints
an algorithm's help string as it is, and the toolbox's HTML (paragraphs, lists, bold, code,
``&lt;``) would show as raw tags there."""

from __future__ import annotations

import html
import re
import textwrap
from html.parser import HTMLParser

#: Width of the wrapped lines (a terminal's 80 columns, less a margin).
WIDTH = 78
#: A <br> inside a block's text (a newline of the HTML source is only a space).
_BREAK = "\n"


def html_to_text(markup: str, width: int = WIDTH) -> str:
    """The help's HTML as plain text: paragraphs separated by a blank line and wrapped to
    ``width`` columns, list items as "- " lines with a hanging indent, <br> as a line break,
    every other tag dropped (its text kept) and entities decoded (``&gt;=`` is ``>=``).

    Args:
        markup: the HTML of a help string (the subset QGIS's toolbox shows: p, ul/ol, li, br,
            b, i, code, sub, sup; any other tag is dropped, its text kept).
        width: wrap lines at this many characters.
    Returns the text, without trailing spaces or blank lines at either end.
    """
    parser = _Blocks()
    parser.feed(markup)
    parser.close()
    paragraphs = []
    for kind, text in parser.blocks:
        lines = [" ".join(line.split()) for line in text.split(_BREAK)]
        lines = [line for line in lines if line]
        if not lines:
            continue
        if kind == "li":
            wrapped = [textwrap.fill(line, width, initial_indent="- " if k == 0 else "  ",
                                     subsequent_indent="  ", break_on_hyphens=False)
                       for k, line in enumerate(lines)]
        else:
            wrapped = [textwrap.fill(line, width, break_on_hyphens=False) for line in lines]
        paragraphs.append((kind, "\n".join(wrapped)))
    out = []
    for k, (kind, text) in enumerate(paragraphs):
        # list items follow each other without a blank line; a paragraph stands apart
        if k and not (kind == "li" and paragraphs[k - 1][0] == "li"):
            out.append("")
        out.append(text)
    return re.sub(r"[ \t]+\n", "\n", "\n".join(out)).strip()


class _Blocks(HTMLParser):
    """Splits HTML into (kind, text) blocks: "p" for paragraphs and loose text, "li" for
    list items; ``_BREAK`` inside a block's text marks a <br> (a newline of the source is a
    space, as in HTML)."""

    _BLOCK = {"p", "div", "ul", "ol", "li", "h1", "h2", "h3", "h4", "table", "tr", "pre"}

    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.blocks: list[list] = []
        self._kind = "p"
        self._text = []

    def _flush(self):
        text = "".join(self._text)
        if text.strip():
            self.blocks.append([self._kind, text])
        self._text = []

    def handle_starttag(self, tag, attrs):
        if tag == "br":
            self._text.append(_BREAK)
        elif tag in self._BLOCK:
            self._flush()
            self._kind = "li" if tag == "li" else "p"

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag in self._BLOCK:
            self._flush()
            self._kind = "p"

    def handle_data(self, data):
        self._text.append(data.replace(_BREAK, " "))

    def handle_entityref(self, name):
        self._text.append(html.unescape(f"&{name};"))

    def handle_charref(self, name):
        self._text.append(html.unescape(f"&#{name};"))

    def close(self):
        super().close()
        self._flush()
