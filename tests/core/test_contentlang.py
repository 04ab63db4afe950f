import pytest

from core.contentlang import content_language


@pytest.mark.parametrize(
    "code,expected",
    [
        ("zh-hans", "zh"),
        ("zh-Hans", "zh"),
        ("zh-cn", "zh"),
        ("en", "en"),
        ("en-us", "en"),
        ("fr", "en"),
        ("", "en"),
        (None, "en"),
    ],
)
def test_every_chinese_code_reads_chinese_content_and_everything_else_english(code, expected):
    assert content_language(code) == expected
