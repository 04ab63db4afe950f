import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_env_example_documents_every_variable_settings_read():
    source = (REPO / "faultline" / "settings.py").read_text()
    read = set(re.findall(r'env_\w+\(\s*"([A-Z_]+)"', source)) | set(
        re.findall(r'parse_\w+_url\(\s*"([A-Z_]+)"', source)
    )
    example = (REPO / "platform" / ".env.example").read_text()
    documented = set(re.findall(r"^([A-Z_]+)=", example, flags=re.M))
    assert read, "the pattern no longer finds the settings' variables"
    assert read - documented == set(), f"undocumented: {sorted(read - documented)}"
    assert documented - read == set(), f"documented but never read: {sorted(documented - read)}"
