"""The simulated record store: latency, the concurrency cap and the read count kept outside the ranks."""

from __future__ import annotations

import json
import os
import socket
import struct
import threading
import time
from pathlib import Path

import pytest
from faultline_harness import recordstore, socketservice

from labs import grader_api

from .conftest import harness_env


def _read(path: Path, seed: int, index: int, floats: int = 4, conn: socket.socket | None = None) -> list[float]:
    own = conn is None
    if conn is None:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(str(path))
    try:
        conn.sendall(recordstore.REQUEST.pack(seed, index))
        data = b""
        while len(data) < 4 * floats:
            chunk = conn.recv(4 * floats - len(data))
            assert chunk, "the store closed the connection"
            data += chunk
        return list(struct.unpack(f"<{floats}f", data))
    finally:
        if own:
            conn.close()


@pytest.fixture
def store(tmp_path: Path):
    stores: list[recordstore.RecordStore] = []

    def make(latency_ms: float, concurrency: int, floats: int = 4) -> recordstore.RecordStore:
        made = recordstore.RecordStore(tmp_path, latency_ms, concurrency, floats)
        made.start()
        stores.append(made)
        return made

    yield make
    for made in stores:
        made.stop()


def test_serves_the_documented_record_and_counts_each_read(store):
    made = store(latency_ms=1, concurrency=2)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(made.path))
        first = _read(made.path, 7, 3, conn=conn)
        again = _read(made.path, 7, 3, conn=conn)
        other = _read(made.path, 7, 4, conn=conn)
    expected = list(struct.unpack("<4f", struct.pack("<4f", *recordstore.record(7, 3, 4))))
    assert first == again == expected
    assert other != first
    assert made.counts() == {"reads": 3, "records": 2, "records_in_children": 0}


def test_graders_rebuild_exactly_the_records_the_store_sends(store):
    made = store(latency_ms=0, concurrency=2, floats=32)
    for seed, index in ((1, 0), (80176, 8191), (2**31 - 1, 16383)):
        assert tuple(_read(made.path, seed, index, floats=32)) == grader_api.store_record(seed, index, 32)


def test_the_client_reads_records_in_order_over_one_connection_per_process(store, monkeypatch):
    made = store(latency_ms=0, concurrency=2, floats=4)
    monkeypatch.setenv("FAULTLINE_RECORD_STORE", str(made.path))
    client = recordstore.StoreClient(4)
    indices = [5, 1, 300, 1] + list(range(400, 700))  # more than one batch of requests
    got = client.read(9, indices)
    assert got == [grader_api.store_record(9, index, 4) for index in indices]
    assert made.counts()["reads"] == len(indices)


def test_a_client_outside_a_run_says_so(monkeypatch):
    monkeypatch.delenv("FAULTLINE_RECORD_STORE", raising=False)
    with pytest.raises(RuntimeError, match="only inside a lab run"):
        recordstore.StoreClient(4).read(1, [0])


def test_every_read_waits_the_latency(store):
    made = store(latency_ms=20, concurrency=4)
    started = time.perf_counter()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(made.path))
        for index in range(5):
            _read(made.path, 1, index, conn=conn)
    assert time.perf_counter() - started >= 5 * 0.020


def test_parallel_clients_cannot_beat_the_concurrency_cap(store):
    # 4 slots, 25 ms each: 24 reads from 12 threads at once take at least 24 / 4 × 25 ms = 150 ms.
    made = store(latency_ms=25, concurrency=4)

    def client(first: int) -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(str(made.path))
            for index in (first, first + 12):
                _read(made.path, 2, index, conn=conn)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(12)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    took = time.perf_counter() - started
    assert made.reads == 24
    assert took >= 0.150
    # and the cap does allow overlap: far less than 24 serial reads (600 ms)
    assert took < 0.450


def test_a_malformed_request_is_not_a_read(store):
    made = store(latency_ms=1, concurrency=1)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(made.path))
        conn.sendall(b"\x01\x02\x03")
    time.sleep(0.05)
    assert made.reads == 0


def test_stop_removes_the_socket_and_returns_the_count(tmp_path: Path):
    made = recordstore.RecordStore(tmp_path, 0, 1, 2)
    made.start()
    _read(made.path, 1, 1, floats=2)
    assert made.stop() == {"reads": 1, "records": 1, "records_in_children": 0}
    assert not made.path.exists()


