"""How soon an interviewer's live view shows what the candidate just typed.

    .venv/bin/python tests/perf/bench_interview_live.py                  # 40 trials, 1 s polling, SQLite
    .venv/bin/python tests/perf/bench_interview_live.py --trials 100 --poll-ms 1000
    .venv/bin/python tests/perf/bench_interview_live.py --postgres postgres://faultline:faultline@127.0.0.1:5432/faultline

The platform is served over real HTTP (a threaded WSGI server on loopback, production-like settings,
a scratch database with the real bank and lab catalog). Two clients talk to it with API tokens, as
the two browsers would:

- the candidate autosaves a question's draft (``PUT /api/interviews/take/<pk>/items/<item>/draft/``,
  the candidate page's own endpoint; ``--via service`` calls ``taking.autosave`` instead);
- the interviewer's page polls ``GET /api/interviews/<pk>/live/`` the way ``interview-live.js`` does:
  the next request ``--poll-ms`` after the previous answer arrived.

A trial starts just before the autosave request is sent, at a random moment of the poll cycle, and
ends when a poll answer carrying the new draft has arrived. It prints p50/p95/max of that latency,
of the autosave request and of one poll request, and a last line
``latency_p50_ms=… latency_p95_ms=… poll_p50_ms=… save_p50_ms=…``.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import socketserver
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import timedelta
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from scratch import setup_django

REPO = Path(__file__).resolve().parents[2]
LAB = "nan-lr-unnormalised"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


class ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args) -> None:
        pass


def scratch_postgres(url: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS faultline_bench_live")
        conn.execute("CREATE DATABASE faultline_bench_live")
    return url.rsplit("/", 1)[0] + "/faultline_bench_live"


def request(method: str, url: str, token: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Authorization", f"Token {token}")
    req.add_header("Accept", "application/json")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=30) as response:
        return json.loads(response.read())


def prepare():
    """An interview in progress (a question and a lab) and API tokens for its candidate and interviewer."""
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from core.roles import Role, role_group
    from interviews import taking
    from interviews.loops import ItemSpec
    from interviews.scheduling import CandidateSpec, create_interview
    from labs.models import Lab, LabVersion
    from questions.models import Question

    call_command("loadbank", verbosity=0, stdout=io.StringIO())
    call_command("loadlabs", verbosity=0, stdout=io.StringIO())
    lab = Lab.objects.get(slug=LAB)
    version = lab.versions.order_by("-number").first()
    LabVersion.objects.filter(pk=version.pk).update(validated_at=timezone.now())
    Lab.objects.filter(pk=lab.pk).update(current=version)
    users = {}
    for name, role in (("bench-candidate", Role.CANDIDATE), ("bench-interviewer", Role.INTERVIEWER)):
        user = User.objects.create_user(name, f"{name}@example.test", "x" * 20)
        user.groups.add(role_group(role))
        users[role] = user
    question = Question.objects.filter(retired=False).order_by("slug").first()
    now = timezone.now()
    interview = create_interview(
        users[Role.INTERVIEWER], title="Latency", candidate=CandidateSpec(users[Role.CANDIDATE]),
        items=[ItemSpec("question", question.slug), ItemSpec("lab", LAB)],
        window_opens_at=now - timedelta(minutes=1), window_closes_at=now + timedelta(hours=3), duration_minutes=180,
    )  # fmt: skip
    interview = taking.start(interview)
    taking.open_item(interview.items.get(kind="lab"))  # the poll then carries a lab attempt too
    item = interview.items.get(kind="question")
    tokens = {role: Token.objects.create(user=user).key for role, user in users.items()}
    return interview, item, tokens[Role.CANDIDATE], tokens[Role.INTERVIEWER]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--poll-ms", type=int, default=1000, help="the live page's polling interval")
    parser.add_argument("--via", choices=("http", "service"), default="http", help="how the candidate autosaves")
    parser.add_argument("--postgres", help="server URL; a scratch database faultline_bench_live is created on it")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="faultline-bench-live-") as var_dir:
        database = scratch_postgres(args.postgres) if args.postgres else f"sqlite:///{var_dir}/bench.sqlite3"
        setup_django(var_dir, database)
        from django.core.wsgi import get_wsgi_application
        from django.db import connection

        from interviews import taking
        from interviews.models import InterviewItem

        interview, item, candidate_token, interviewer_token = prepare()
        server = make_server("127.0.0.1", 0, get_wsgi_application(), ThreadingServer, QuietHandler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://localhost:{server.server_port}"  # the host the scratch settings allow
        live_url = f"{base}/api/interviews/{interview.pk}/live/"
        draft_url = f"{base}/api/interviews/take/{interview.pk}/items/{item.pk}/draft/"

        seen: dict[str, float] = {}
        poll_times: list[float] = []
        changed = threading.Condition()
        stop = threading.Event()

        def poller() -> None:
            # Like interview-live.js: the next poll is scheduled when the previous answer has arrived.
            while not stop.is_set():
                started = time.monotonic()
                state = request("GET", live_url, interviewer_token)
                arrived = time.monotonic()
                poll_times.append(arrived - started)
                draft = next(i["draft"] for i in state["items"] if i["id"] == item.pk)
                with changed:
                    if draft not in seen:
                        seen[draft] = arrived
                        changed.notify_all()
                stop.wait(args.poll_ms / 1000)

        watcher = threading.Thread(target=poller, daemon=True)
        watcher.start()
        time.sleep(args.poll_ms / 1000 * 1.5)

        latencies, save_times = [], []
        rng = random.Random(10)
        for n in range(args.trials):
            time.sleep(rng.uniform(0, args.poll_ms / 1000))  # land anywhere in the poll cycle
            text = f"trial {n}: the all-reduce waits on rank 3, which skipped a step after the OOM"
            started = time.monotonic()
            if args.via == "http":
                request("PUT", draft_url, candidate_token, {"text": text})
            else:
                taking.autosave(InterviewItem.objects.get(pk=item.pk), text)
            save_times.append(time.monotonic() - started)
            with changed:
                if not changed.wait_for(lambda text=text: text in seen, timeout=30):
                    print(f"trial {n}: the draft never showed up", file=sys.stderr)
                    return 1
                latencies.append(seen[text] - started)
        stop.set()
        watcher.join(timeout=10)
        server.shutdown()
        vendor = connection.vendor

    ms = lambda values, share: percentile(values, share) * 1000  # noqa: E731
    print(f"database: {vendor}; autosave via {args.via}; polling every {args.poll_ms} ms; {args.trials} trials")
    print(f"{'':28} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for label, values in (
        ("autosave → shown to panel", latencies),
        ("autosave request", save_times),
        ("one live poll request", poll_times),
    ):
        print(f"{label:28} {ms(values, 0.5):8.0f} {ms(values, 0.95):8.0f} {max(values) * 1000:8.0f}")
    print(f"mean latency {statistics.mean(latencies) * 1000:.0f} ms (expected about poll/2 + one poll request)")
    print(
        f"latency_p50_ms={ms(latencies, 0.5):.0f} latency_p95_ms={ms(latencies, 0.95):.0f} "
        f"poll_p50_ms={ms(poll_times, 0.5):.0f} save_p50_ms={ms(save_times, 0.5):.0f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
