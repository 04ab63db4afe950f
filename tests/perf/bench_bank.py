"""Question-bank page latency on a synthetic bank of 20,000 questions.

    .venv/bin/python tests/perf/bench_bank.py                      # SQLite only
    .venv/bin/python tests/perf/bench_bank.py --postgres postgres://faultline:faultline@127.0.0.1:5432/faultline

Each database runs in its own child process (Django reads settings once). The
bank is the real 80 questions cloned into variants, so posting lists are as long
as a bank of near-duplicates makes them: pessimistic for search. Requests go
through Django's test client as a signed-in candidate; p50/p95 in milliseconds
are printed per database and page kind, side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
QUERIES = ["显存泄漏", "memory leak", "NCCL timeout", "梯度裁剪", "GradScaler fp16", "数据并行", "checkpoint", "卡死"]
SEARCH_TARGET_MS = 50.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=200, help="timed requests per page kind")
    parser.add_argument("--postgres", help="server URL; a scratch database faultline_bench is created on it")
    parser.add_argument("--child", choices=["sqlite", "postgres"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return run_child(args)

    results = {}
    with tempfile.TemporaryDirectory(prefix="faultline-bench-") as tmp:
        targets = [("sqlite", f"sqlite:///{tmp}/bench.sqlite3")]
        if args.postgres:
            targets.append(("postgres", scratch_postgres(args.postgres)))
        for name, url in targets:
            env = dict(
                os.environ,
                DATABASE_URL=url,
                FAULTLINE_VAR_DIR=tmp,
                DEBUG="false",
                SECRET_KEY="bench-only-" + "x" * 40,
                ALLOWED_HOSTS="testserver",
            )
            env.pop("PYTEST_VERSION", None)
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    name,
                    "--questions",
                    str(args.questions),
                    "--requests",
                    str(args.requests),
                ],
                env=env,
                cwd=REPO,
                capture_output=True,
                text=True,
            )
            if out.returncode != 0:
                print(out.stdout + out.stderr, file=sys.stderr)
                return 1
            results[name] = json.loads(out.stdout.strip().splitlines()[-1])

    print(f"question bank benchmark: {args.questions} questions, {args.requests} requests per kind, test client")
    print(f"{'database':<10} {'build s':>8} {'page':<8} {'p50 ms':>8} {'p95 ms':>8}")
    for name, result in results.items():
        for kind in ("list", "filter", "search", "api_search"):
            p50, p95 = result["timings"][kind]
            print(f"{name:<10} {result['build_seconds']:>8.1f} {kind:<8} {p50:>8.1f} {p95:>8.1f}")
    if "postgres" in results:
        p95 = results["postgres"]["timings"]["search"][1]
        verdict = "met" if p95 < SEARCH_TARGET_MS else "NOT met"
        print(f"target search p95 < {SEARCH_TARGET_MS:.0f} ms on PostgreSQL: {verdict} ({p95:.1f} ms)")
    return 0


def scratch_postgres(url: str) -> str:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS faultline_bench")
        conn.execute("CREATE DATABASE faultline_bench")
    return url.rsplit("/", 1)[0] + "/faultline_bench"


def run_child(args) -> int:
    sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "faultline.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("collectstatic", interactive=False, verbosity=0)  # DEBUG is off: the production static path
    started = time.perf_counter()
    build_bank(args.questions)
    build_seconds = time.perf_counter() - started
    timings = measure(args.requests)
    print(json.dumps({"build_seconds": build_seconds, "timings": timings}))
    return 0


def build_bank(total: int) -> None:
    from django.db import connection, transaction

    from questions.loader import load_bank, search_terms_for
    from questions.models import Question, RubricPoint, Tag

    load_bank()  # the real 80 questions, topics and tags
    seeds = list(Question.objects.select_related("topic").prefetch_related("tags", "rubric"))
    rng = random.Random(7)
    with transaction.atomic():
        variants = []
        for n in range(total - len(seeds)):
            seed = seeds[n % len(seeds)]
            suffix = n // len(seeds) + 1
            clone = Question(
                slug=f"{seed.slug}-v{suffix}",
                topic=seed.topic,
                difficulty=rng.randint(1, 5),
                source_document=seed.source_document,
                source_number=seed.source_number,
                title_en=f"{seed.title_en} (variant {suffix})",
                title_zh=f"{seed.title_zh}（变体 {suffix}）",
                prompt_en=seed.prompt_en,
                prompt_zh=seed.prompt_zh,
                answer_en=seed.answer_en,
                answer_zh=seed.answer_zh,
                prompt_html_en=seed.prompt_html_en,
                prompt_html_zh=seed.prompt_html_zh,
                answer_html_en=seed.answer_html_en,
                answer_html_zh=seed.answer_html_zh,
                file_path="synthetic",
                content_hash="synthetic",
                related_labs=[],
                has_lab=rng.random() < 0.2,
            )
            clone.seed = seed
            variants.append(clone)
        Question.objects.bulk_create(variants, batch_size=2000)
        tag_rows, rubric_rows, term_rows = [], [], []
        terms_by_seed = {}
        for seed in seeds:
            terms_by_seed[seed.id] = search_terms_for(
                titles=[seed.title_en, seed.title_zh],
                prompts=[seed.prompt_en, seed.prompt_zh],
                tags=[t.slug for t in seed.tags.all()],
                concepts=[g for p in seed.rubric.all() for g in p.concepts],
                topic_names=[seed.topic.name_en, seed.topic.name_zh],
            )
        through = Question.tags.through
        for clone in variants:
            seed = clone.seed
            tag_rows.extend(through(question_id=clone.id, tag_id=t.id) for t in seed.tags.all())
            rubric_rows.extend(
                RubricPoint(
                    question_id=clone.id,
                    key=p.key,
                    position=p.position,
                    weight=p.weight,
                    text_en=p.text_en,
                    text_zh=p.text_zh,
                    concepts=p.concepts,
                )
                for p in seed.rubric.all()
            )
            terms = dict(terms_by_seed[seed.id])
            terms["variant"] = 4
            term_rows.extend((t, clone.id, w) for t, w in terms.items())
        through.objects.bulk_create(tag_rows, batch_size=5000)
        RubricPoint.objects.bulk_create(rubric_rows, batch_size=5000)
        insert_terms(connection, term_rows)
        assert Tag.objects.exists()
    with connection.cursor() as cursor:
        # What autovacuum gives a live database: planner statistics and the visibility map
        # that lets PostgreSQL answer from indexes alone.
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")


def insert_terms(connection, rows: list[tuple[str, int, int]]) -> None:
    """Millions of index rows: raw COPY / executemany, not one model object each."""
    table = "questions_searchterm"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} (term, question_id, weight) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            cursor.executemany(f"INSERT INTO {table} (term, question_id, weight) VALUES (%s, %s, %s)", rows)


def measure(requests: int) -> dict[str, tuple[float, float]]:
    from django.contrib.auth.models import User
    from django.test import Client

    from core.roles import Role, role_group
    from questions.models import Topic

    user = User.objects.create_user("bench", password="bench-pass-1234")
    user.groups.add(role_group(Role.CANDIDATE))
    client = Client()
    client.force_login(user)
    rng = random.Random(11)
    topics = list(Topic.objects.values_list("slug", flat=True))
    pages = {
        "list": lambda: ("/questions/", {"page": rng.randint(1, 1000)}),
        "filter": lambda: (
            "/questions/",
            {"topic": rng.choice(topics), "difficulty": rng.randint(1, 5)}
            | ({"has_lab": "yes"} if rng.random() < 0.5 else {}),
        ),
        "search": lambda: ("/questions/", {"q": rng.choice(QUERIES)}),
        "api_search": lambda: ("/api/questions/", {"q": rng.choice(QUERIES)}),
    }
    timings = {}
    for kind, make_request in pages.items():
        for _ in range(20):  # warm caches and connections
            client.get(*make_request())
        samples = []
        for _ in range(requests):
            url = make_request()
            start = time.perf_counter()
            response = client.get(*url)
            samples.append((time.perf_counter() - start) * 1000)
            if response.status_code != 200:
                raise SystemExit(f"{url} answered {response.status_code}")
        cuts = statistics.quantiles(samples, n=20)
        timings[kind] = (statistics.median(samples), cuts[18])
    return timings


if __name__ == "__main__":
    sys.exit(main())
