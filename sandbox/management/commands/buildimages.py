"""Build the lab runner image for the Docker sandbox backend.

Quick when nothing changed: the image tag is a hash of the Dockerfile, the pinned
packages and the harness, and the build is skipped when the engine has that tag.
The last line printed is the tag, alone, so ``-v 0`` output can be used in scripts.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from sandbox.images.build import ImageBuildError, ensure_image
from sandbox.images.tags import KINDS


class Command(BaseCommand):
    help = "Build the lab runner image (skipped when its tagged image exists) and print its tag."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--kind", choices=KINDS, default="cpu", help="which image: cpu (default) or cuda")
        parser.add_argument("--force", action="store_true", help="build even when the tagged image exists")

    def handle(self, *args, **options) -> None:
        quiet = options["verbosity"] == 0

        def progress(line: str) -> None:
            if not quiet:
                self.stdout.write(line)

        try:
            tag = ensure_image(options["kind"], force=options["force"], progress=progress)
        except ImageBuildError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(tag)
