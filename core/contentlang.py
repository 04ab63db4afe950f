"""Which of the two content languages (bank, labs, interviews) a Django language code reads."""

from __future__ import annotations


def content_language(language: str | None) -> str:
    """``"zh"`` for any Chinese code (zh-hans, zh-cn, …), ``"en"`` for everything else, unset included."""
    return "zh" if (language or "").lower().startswith("zh") else "en"
