from questions.textsearch import cjk_bigrams, highlight, parse_query, snippet, stem, text_terms


def test_english_word_forms_share_a_stem():
    assert stem("leaks") == stem("leaking") == stem("leaked") == stem("leak") == "leak"
    assert stem("timeouts") == "timeout"
    assert stem("class") == "class"  # double s is not a plural


def test_chinese_is_indexed_as_bigrams():
    assert cjk_bigrams("显存泄漏") == ["显存", "存泄", "泄漏"]
    terms = text_terms("推理服务的显存缓慢上涨，如何定位泄漏点？NCCL Timeout")
    assert {"显存", "泄漏", "nccl", "timeout"} <= terms
    assert "存泄" not in terms


def test_query_groups_need_most_bigrams():
    (group,) = parse_query("显存泄漏")
    assert group.terms == ("显存", "存泄", "泄漏") and group.needed == 2
    words = parse_query("the NCCL timeouts")
    assert [g.terms for g in words] == [("nccl",), ("timeout",)]


def test_full_width_text_is_folded():
    assert "nccl" in text_terms("ＮＣＣＬ")


def test_highlight_escapes_html_and_marks_matches():
    html = highlight("<b>NCCL</b> timeouts & 显存泄漏", parse_query("nccl timeout 显存泄漏"))
    assert "&lt;b&gt;<mark>NCCL</mark>&lt;/b&gt;" in html
    assert "<mark>timeouts</mark>" in html
    assert "<mark>显存</mark>" in html and "<mark>泄漏</mark>" in html
    assert "&amp;" in html


def test_snippet_centres_on_the_first_match():
    text = "word " * 200 + "the NCCL watchdog fired"
    result = snippet(text, parse_query("watchdog"))
    assert result.startswith("…") and "<mark>watchdog</mark>" in result
