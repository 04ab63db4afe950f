"""Streams the shard from the feature store into a pipe while the job trains.

A producer thread keeps READERS store reads in flight, in record order, and writes every BATCH
records as one frame of float32 values to the pipe; the training loop reads the frames from the
other end.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import store

READERS = 4  # store reads in flight: each one is a network round trip


class Feed:
    def __init__(self, batch: int) -> None:
        self.batch = batch
        self.fd, self._write_fd = os.pipe()  # the training loop reads frames from self.fd
        self._thread = threading.Thread(target=self._produce, name="feed-producer", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _produce(self) -> None:
        frame: list[bytes] = []
        with ThreadPoolExecutor(READERS, thread_name_prefix="store-reader") as readers:
            for record in readers.map(store.fetch, range(store.RECORDS)):
                frame.append(record)
                if len(frame) == self.batch:
                    self._write(b"".join(frame))
                    frame = []
        os.close(self._write_fd)

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._write_fd, view) :]
