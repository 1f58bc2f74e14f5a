"""The fsyncs of the pushes logged on the event loop, made by one thread for many.

A small push is decoded and logged on the event loop (collector.app says when); its
answer waits for the log's fsync, which this thread makes for every push logged since
its last one, then settles their futures with one wake-up of the loop. A thread per
push (the executor) cost two hand-offs of Python's interpreter lock each way and a
wake-up of the loop per push: side by side, fleet pushes took ~10% more collector
CPU that way (bench/ingest_clients.py --together).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading

from ..store.fleet.wal import Segment

Waiting = tuple[Segment, int, asyncio.Future[None]]


class Syncer:
    def __init__(self) -> None:
        # SimpleQueue: its put (C) wakes the thread; a Condition's notify was ~3% of a
        # fleet push's event-loop time, in Python
        self._queue: queue.SimpleQueue[Waiting | None] = queue.SimpleQueue()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="log-sync", daemon=True)
        self._thread.start()

    def synced(self, segment: Segment, offset: int) -> asyncio.Future[None]:
        """A future of the running loop, done once `segment` is durable up to `offset`
        (with the fsync's error, if it failed)."""
        if self._stopping:
            raise RuntimeError("the collector is stopping")
        future = asyncio.get_running_loop().create_future()
        self._queue.put((segment, offset, future))
        return future

    def close(self) -> None:
        """Makes the fsyncs asked for so far, then stops."""
        self._stopping = True
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        stop = False
        while not stop:
            batch: list[Waiting] = []
            item = self._queue.get()
            while True:  # and every push logged meanwhile
                if item is None:
                    stop = True
                else:
                    batch.append(item)
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch:
                self._sync(batch)

    @staticmethod
    def _sync(batch: list[Waiting]) -> None:
        error: BaseException | None = None
        ends: dict[Segment, int] = {}
        for segment, offset, _ in batch:
            ends[segment] = max(offset, ends.get(segment, 0))
        try:
            for segment, offset in ends.items():
                segment.sync(offset)
        except BaseException as e:  # noqa: BLE001 -- every waiting push is answered with it
            error = e
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
        for _, _, future in batch:
            by_loop.setdefault(future.get_loop(), []).append(future)
        for loop, futures in by_loop.items():
            # a closed loop (RuntimeError): nobody waits for these answers
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, futures, error)


def _settle(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for future in futures:
        if future.done():  # its request was cancelled
            continue
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)
