"""A simulated remote record store that lives in the launcher, outside every rank.

A lab about slow input pipelines needs a store with real round-trip latency. Simulated inside the
candidate's process (a ``time.sleep`` in the client), the latency is the candidate's to patch away,
and nothing outside would notice. Here the store is a thread of the launcher (PID 1 of the container,
not dumpable, see ``guard.py``): it answers on a Unix socket, waits ``latency_ms`` per read, serves at
most ``concurrency`` reads at once, and counts the reads it completed (``reads``) and the different
records among them (``records``). The counts leave through the launcher's ``end`` event only, so no rank
can raise them without paying the latency for each read, and a program that builds the records itself
(the generator is no secret) leaves them short.

With ``shard_seed`` and ``shard_size`` the store holds that one shard and nothing else: a request for
another shard's seed or an index past the end closes the connection, so ``records`` counts records of the
lab's own shard only, and reads of made-up (seed, index) pairs cannot stand in for them.

The store also knows which process asked, from the kernel, never from the request: each request is
stamped with the pid of the process that wrote it (``SO_PASSCRED``, see ``socketservice.WriterReader``), so a
socket a worker connected and handed to its parent asks in the parent's name. ``records_in_children`` counts
the different records served only to processes a rank started (its DataLoader or multiprocessing workers),
never to a rank's own process. A lab that asks for work to stay in worker processes reads it here instead
of from notes the job writes itself.

Wire format, little-endian: a request is ``<qI`` (shard seed, record index); the answer is ``floats``
float32 values. Anything else closes the connection.
"""

from __future__ import annotations

import json
import os
import random
import socket
import struct
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import checkpointstore, peers, rankkeys, sealedrecords
from .protocol import ENV_CHECKPOINT_STORE, ENV_RANK_KEYS, ENV_RECORD_STORE, ENV_SEALED_RECORDS, ENV_SERVICES
from .socketservice import RankedService, WriterReader, recv_exact

REQUEST = struct.Struct("<qI")
SOCKET_NAME = "record-store.sock"
LIMITS = {
    "latency_ms": (0.0, 1000.0), "concurrency": (1, 64), "floats": (1, 4096),
    "shard_seed": (0, 2**62), "shard_size": (1, 10_000_000),
}  # fmt: skip
# Settings a service may leave out, each group all or none: a store without them serves any shard.
OPTIONAL = {"record_store": ("shard_seed", "shard_size"), "checkpoint_store": checkpointstore.OPTIONAL}
# Every service the launcher can run, with the settings each takes (all required) and their ranges.
SERVICE_LIMITS = {
    "record_store": LIMITS, "checkpoint_store": checkpointstore.LIMITS,
    "sealed_records": {"files": None}, "rank_keys": {"file": None},
}  # fmt: skip


class ServiceConfigError(ValueError):
    """The platform handed the launcher a service description it cannot run."""


def record(seed: int, index: int, floats: int) -> list[float]:
    """Record ``index`` of shard ``seed``: ``floats`` standard normal values, the same in every process.

    Python's own generator keeps the launcher free of numpy and torch; a lab's grader rebuilds the same
    values with this formula."""
    rng = random.Random(seed * 100_003 + index)
    return [rng.gauss(0.0, 1.0) for _ in range(floats)]


