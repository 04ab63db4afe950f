from __future__ import annotations

from django.core.management.base import BaseCommand

from faultline.demo import DEMO_ACCOUNTS, ensure_demo_users


class Command(BaseCommand):
    help = "Create the demo accounts (one per role and an admin) and print their credentials."

    def handle(self, *args, **options) -> None:
        credentials = ensure_demo_users()
        roles = {name: (role.value if role else "staff admin") for name, role, _ in DEMO_ACCOUNTS}
        self.stdout.write("Demo accounts (local use only):")
        for username, password in credentials.items():
            self.stdout.write(f"  {roles[username]:<12} user {username:<12} password {password}")