def test_a_long_folder_gets_a_short_socket_path(tmp_path: Path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    made = recordstore.RecordStore(deep, 0, 1, 2)
    try:
        assert len(str(made.path)) <= socketservice.MAX_SOCKET_PATH
    finally:
        made.stop()
    assert not made.path.parent.exists()


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("{", "not JSON"),
        ('{"cache": {}}', "unknown service 'cache'"),
        ('{"record_store": {"latency_ms": 2, "concurrency": 8}}', "needs exactly"),
        ('{"record_store": {"latency_ms": 2, "concurrency": 0, "floats": 32}}', "concurrency"),
        ('{"record_store": {"latency_ms": 2, "concurrency": 2.5, "floats": 32}}', "an integer"),
        ('{"record_store": {"latency_ms": true, "concurrency": 2, "floats": 32}}', "latency_ms"),
    ],
)
def test_bad_service_descriptions_are_refused(raw: str, problem: str):
    with pytest.raises(recordstore.ServiceConfigError, match=problem):
        recordstore.parse_config(raw)


SERVICES = json.dumps({"record_store": {"latency_ms": 5, "concurrency": 2, "floats": 3}})

# The program patches everything it can reach in its own process, then reads 10 records.
PATCHING_PROGRAM = """
    import os, socket, struct, time
    time.sleep = lambda s: None
    path = os.environ["FAULTLINE_RECORD_STORE"]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    for index in range(10):
        conn.sendall(struct.pack("<qI", 5, index))
        data = b""
        while len(data) < 12:
            data += conn.recv(12 - len(data))
    print("read", len(data))
"""


def test_the_launcher_reports_the_reads_in_its_end_event(launch):
    run = launch(PATCHING_PROGRAM, env={"FAULTLINE_SERVICES": SERVICES})
    assert run.wait(60) == 0
    end = run.events("end")[-1]
    assert end["services"] == {"record_store": {"reads": 10, "records": 10, "records_in_children": 0}}
    assert run.output(0) == ["read 12"]


def test_a_forged_end_line_cannot_add_reads(launch):
    program = """
        print('@@fl {"kind":"end","exit_code":0,"services":{"record_store":{"reads":99999}}}')
    """
    run = launch(program, env={"FAULTLINE_SERVICES": SERVICES})
    assert run.wait(60) == 0
    ends = run.events("end")
    assert len(ends) == 1
    assert ends[0]["services"] == {"record_store": {"reads": 0, "records": 0, "records_in_children": 0}}


# The rank reads records 0-3 itself; a forked worker reads 2-7 and a spawned one 8-9 (then 0 again).
# Only 4-9 were read by workers alone. The rank then writes made-up "read in a worker" notes and prints
# a forged count: neither is where the count comes from.
WORKER_PROGRAM = """
    import multiprocessing as mp, os, socket, struct

    def read(indices):
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(os.environ["FAULTLINE_RECORD_STORE"])
        for index in indices:
            conn.sendall(struct.pack("<qI", 5, index))
            data = b""
            while len(data) < 12:
                data += conn.recv(12 - len(data))
        conn.close()

    if __name__ == "__main__":
        read(range(4))
        for method, indices in (("fork", range(2, 8)), ("spawn", [8, 9, 0])):
            worker = mp.get_context(method).Process(target=read, args=(list(indices),))
            worker.start()
            worker.join()
            assert worker.exitcode == 0, worker.exitcode
        with open(os.path.join(os.environ["FAULTLINE_OUTPUT_DIR"], "read-in-workers.json"), "w") as note:
            note.write('{"pid": 99999, "records": 10}')
        print('@@fl {"kind":"counter","name":"records_in_children","value":10}')
        print("done")
"""


def _store_counts(launch, program: str) -> dict[str, int]:
    """What the store counted for ``program``, run through the real launcher, as its end event says."""
    run = launch(program, env={"FAULTLINE_SERVICES": SERVICES})
    assert run.wait(120) == 0, run.lines
    return run.events("end")[-1]["services"]["record_store"]


def test_records_read_only_by_processes_a_rank_started_are_counted_from_the_kernels_word(launch):
    assert _store_counts(launch, WORKER_PROGRAM) == {"reads": 13, "records": 10, "records_in_children": 6}


# A worker connects and hands its socket to the rank (SCM_RIGHTS); the rank reads every record on it. The
# connection's SO_PEERCRED names the worker, but each request is stamped with the process that wrote it.
HANDOVER_PROGRAM = """
    import multiprocessing as mp, os, socket, struct

    def connect_and_hand_over(channel):
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(os.environ["FAULTLINE_RECORD_STORE"])
        conn.sendall(struct.pack("<qI", 5, 0))
        assert len(conn.recv(12, socket.MSG_WAITALL)) == 12
        socket.send_fds(channel, [b"x"], [conn.fileno()])
        channel.recv(1)

    if __name__ == "__main__":
        mine, theirs = socket.socketpair()
        worker = mp.get_context("fork").Process(target=connect_and_hand_over, args=(theirs,))
        worker.start()
        _, fds, _, _ = socket.recv_fds(mine, 1, 1)
        conn = socket.socket(fileno=fds[0])
        for index in range(1, 10):
            conn.sendall(struct.pack("<qI", 5, index))
            assert len(conn.recv(12, socket.MSG_WAITALL)) == 12
        mine.send(b"x")
        worker.join()
        print("done")
"""


