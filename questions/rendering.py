"""Markdown → sanitised HTML for question files, authors and candidates alike.

Markdown passes raw HTML through, so every rendering goes through nh3 (an
allow-list sanitiser): scripts, event handlers, javascript: URLs and unknown
tags never reach a page, whoever wrote the text.
"""

from __future__ import annotations

import markdown
import nh3

ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "h3",
    "h4",
    "h5",
    "h6",
    "strong",
    "em",
    "del",
    "code",
    "pre",
    "span",
    "div",
    "blockquote",
    "ul",
    "ol",
    "li",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "a",
    "sup",
    "sub",
    "kbd",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    # Pygments marks tokens with classes; nothing else may carry a class.
    "span": {"class"},
    "div": {"class"},
    "code": {"class"},
    "th": {"align"},
    "td": {"align"},
}
MARKDOWN_EXTENSIONS = ["fenced_code", "codehilite", "tables", "sane_lists"]
MARKDOWN_CONFIG = {"codehilite": {"guess_lang": False, "css_class": "codehilite"}}


def render_markdown(text: str) -> str:
    raw = markdown.markdown(text, extensions=MARKDOWN_EXTENSIONS, extension_configs=MARKDOWN_CONFIG)
    return nh3.clean(
        raw,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
