"""Faultline lab harness: the code that runs inside the sandbox around a candidate's program.

Modules:

* ``launch`` — starts the ranks and multiplexes their output and telemetry onto one stdout.
* ``report`` — the API lab programs use to publish metrics (``from faultline_harness import report``).
* ``diag`` — asks a running program for stack and memory dumps.

Only the standard library is imported here; torch is touched lazily and only inside rank processes.
"""

PROTOCOL_VERSION = 1