def parse_config(raw: str) -> dict[str, dict[str, Any]]:
    """``FAULTLINE_SERVICES`` as JSON, e.g. ``{"record_store": {"latency_ms": 2, "concurrency": 8, "floats": 32},
    "checkpoint_store": {"mb_per_s": 1.0}}``."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ServiceConfigError(f"services: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ServiceConfigError("services: must be a JSON object")
    unknown = sorted(set(data) - set(SERVICE_LIMITS))
    if unknown:
        raise ServiceConfigError(f"services: unknown service {unknown[0]!r} (known: {', '.join(SERVICE_LIMITS)})")
    config = {}
    for name, options in data.items():
        limits = SERVICE_LIMITS[name]
        optional = OPTIONAL.get(name, ())
        required = [key for key in limits if key not in optional]
        given = set(options) if isinstance(options, dict) else set()
        if (
            not isinstance(options, dict)
            or not set(required) <= given
            or not given <= set(limits)
            or given & set(optional) not in (set(), set(optional))
        ):
            extra = f" (and optionally all of {', '.join(optional)})" if optional else ""
            raise ServiceConfigError(f"services.{name}: needs exactly {', '.join(required)}{extra}")
        if name == "sealed_records":
            problem = sealedrecords.check_files(options["files"])
            if problem:
                raise ServiceConfigError(f"services.{name}.files: {problem}")
            config[name] = dict(options)
            continue
        if name == "rank_keys":
            problem = sealedrecords.check_files([options["file"]])
            if problem:
                raise ServiceConfigError(f"services.{name}.file: {problem}")
            config[name] = dict(options)
            continue
        for key, (low, high) in limits.items():
            if key not in options:
                continue
            value = options[key]
            if not isinstance(value, int | float) or isinstance(value, bool) or not low <= value <= high:
                raise ServiceConfigError(f"services.{name}.{key}: a number {low}–{high}, got {value!r}")
            if isinstance(low, int) and not isinstance(value, int):
                raise ServiceConfigError(f"services.{name}.{key}: an integer, got {value!r}")
        if options.get("save_s_min", 0) > options.get("save_s_max", 60):
            raise ServiceConfigError(f"services.{name}.save_s_min: at most save_s_max, got {options['save_s_min']!r}")
        config[name] = dict(options)
    return config


class RecordStore(RankedService):
    """Bind in the constructor (no thread yet: ranks may be started with ``preexec_fn`` or ``fork``
    right after); ``start`` begins serving, and connections made before that wait in the backlog."""

    socket_name = SOCKET_NAME
    thread_name = "fl-record-store"

    def __init__(
        self, folder: Path, latency_ms: float, concurrency: int, floats: int,
        shard_seed: int | None = None, shard_size: int | None = None,
    ) -> None:  # fmt: skip
        super().__init__(folder)
        self.shard = (shard_seed, shard_size) if shard_seed is not None and shard_size is not None else None
        self.latency_s = latency_ms / 1000.0
        self.floats = floats
        self.answer = struct.Struct(f"<{floats}f")
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._reads = 0
        self._served: set[tuple[int, int]] = set()
        self._by_ranks: set[tuple[int, int]] = set()  # served to a rank's own process
        self._by_children: set[tuple[int, int]] = set()  # served to a process a rank started

    @property
    def reads(self) -> int:
        with self._lock:
            return self._reads

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {
                "reads": self._reads,
                "records": len(self._served),
                "records_in_children": len(self._by_children - self._by_ranks),
            }

    def _asker(self, writers: frozenset[int], seen: dict[int, str | None]) -> set[tuple[int, int]] | None:
        """Where a request's reads are noted: a rank's own process if any of its writers was one, processes a
        rank started if all of them were, else nowhere. ``seen`` remembers each pid's answer for the
        connection, so the /proc walk is made once per writer, not once per request."""
        kinds = set()
        for pid in writers:
            if pid not in seen:
                if peers.rank_of(pid, self._rank_pids) is None:
                    seen[pid] = None
                else:
                    # rank_of matched a rank's pid together with its start time, so the pid is that rank's process.
                    seen[pid] = "rank" if pid in self._rank_pids else "child"
            kinds.add(seen[pid])
        if "rank" in kinds:
            return self._by_ranks
        return self._by_children if kinds == {"child"} else None

    def serve(self, conn: socket.socket) -> None:
        reader = WriterReader(conn)
        seen: dict[int, str | None] = {}
        while not self._closed.is_set():
            read = reader.read_exact(REQUEST.size)
            if read is None:
                return
            request, writers = read
            asker = self._asker(writers, seen)
            seed, index = REQUEST.unpack(request)
            if self.shard is not None and (seed != self.shard[0] or index >= self.shard[1]):
                return  # not a record of this store's shard: nothing served, nothing counted
            with self._slots:
                # The round trip: held inside the slot, so `concurrency` reads overlap at most.
                time.sleep(self.latency_s)
            payload = self.answer.pack(*record(seed, index, self.floats))
            if self._closed.is_set():
                return
            # Counted before the answer leaves, so a client that has its record sees it counted.
            with self._lock:
                self._reads += 1
                self._served.add((seed, index))
                if asker is not None:
                    asker.add((seed, index))
            try:
                conn.sendall(payload)
            except OSError:
                with self._lock:
                    self._reads -= 1
                return


class StoreClient:
    """Rank side, for a graded run's hidden files: reads records from the run's record store.

    Each process opens its own connection on first use (a forked DataLoader worker must not share its
    parent's socket: the answers would interleave), so the store sees, from the kernel, which process
    asked for every record."""

    BATCH = 256  # requests sent before their answers are read: well inside a Unix socket's buffer

    def __init__(self, floats: int) -> None:
        self.answer = struct.Struct(f"<{floats}f")
        self._conn: tuple[int, socket.socket] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"answer_format": self.answer.format}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.answer = struct.Struct(state["answer_format"])
        self._conn = None

    def _connection(self) -> socket.socket:
        pid = os.getpid()
        if self._conn is None or self._conn[0] != pid:
            address = os.environ.get(ENV_RECORD_STORE)
            if not address:
                raise RuntimeError("the record store is reachable only inside a lab run")
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(address)
            self._conn = (pid, conn)
        return self._conn[1]

    def read(self, seed: int, indices: list[int]) -> list[tuple[float, ...]]:
        """Records ``indices`` of shard ``seed``, in that order."""
        conn = self._connection()
        records: list[tuple[float, ...]] = []
        for start in range(0, len(indices), self.BATCH):
            chunk = indices[start : start + self.BATCH]
            conn.sendall(b"".join(REQUEST.pack(seed, index) for index in chunk))
            for _ in chunk:
                data = recv_exact(conn, self.answer.size)
                if data is None:
                    raise ConnectionError("the record store closed the connection (a record outside its shard?)")
                records.append(self.answer.unpack(data))
        return records


Service = RecordStore | checkpointstore.CheckpointStore | sealedrecords.SealedRecords | rankkeys.RankKeys


def start_services(env: Mapping[str, str], folder: Path) -> dict[str, Service]:
    """The services the platform asked for (``FAULTLINE_SERVICES``), bound but not yet serving."""
    raw = env.get(ENV_SERVICES)
    if not raw:
        return {}
    config = parse_config(raw)
    services: dict[str, Service] = {}
    if "record_store" in config:
        options = config["record_store"]
        services["record_store"] = RecordStore(
            folder, float(options["latency_ms"]), int(options["concurrency"]), int(options["floats"]),
            options.get("shard_seed"), options.get("shard_size"),
        )  # fmt: skip
    if "checkpoint_store" in config:
        options = config["checkpoint_store"]
        span = (float(options["save_s_min"]), float(options["save_s_max"])) if "save_s_min" in options else None
        services["checkpoint_store"] = checkpointstore.CheckpointStore(folder, float(options["mb_per_s"]), span)
    if "sealed_records" in config:
        services["sealed_records"] = sealedrecords.SealedRecords(folder, list(config["sealed_records"]["files"]))
    if "rank_keys" in config:
        services["rank_keys"] = rankkeys.RankKeys(folder, str(config["rank_keys"]["file"]))
    return services


def socket_env(services: Mapping[str, Service]) -> dict[str, str]:
    """What the ranks need to reach the services: each store's socket path."""
    env = {}
    store = services.get("record_store")
    if store is not None:
        env[ENV_RECORD_STORE] = str(store.path)
    checkpoints = services.get("checkpoint_store")
    if checkpoints is not None:
        env[ENV_CHECKPOINT_STORE] = str(checkpoints.path)
    sealed = services.get("sealed_records")
    if sealed is not None:
        env[ENV_SEALED_RECORDS] = str(sealed.path)
    keys = services.get("rank_keys")
    if keys is not None:
        env[ENV_RANK_KEYS] = str(keys.path)
    return env
