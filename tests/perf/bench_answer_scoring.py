"""Time to score one answer against its rubric, over every reference answer in the bank.

    .venv/bin/python tests/perf/bench_answer_scoring.py [--rounds 5]

Scores each of the 160 reference answers (80 questions × 2 languages, 1–4k characters each) ``--rounds``
times with ``questions.concepts.answer_coverage``, the function the practice page, lab diagnoses and
``scoreanswer`` call, and prints p50, p95 and max in milliseconds, then ``p95_ms=…``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from questions.bankfile import iter_question_files, load_topics, parse_question  # noqa: E402
from questions.concepts import answer_coverage  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    topics = {t.slug for t in load_topics()}
    cases = []
    for path in iter_question_files():
        spec = parse_question(path, topics)
        rubric = [(p.key, p.weight, p.concepts) for p in spec.rubric]
        cases += [(spec.answer[lang], rubric) for lang in ("en", "zh")]
    times = []
    for _ in range(args.rounds):
        for text, rubric in cases:
            start = time.perf_counter()
            answer_coverage(text, rubric)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    print(f"{len(cases)} answers × {args.rounds} rounds: p50 {statistics.median(times):.1f} ms, "
          f"p95 {p95:.1f} ms, max {times[-1]:.1f} ms")  # fmt: skip
    print(f"p95_ms={p95:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
