"""Sealed grading records: a rank can hand the launcher only its own record, and what the grader finds in
the output folder after the run is what that rank sent, whatever another rank wrote there later."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from faultline_harness import recordstore, sealedrecords

NAMES = ["steps-rank{rank}.pt"]


@pytest.fixture
def keeper(tmp_path: Path, monkeypatch):
    made = sealedrecords.SealedRecords(tmp_path, NAMES)
    made.set_ranks({os.getpid(): (1, None), 999_999: (0, None)})
    made.start()
    monkeypatch.setenv("FAULTLINE_SEALED_RECORDS", str(made.path))
    yield made
    made.stop()


def test_a_rank_seals_its_own_record_and_it_is_written_at_the_end(keeper, tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    assert sealedrecords.seal("steps-rank1.pt", b"mine") is True
    (out / "steps-rank1.pt").write_bytes(b"rewritten by someone else")
    keeper.restore(out)
    assert (out / "steps-rank1.pt").read_bytes() == b"mine"


def test_another_ranks_name_is_refused(keeper, tmp_path: Path):
    # This process is rank 1: it cannot seal rank 0's record, nor a name the lab did not declare.
    assert sealedrecords.seal("steps-rank0.pt", b"forged") is False
    assert sealedrecords.seal("model.pt", b"forged") is False
    assert keeper.counts()["refused"] == 2


def test_a_connection_handed_to_another_ranks_process_seals_nothing(keeper, tmp_path: Path):
    # Rank 0's process connects and hands the socket to this process (rank 1), which writes rank 0's record on
    # it: SO_PEERCRED still names rank 0, but the kernel stamps every write with the process that made it.
    parent_end, child_end = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the forked child
        code = 1
        try:
            parent_end.close()
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(str(keeper.path))
            socket.send_fds(child_end, [b"x"], [conn.fileno()])
            child_end.recv(1)  # keep the connection's first owner alive until the parent is done
            code = 0
        finally:
            os._exit(code)
    child_end.close()
    try:
        keeper.set_ranks({pid: (0, None), os.getpid(): (1, None)})
        _, fds, _, _ = socket.recv_fds(parent_end, 1, 1)
        with socket.socket(fileno=fds[0]) as handed:
            name = b"steps-rank0.pt"
            handed.sendall(sealedrecords.REQUEST.pack(len(name), 6) + name + b"forged")
            assert handed.recv(1) == bytes([sealedrecords.REFUSED])
    finally:
        parent_end.send(b"x")
        os.waitpid(pid, 0)
    out = tmp_path / "out"
    out.mkdir()
    keeper.restore(out)
    assert not (out / "steps-rank0.pt").exists()


def test_an_unsealed_declared_file_is_removed(keeper, tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "steps-rank0.pt").write_bytes(b"written by rank 1 for rank 0")
    (out / "model.pt").write_bytes(b"not declared: left alone")
    keeper.restore(out)
    assert not (out / "steps-rank0.pt").exists()
    assert (out / "model.pt").exists()


def test_a_link_or_folder_under_a_declared_name_is_replaced(keeper, tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep")
    (out / "steps-rank1.pt").symlink_to(outside)
    (out / "steps-rank0.pt").mkdir()
    assert sealedrecords.seal("steps-rank1.pt", b"mine")
    keeper.restore(out)
    assert not (out / "steps-rank1.pt").is_symlink()
    assert (out / "steps-rank1.pt").read_bytes() == b"mine"
    assert outside.read_bytes() == b"keep"
    assert not (out / "steps-rank0.pt").exists()


def test_nothing_is_sealed_after_restore(keeper, tmp_path: Path):
    keeper.restore(tmp_path)
    assert sealedrecords.seal("steps-rank1.pt", b"late") is False


def test_without_a_keeper_seal_says_so(monkeypatch):
    monkeypatch.delenv("FAULTLINE_SEALED_RECORDS", raising=False)
    assert sealedrecords.seal("steps-rank0.pt", b"x") is False


@pytest.mark.parametrize(
    "files",
    [[], ["steps.pt"], ["../steps-rank{rank}.pt"], ["a/steps-rank{rank}.pt"], ["{rank}-{rank}"], "steps-rank{rank}.pt"],
)
def test_bad_record_names_are_refused(files):
    with pytest.raises(recordstore.ServiceConfigError, match="sealed_records.files"):
        recordstore.parse_config(json.dumps({"sealed_records": {"files": files}}))


# Rank 1 seals its record and leaves; rank 0 then rewrites rank 1's file and tries to seal rank 1's name.
TWO_RANKS = """
    import os, time
    from faultline_harness import sealedrecords
    rank = int(os.environ["RANK"])
    out = os.environ["FAULTLINE_OUTPUT_DIR"]
    if rank == 1:
        print("sealed", sealedrecords.seal("steps-rank1.pt", b"rank 1's own"))
    else:
        while not os.path.exists(os.path.join(out, "rank1-done")):
            time.sleep(0.05)
        time.sleep(0.5)
        with open(os.path.join(out, "steps-rank1.pt"), "wb") as f:
            f.write(b"forged by rank 0")
        print("forge sealed", sealedrecords.seal("steps-rank1.pt", b"forged by rank 0"))
        print("own sealed", sealedrecords.seal("steps-rank0.pt", b"rank 0's own"))
    if rank == 1:
        open(os.path.join(out, "rank1-done"), "w").close()
"""


def test_the_launcher_writes_each_ranks_own_record_after_the_job(launch):
    services = json.dumps({"sealed_records": {"files": NAMES}})
    run = launch(TWO_RANKS, ranks=2, env={"FAULTLINE_SERVICES": services})
    assert run.wait(60) == 0
    assert run.output(1) == ["sealed True"]
    assert run.output(0) == ["forge sealed False", "own sealed True"]
    assert (run.out_dir / "steps-rank1.pt").read_bytes() == b"rank 1's own"
    assert (run.out_dir / "steps-rank0.pt").read_bytes() == b"rank 0's own"
    counts = run.events("end")[-1]["services"]["sealed_records"]
    assert counts == {"sealed": 2, "refused": 1, "restored": 2, "removed": 0}


def test_seal_or_write_seals_when_the_run_has_a_keeper(keeper, tmp_path: Path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("FAULTLINE_OUTPUT_DIR", str(out))
    sealedrecords.seal_or_write("steps-rank1.pt", b"mine")
    assert not (out / "steps-rank1.pt").exists()  # held by the launcher until the job is over
    keeper.restore(out)
    assert (out / "steps-rank1.pt").read_bytes() == b"mine"


def test_seal_or_write_writes_directly_outside_the_sandbox(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("FAULTLINE_SEALED_RECORDS", raising=False)
    monkeypatch.setenv("FAULTLINE_OUTPUT_DIR", str(tmp_path))
    sealedrecords.seal_or_write("steps-rank0.pt", b"record")
    assert (tmp_path / "steps-rank0.pt").read_bytes() == b"record"
