"""Run the web server and a Celery worker together in the foreground.

A second worker serves only the ``authoring`` queue (authors' validations).
Ctrl-C (or SIGTERM) stops them all; if one dies the others are stopped too,
so a half-running platform never sits there looking healthy.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core.envparse import redact_url
from sandbox.selection import choose_backend


class Command(BaseCommand):
    help = "Start the web server (gunicorn) and a Celery worker; Ctrl-C stops both."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default=os.environ.get("FAULTLINE_HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("FAULTLINE_PORT", "8000")))
        parser.add_argument("--web-workers", type=int, default=2)
        parser.add_argument("--concurrency", type=int, default=2, help="Celery worker processes")

    def handle(self, *args, host: str, port: int, web_workers: int, concurrency: int, **options) -> None:
        backend = choose_backend()
        if not backend.ok:
            raise CommandError(f"sandbox: {backend.detail}")
        web = [
            sys.executable,
            "-m",
            "gunicorn",
            "faultline.wsgi:application",
            "--bind",
            f"{host}:{port}",
            "--workers",
            str(web_workers),
            "--threads",
            "4",
            "--access-logfile",
            "-",
            "--graceful-timeout",
            "5",
        ]
        worker = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "faultline",
            "worker",
            "--queues",
            "default,cpu",
            "--concurrency",
            str(concurrency),
            "--hostname",
            "faultline@%h",
            "--loglevel",
            "INFO",
        ]
        # Authors' draft validations get a worker of their own: a 20-seed validation never holds up a
        # candidate's run on the default and cpu queues.
        authoring = [*worker[:6], "--queues", "authoring", "--concurrency", "1", "--hostname", "authoring@%h",
                     "--loglevel", "INFO"]  # fmt: skip
        self.stdout.write(f"Sandbox backend: {backend.name} — {backend.detail}")
        engine = settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1]
        self.stdout.write(f"Broker: {redact_url(settings.CELERY_BROKER_URL)}  Database: {engine}")
        children = {
            "web": subprocess.Popen(web),
            "worker": subprocess.Popen(worker),
            "authoring worker": subprocess.Popen(authoring),
        }
        self.stdout.write(
            self.style.SUCCESS(f"Faultline is running at http://{host}:{port}/  (Ctrl-C stops web and worker)")
        )
        self.stdout.flush()

        stopping = False

        def stop(signum, frame) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        exit_code = 0
        try:
            while not stopping:
                for name, proc in children.items():
                    code = proc.poll()
                    if code is not None:
                        self.stderr.write(f"{name} exited with status {code}; stopping the platform")
                        exit_code = code or 1
                        stopping = True
                        break
                time.sleep(0.3)
        finally:
            _terminate(children.values())
        if exit_code:
            sys.exit(exit_code)


def _terminate(procs, grace: float = 10.0) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
