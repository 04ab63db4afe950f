import pytest

from questions.rendering import render_markdown

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src="x" onerror="alert(1)">',
    "[click](javascript:alert(1))",
    '<a href="javascript:alert(1)">x</a>',
    '<div onclick="steal()">hi</div>',
    "<iframe src='https://evil.example'></iframe>",
    "<style>body{display:none}</style>",
    '<svg onload="alert(1)"></svg>',
    '<p style="background:url(javascript:alert(1))">x</p>',
    "[x](JaVaScRiPt:alert(1))",
    '<form action="/accounts/logout/"><button>go</button></form>',
]


@pytest.mark.parametrize("source", HOSTILE)
def test_hostile_markup_does_not_survive(source):
    html = render_markdown(source).lower()
    for forbidden in (
        "<script",
        "onerror",
        "onclick",
        "onload",
        "javascript:",
        "<iframe",
        "<style",
        "<svg",
        "style=",
        "<form",
        "<img",
    ):
        assert forbidden not in html, (source, html)


def test_markdown_features_survive_sanitising():
    html = render_markdown(
        "### Steps\n\n1. **bold** and `code`\n\n```python\nx = 1\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n[docs](https://pytorch.org)"
    )
    assert "<h3>Steps</h3>" in html
    assert "<strong>bold</strong>" in html and "<code>code</code>" in html
    assert 'class="codehilite"' in html and '<span class="n">x</span>' in html
    assert "<table>" in html
    assert 'href="https://pytorch.org"' in html and 'rel="noopener noreferrer nofollow"' in html
