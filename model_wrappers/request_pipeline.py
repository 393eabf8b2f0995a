"""The client pipeline of a remote model: requests are built ahead of the network, in a pool.

Building a request (``doc_to_messages``: decode, corrupt; then encode the media for the wire)
is CPU work; sending it is waiting. :func:`pipelined` keeps the two apart so neither stalls
the other: ``build_workers`` threads build requests in order, each finished build goes straight
to one of ``concurrency`` network threads, and at most ``concurrency + lookahead`` requests are
built but not yet answered (the memory bound: a built request holds its encoded frames and
audio). A network thread never builds, so a slow build never leaves a connection idle while
something else is ready, and a slow endpoint never piles up more than ``lookahead`` built
requests. NumPy, Pillow's encoders and zlib release the GIL, so threads overlap on several cores.

Replies come back in request order. An exception in a build or a send stops the run and is
raised (request-level failures are the sender's to turn into failure categories).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


def default_build_workers() -> int:
    return max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def pipelined(
    items: Sequence[Any],
    build: Callable[[Any], Any],
    send: Callable[[Any], Any],
    *,
    concurrency: int,
    build_workers: int | None = None,
    lookahead: int | None = None,
    progress: Callable[[], None] | None = None,
) -> list:
    """``[send(build(item)) for item in items]``, with builds running ahead of the sends."""
    concurrency = max(1, int(concurrency))
    workers = max(1, int(build_workers or default_build_workers()))
    slots = threading.BoundedSemaphore(
        concurrency + max(workers, int(lookahead if lookahead is not None else 2 * concurrency))
    )
    results: list[Future | None] = [None] * len(items)
    stop = threading.Event()

    def send_one(index: int, built: Future):
        try:
            if stop.is_set():
                return None
            return send(built.result())
        except BaseException:
            stop.set()
            raise
        finally:
            slots.release()
            if progress is not None:
                progress()

    with (
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="build") as builders,
        ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="send") as senders,
    ):
        done_building = []
        for index, item in enumerate(items):
            slots.acquire()
            if stop.is_set():
                slots.release()
                break
            built = builders.submit(build, item)
            holder = threading.Event()

            def hand_over(future: Future, index: int = index, holder: threading.Event = holder) -> None:
                results[index] = senders.submit(send_one, index, future)
                holder.set()

            built.add_done_callback(hand_over)
            done_building.append(holder)
        for holder in done_building:
            holder.wait()
        return [future.result() for future in results if future is not None]
