"""Imported by Python at start-up in every rank, because the launcher puts this directory first on PYTHONPATH.

It only hands over to ``faultline_harness._rankside``; anything that goes wrong is reported in one line
on stderr and the candidate's program carries on as if the harness were not there.
"""

try:
    from faultline_harness import _rankside

    _rankside.install()
except Exception as _exc:  # noqa: BLE001 - must never stop the candidate's program from starting
    import sys as _sys

    try:
        _sys.stderr.write(f"faultline-harness: warning: rank runtime not installed: {_exc!r}\n")
    except Exception:  # noqa: BLE001 - stderr itself may be unusable
        pass
