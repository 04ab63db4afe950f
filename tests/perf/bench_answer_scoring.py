"""Time to score one answer against its rubric, over every reference and calibration answer in the bank.

    .venv/bin/python tests/perf/bench_answer_scoring.py [--rounds 5]

Scores each of the 160 reference answers (80 questions × 2 languages, 1–4k characters each) and every
answer of the calibration files present (keyword lists, misconceptions, off-topic and good answers)
``--rounds`` times with ``questions.concepts.answer_coverage`` on the full rubric, misconceptions included,
as the practice page, ``scoreanswer`` and ``calibration`` call it, and prints p50, p95 and max in
milliseconds, then ``p95_ms=…``.
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
from questions.calibration import calibration_path, parse_calibration  # noqa: E402
from questions.concepts import answer_coverage  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    topics = {t.slug for t in load_topics()}
    specs = {spec.slug: spec for spec in (parse_question(path, topics) for path in iter_question_files())}
    cases = []
    for spec in specs.values():
        rubric = [p.scoring() for p in spec.rubric]
        cases += [(spec.answer[lang], rubric) for lang in ("en", "zh")]
        if calibration_path(spec).exists():
            cases += [(a.text, rubric) for a in parse_calibration(calibration_path(spec), specs).answers]
    times = []
    for _ in range(args.rounds):
        for text, rubric in cases:
            start = time.perf_counter()
            answer_coverage(text, rubric)
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    print(f"{len(cases)} answers ({len(specs) * 2} references) × {args.rounds} rounds: "
          f"p50 {statistics.median(times):.1f} ms, p95 {p95:.1f} ms, max {times[-1]:.1f} ms")  # fmt: skip
    print(f"p95_ms={p95:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
