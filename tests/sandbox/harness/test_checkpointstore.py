"""The simulated checkpoint store: bandwidth paced in the launcher, only complete checkpoints visible,
loads counted per rank from the connecting process."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from faultline_harness import checkpointstore, recordstore


def call(path: Path, op: int, name: str, payload: bytes = b"") -> tuple[int, bytes]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(path))
        encoded = name.encode()
        conn.sendall(checkpointstore.REQUEST.pack(op, len(encoded), len(payload)) + encoded + payload)
        header = b""
        while len(header) < checkpointstore.ANSWER.size:
            chunk = conn.recv(checkpointstore.ANSWER.size - len(header))
            assert chunk, "the store closed the connection"
            header += chunk
        status, length = checkpointstore.ANSWER.unpack(header)
        body = b""
        while len(body) < length:
            chunk = conn.recv(length - len(body))
            assert chunk, "the store closed the connection"
            body += chunk
        return status, body


@pytest.fixture
def store(tmp_path: Path):
    made: list[checkpointstore.CheckpointStore] = []

    def make(
        mb_per_s: float, ranks: dict[int, int] | None = None, save_seconds: tuple[float, float] | None = None
    ) -> checkpointstore.CheckpointStore:
        one = checkpointstore.CheckpointStore(tmp_path, mb_per_s, save_seconds)
        one.set_ranks({pid: (rank, None) for pid, rank in (ranks or {os.getpid(): 0}).items()})
        one.start()
        made.append(one)
        return one

    yield make
    for one in made:
        one.stop()


def test_a_save_takes_as_long_as_the_bandwidth_says(store):
    made = store(mb_per_s=2.0)
    data = os.urandom(500_000)  # 0.25 s at 2 MB/s
    started = time.perf_counter()
    status, answer = call(made.path, checkpointstore.SAVE, "step-000060.pt", data)
    took = time.perf_counter() - started
    assert (status, answer) == (checkpointstore.OK, b"step-000060.pt")
    assert took >= 0.24
    assert call(made.path, checkpointstore.LOAD, "step-000060.pt") == (checkpointstore.OK, data)


def test_parallel_saves_share_the_bandwidth(store):
    # Splitting a checkpoint into pieces saved at once does not make the store faster.
    made = store(mb_per_s=4.0)
    pieces = [os.urandom(200_000) for _ in range(4)]  # 0.8 MB: 0.2 s in all at 4 MB/s
    threads = [
        threading.Thread(target=call, args=(made.path, checkpointstore.SAVE, f"part-{i}", piece))
        for i, piece in enumerate(pieces)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert time.perf_counter() - started >= 0.19
    assert made.counts()["saves"] == 4


def test_a_checkpoint_is_invisible_until_all_of_it_arrived(store):
    made = store(mb_per_s=1.0)
    saver = threading.Thread(target=call, args=(made.path, checkpointstore.SAVE, "step-000060.pt", b"x" * 400_000))
    saver.start()
    time.sleep(0.1)  # a tenth of the way in
    assert call(made.path, checkpointstore.LATEST, "step-") == (checkpointstore.MISSING, b"")
    assert call(made.path, checkpointstore.LOAD, "step-000060.pt") == (checkpointstore.MISSING, b"")
    saver.join(10)
    assert call(made.path, checkpointstore.LATEST, "step-") == (checkpointstore.OK, b"step-000060.pt")


def test_an_interrupted_save_is_never_visible(store):
    made = store(mb_per_s=1000.0)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(made.path))
        conn.sendall(checkpointstore.REQUEST.pack(checkpointstore.SAVE, 4, 1000) + b"step" + b"x" * 10)
    time.sleep(0.1)
    assert call(made.path, checkpointstore.LATEST, "") == (checkpointstore.MISSING, b"")
    assert made.counts()["saves"] == 0


def test_latest_is_the_greatest_name_with_the_prefix(store):
    made = store(mb_per_s=1000.0)
    for name in ("step-000060.pt", "step-000120.pt", "other.pt"):
        call(made.path, checkpointstore.SAVE, name, b"data")
    assert call(made.path, checkpointstore.LATEST, "step-") == (checkpointstore.OK, b"step-000120.pt")


def test_loads_count_for_the_rank_that_connected(store):
    # This test process is rank 1; a process the launcher does not know (none here) counts for no rank.
    made = store(mb_per_s=1000.0, ranks={os.getpid(): 1, 999_999: 0})
    call(made.path, checkpointstore.SAVE, "step-1", b"data")
    call(made.path, checkpointstore.LOAD, "step-1")
    call(made.path, checkpointstore.LOAD, "step-1")
    call(made.path, checkpointstore.LOAD, "missing")
    counts = made.counts()
    assert counts.pop("max_load_delay_ms") < 1000
    assert counts == {"saves": 1, "loads": 2, "loads_rank0": 0, "loads_rank1": 2, "min_rank_loads": 0}


def test_a_save_lasts_a_drawn_duration_within_the_span(store):
    made = store(mb_per_s=1000.0, save_seconds=(0.3, 0.6))
    took = []
    for index in range(4):
        started = time.perf_counter()
        assert call(made.path, checkpointstore.SAVE, f"step-{index}", b"data")[0] == checkpointstore.OK
        took.append(time.perf_counter() - started)
    assert all(0.29 <= t <= 0.9 for t in took), took
    assert len({round(t, 3) for t in took}) > 1  # drawn anew for every save


def test_the_delay_from_a_complete_checkpoint_to_each_ranks_first_load_is_measured(store):
    made = store(mb_per_s=1000.0)
    call(made.path, checkpointstore.SAVE, "step-1", b"data")
    call(made.path, checkpointstore.LOAD, "step-1")
    assert made.counts()["max_load_delay_ms"] < 200
    time.sleep(0.4)
    call(made.path, checkpointstore.LOAD, "step-1")  # a rank's later loads of the same checkpoint do not count
    assert made.counts()["max_load_delay_ms"] < 200
    call(made.path, checkpointstore.SAVE, "step-2", b"data")
    time.sleep(0.4)  # a rank waiting a fixed time loads well after the checkpoint was there
    call(made.path, checkpointstore.LOAD, "step-2")
    assert made.counts()["max_load_delay_ms"] >= 400


def test_a_child_process_counts_for_its_rank(store):
    made = store(mb_per_s=1000.0, ranks={os.getpid(): 0})
    call(made.path, checkpointstore.SAVE, "step-1", b"data")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            call(made.path, checkpointstore.LOAD, "step-1")
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    assert made.counts()["loads_rank0"] == 1


def test_a_malformed_request_closes_the_connection(store):
    made = store(mb_per_s=1000.0)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(made.path))
        conn.sendall(checkpointstore.REQUEST.pack(9, 0, 0))
        conn.settimeout(2)
        assert conn.recv(10) == b""


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ('{"checkpoint_store": {}}', "needs exactly mb_per_s"),
        ('{"checkpoint_store": {"mb_per_s": 0}}', "mb_per_s"),
        ('{"checkpoint_store": {"mb_per_s": "fast"}}', "mb_per_s"),
        ('{"checkpoint_store": {"mb_per_s": 1, "save_s_min": 2}}', "and optionally all of save_s_min, save_s_max"),
        ('{"checkpoint_store": {"mb_per_s": 1, "save_s_min": 9, "save_s_max": 2}}', "save_s_min: at most save_s_max"),
    ],
)
def test_bad_store_descriptions_are_refused(raw: str, problem: str):
    with pytest.raises(recordstore.ServiceConfigError, match=problem):
        recordstore.parse_config(raw)


SERVICES = json.dumps({"checkpoint_store": {"mb_per_s": 1.0}})

# The program patches everything in its own process that used to set the store's speed, then saves 0.5 MB.
PATCHING_PROGRAM = """
    import os, socket, struct, time
    import faultline_harness.checkpointstore as store
    time.sleep = lambda s: None
    os.environ["CKPT_STORE_MB_PER_S"] = "100000"
    os.environ["FAULTLINE_SERVICES"] = '{"checkpoint_store": {"mb_per_s": 1000}}'
    store.CheckpointStore.__init__ = None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(os.environ["FAULTLINE_CHECKPOINT_STORE"])
    started = time.monotonic()
    payload = b"x" * 500_000
    conn.sendall(store.REQUEST.pack(store.SAVE, 6, len(payload)) + b"step-1" + payload)
    status, length = store.ANSWER.unpack(conn.recv(store.ANSWER.size))
    conn.recv(length)
    conn.sendall(store.REQUEST.pack(store.LOAD, 6, 0) + b"step-1")
    status, length = store.ANSWER.unpack(conn.recv(store.ANSWER.size))
    print("saved", status, round(time.monotonic() - started, 1))
"""


def test_a_program_cannot_speed_up_a_save_and_its_load_is_counted(launch):
    run = launch(PATCHING_PROGRAM, env={"FAULTLINE_SERVICES": SERVICES})
    assert run.wait(60) == 0
    [line] = run.output(0)
    status, seconds = line.split()[1:]
    assert status == "0" and float(seconds) >= 0.45
    counts = run.events("end")[-1]["services"]["checkpoint_store"]
    assert counts.pop("max_load_delay_ms") < 1000  # loaded right after the save was complete
    assert counts == {"saves": 1, "loads": 1, "loads_rank0": 1, "min_rank_loads": 1}
