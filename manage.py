#!/usr/bin/env python
"""Django's command-line utility for Faultline."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faultline.settings")
    from core.envparse import ConfigError

    try:
        from django.core.management import execute_from_command_line

        execute_from_command_line(sys.argv)
    except ConfigError as exc:
        # One line the operator can act on, not a settings-import traceback.
        sys.stderr.write(f"faultline: configuration error: {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
