"""Check that the database, broker and sandbox backend answer before starting.

Prints one line per check; a failing check says what to fix and the command
exits 1, so ``make run`` stops with an actionable message instead of a
traceback from deep inside a worker.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from faultline.health import run_checks


class Command(BaseCommand):
    help = "Check database, broker and sandbox backend; exit 1 naming what failed."

    def handle(self, *args, **options) -> None:
        failed = []
        for result in run_checks():
            if result.ok:
                self.stdout.write(f"ok     {result.name}: {result.detail}")
            else:
                failed.append(result)
                self.stderr.write(f"FAILED {result.name}: {result.detail}")
        if failed:
            raise CommandError(f"{', '.join(r.name for r in failed)} not ready; fix the line(s) above and start again")
