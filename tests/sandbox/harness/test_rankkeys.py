"""Rank keys: the launcher draws each rank's key, a rank can learn only its own, and the key files the grader
reads after the run are the launcher's copies, whatever a rank wrote under those names."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from faultline_harness import rankkeys, recordstore

PATTERN = "key-rank{rank}.json"


@pytest.fixture
def keys(tmp_path: Path, monkeypatch):
    made = rankkeys.RankKeys(tmp_path, PATTERN)
    made.set_ranks({os.getpid(): (1, None), 999_999: (0, None)})
    made.start()
    monkeypatch.setenv("FAULTLINE_RANK_KEYS", str(made.path))
    yield made
    made.stop()


def written(folder: Path, rank: int) -> dict:
    return json.loads((folder / f"key-rank{rank}.json").read_text())


def test_a_rank_gets_its_own_key_and_the_grader_finds_the_same(keys, tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    mine = rankkeys.fetch()
    assert mine is not None and mine == rankkeys.fetch()
    (out / "key-rank1.json").write_text(json.dumps({"rank": 1, "key": 7}))  # a rank's forgery
    keys.restore(out)
    assert written(out, 1) == {"rank": 1, "key": mine}
    assert written(out, 0)["key"] != mine
    assert keys.counts() == {"served": 2, "refused": 0}


def test_a_process_outside_the_ranks_gets_nothing(tmp_path: Path, monkeypatch):
    made = rankkeys.RankKeys(tmp_path, PATTERN)
    made.set_ranks({999_999: (0, None)})  # this test process is not a rank
    made.start()
    monkeypatch.setenv("FAULTLINE_RANK_KEYS", str(made.path))
    try:
        assert rankkeys.fetch() is None
        with pytest.raises(RuntimeError, match="did not hand this rank its key"):
            rankkeys.fetch_or_draw(PATTERN)
    finally:
        made.stop()
    assert made.counts()["refused"] == 2


def test_no_key_is_served_after_restore(keys, tmp_path: Path):
    keys.restore(tmp_path)
    assert rankkeys.fetch() is None


def test_without_the_service_a_key_is_drawn_and_written_for_the_grader(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("FAULTLINE_RANK_KEYS", raising=False)
    monkeypatch.setenv("FAULTLINE_OUTPUT_DIR", str(tmp_path))
    monkeypatch.setenv("RANK", "1")
    key = rankkeys.fetch_or_draw(PATTERN)
    assert written(tmp_path, 1) == {"rank": 1, "key": key}


@pytest.mark.parametrize("file", ["key.json", "../key-rank{rank}.json", "a/key-rank{rank}.json", 5])
def test_bad_key_file_names_are_refused(file):
    with pytest.raises(recordstore.ServiceConfigError, match="rank_keys.file"):
        recordstore.parse_config(json.dumps({"rank_keys": {"file": file}}))


# Each rank prints the key it got; rank 0 also writes a key file for rank 1 and tries to read rank 1's key
# out of its environment, which the launcher never put there.
TWO_RANKS = """
    import os
    from faultline_harness import rankkeys
    rank = int(os.environ["RANK"])
    print("key", rankkeys.fetch())
    if rank == 0:
        out = os.environ["FAULTLINE_OUTPUT_DIR"]
        with open(os.path.join(out, "key-rank1.json"), "w") as f:
            f.write('{"rank": 1, "key": 42}')
        print("in env", any(name.endswith("KEY") for name in os.environ))
"""


def test_the_launcher_hands_each_rank_its_key_and_writes_them_after_the_job(launch):
    services = json.dumps({"rank_keys": {"file": PATTERN}})
    run = launch(TWO_RANKS, ranks=2, env={"FAULTLINE_SERVICES": services})
    assert run.wait(60) == 0
    got = {rank: int(run.output(rank)[0].split()[1]) for rank in (0, 1)}
    assert got[0] != got[1]
    assert run.output(0)[1] == "in env False"
    for rank in (0, 1):
        assert written(run.out_dir, rank) == {"rank": rank, "key": got[rank]}
    assert run.events("end")[-1]["services"]["rank_keys"] == {"served": 2, "refused": 0}