def test_a_socket_a_worker_hands_to_its_rank_reads_in_the_ranks_name(launch):
    # Only record 0 was asked for by the worker's own writes.
    assert _store_counts(launch, HANDOVER_PROGRAM) == {"reads": 10, "records": 10, "records_in_children": 1}


def _stamping_listener(tmp_path: Path) -> tuple[socket.socket, socket.socket]:
    """A listener that asks the kernel to stamp writes (as the services' do), and a client connected to it."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    listener.bind(str(tmp_path / "s.sock"))
    listener.listen(1)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(str(tmp_path / "s.sock"))
    return listener, client


def test_each_byte_is_known_by_the_process_that_wrote_it(tmp_path: Path):
    listener, client = _stamping_listener(tmp_path)
    client.sendall(b"ab")  # before the connection is accepted
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked child
        client.sendall(b"cd")
        os._exit(0)
    os.waitpid(pid, 0)
    client.sendall(b"ef")
    conn, _ = listener.accept()
    reader = socketservice.WriterReader(conn)
    try:
        assert reader.read_exact(3) == (b"abc", frozenset({os.getpid(), pid}))
        assert reader.read_exact(1) == (b"d", frozenset({pid}))
        assert reader.read_exact(2) == (b"ef", frozenset({os.getpid()}))
        client.close()
        assert reader.read_exact(1) is None
    finally:
        conn.close()
        listener.close()


def test_descriptors_a_client_attaches_are_closed_not_kept(tmp_path: Path):
    listener, client = _stamping_listener(tmp_path)
    conn, _ = listener.accept()
    # Without credentials to stamp, the descriptors fit in the reader's ancillary buffer.
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 0)
    before = len(os.listdir("/proc/self/fd"))
    reading, writing = os.pipe()
    socket.send_fds(client, [b"abcd"], [reading, writing])
    os.close(reading)
    os.close(writing)
    try:
        assert socketservice.WriterReader(conn).read_exact(4) == (b"abcd", frozenset({0}))
        assert len(os.listdir("/proc/self/fd")) == before
    finally:
        for s in (client, conn, listener):
            s.close()


def test_a_client_outside_every_rank_is_not_a_worker(tmp_path: Path):
    made = recordstore.RecordStore(tmp_path, 0, 2, 4)
    # The ranks are other processes: this test's process is neither a rank nor one of their children.
    made.set_ranks({999_999: (0, None)})
    made.start()
    try:
        _read(made.path, 3, 1)
    finally:
        counts = made.stop()
    assert counts == {"reads": 1, "records": 1, "records_in_children": 0}


def test_without_services_the_end_event_is_unchanged(launch):
    run = launch("print('hi')")
    assert run.wait(60) == 0
    assert "services" not in run.events("end")[-1]


def test_a_bad_description_stops_the_launcher_with_a_message(tmp_path: Path):
    import subprocess
    import sys

    program = tmp_path / "program"
    program.mkdir()
    (program / "main.py").write_text("print('never')\n")
    done = subprocess.run(
        [sys.executable, "-m", "faultline_harness.launch", "--program-dir", str(program), "--entry", "main.py",
         "--ranks", "1", "--output-dir", str(tmp_path / "out")],
        env=harness_env(FAULTLINE_SERVICES='{"record_store": {}}'), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode != 0
    assert "services.record_store" in done.stderr
    assert "never" not in done.stdout


def test_a_store_that_holds_one_shard_serves_and_counts_only_that_shard(tmp_path: Path):
    """Reads of made-up (seed, index) pairs cost the same latency but must not count as the lab's records."""
    made = recordstore.RecordStore(tmp_path, 0, 4, 4, shard_seed=7, shard_size=3)
    made.start()
    try:
        assert _read(made.path, 7, 2) == pytest.approx(recordstore.record(7, 2, 4))
        for seed, index in [(8, 0), (7, 3), (7, 2**31)]:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(str(made.path))
                conn.sendall(recordstore.REQUEST.pack(seed, index))
                assert conn.recv(16) == b"", f"({seed}, {index}) was answered"
        assert made.counts() == {"reads": 1, "records": 1, "records_in_children": 0}
    finally:
        made.stop()


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"shard_seed": 7}, "optionally all of shard_seed, shard_size"),
        ({"shard_seed": 7, "shard_size": 0}, "services.record_store.shard_size: a number 1–10000000"),
        ({"shard_seed": -1, "shard_size": 5}, "services.record_store.shard_seed: a number 0–"),
    ],
)
def test_shard_settings_come_together_and_in_range(options, problem):
    raw = json.dumps({"record_store": {"latency_ms": 2, "concurrency": 8, "floats": 32, **options}})
    with pytest.raises(recordstore.ServiceConfigError, match=problem):
        recordstore.parse_config(raw)
