from __future__ import annotations

from django.core.management.base import BaseCommand

from faultline.demo import DEMO_ACCOUNTS, ensure_demo_template, ensure_demo_users


class Command(BaseCommand):
    help = "Create the demo accounts (one per role and an admin) and print their credentials."

    def handle(self, *args, **options) -> None:
        credentials = ensure_demo_users()
        roles = {name: (role.value if role else "staff admin") for name, role, _ in DEMO_ACCOUNTS}
        self.stdout.write("Demo accounts (local use only):")
        for username, password in credentials.items():
            self.stdout.write(f"  {roles[username]:<12} user {username:<12} password {password}")
        template = ensure_demo_template()
        if template:
            self.stdout.write(f"Interview template for the demo interviewer: {template}")
        self.queue_lab_validation()

    def queue_lab_validation(self) -> None:
        from labs.tasks import validate_pending
        from labs.validation import pending_versions

        pending = pending_versions()
        if not pending:
            return
        # The worker proves each lab (fault reproduces, solution passes, cover-ups fail) before
        # candidates see it; labs appear on /labs/ one by one as they pass.
        # On the queue of lab runs: validation runs lab programs, and a worker that serves only
        # "default" (a web-only node) must not be tied up by it.
        validate_pending.apply_async(kwargs={"seeds": 1}, queue="cpu")
        self.stdout.write(f"Queued validation of {len(pending)} lab(s); they are published as they pass.")
