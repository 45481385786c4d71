"""The share member's thread: the sync driver of `ShareMemberMachine`.

Heartbeats must go out while the application is busy between polls (Java's
share consumer heartbeats from its background thread too), and KafkaClient
is not thread-safe, so the member speaks through a `GroupTransport` of its
own (its own KafkaClient, sockets and selector; FindCoordinator to any
broker, ShareGroupHeartbeat to the coordinator, Metadata for topic ids).
The machine is only touched under `lock`; the application's thread reads
the assignment, the epoch and the member id under it. An error no retry
fixes (authorization, an unsupported version) is kept and raised on the
application's thread by `raise_error()`; the member keeps its state.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from fastkc.config import Config
from fastkc.group.machine import DUE_NOW
from fastkc.group.transport import GroupTransport
from fastkc.request import Request, Token
from fastkc.share.member_machine import ShareMemberMachine

log = logging.getLogger(__name__)

#: the longest the thread sleeps without looking at the machine (a bound, not a schedule)
_MAX_SLEEP_S = 1.0


class ShareHeartbeat:
    def __init__(self, member: ShareMemberMachine, config: Config, *,
                 on_change: Callable[[], None] | None = None, transport: Any = None) -> None:
        self.member = member
        self.config = config
        self.lock = threading.Lock()
        self.transport = transport if transport is not None else GroupTransport(config)
        self._on_change = on_change  # the application's wait ends when the assignment changes
        self._wake = threading.Event()
        self._stop = False
        self._error: BaseException | None = None
        self.heartbeats_answered = 0  # ShareGroupHeartbeat answers without error (tests, logs)
        self._thread = threading.Thread(target=self._run, name="fastkc-share-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def kick(self) -> None:
        """Look at the machine now (a subscription change, leaving)."""
        self._wake.set()

    def raise_error(self) -> None:
        error, self._error = self._error, None
        if error is not None:
            raise error

    def stop(self, timeout_s: float) -> None:
        self._stop = True
        self._wake.set()
        self.transport.abort()
        self._thread.join(max(0.0, timeout_s))
        if self._thread.is_alive():
            log.warning("the share heartbeat thread did not end within %.1f s", timeout_s)
        else:
            self.transport.close()

    # --- the thread ----------------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop:
            try:
                self._round()
            except Exception as exc:  # noqa: BLE001 - the thread must live; the application hears it
                log.debug("share heartbeat round failed", exc_info=True)
                self._error = exc
                self._sleep(self.config["retry_backoff_ms"] / 1000.0)

    def _round(self) -> None:
        with self.lock:
            now = time.monotonic()
            requests = self.member.next_requests(now)
            due = self.member.next_deadline()
        if not requests:
            wait = _MAX_SLEEP_S if due is None else (0.0 if due == DUE_NOW else due - now)
            self._sleep(min(_MAX_SLEEP_S, max(0.0, wait)))
            return
        for request in requests:
            answer = self._exchange(request)
            if request.api == "ShareGroupHeartbeat" and isinstance(answer, dict) and not answer["error_code"]:
                self.heartbeats_answered += 1
            with self.lock:
                version = self.member.assignment_version
                try:
                    self.member.on_response(request.token, answer, time.monotonic())
                finally:
                    changed = self.member.assignment_version != version
            if changed and self._on_change is not None:
                self._on_change()

    def _sleep(self, seconds: float) -> None:
        if seconds > 0 and not self._stop:
            self._wake.wait(seconds)
        self._wake.clear()

    def _exchange(self, request: Request[Token]) -> Any:
        """Send one request, wait for its answer: the decoded body, the
        cluster view (Metadata) or the exception that ended it."""
        transport = self.transport
        try:
            if request.api == "FindCoordinator":
                return transport.request_any(request.api, request.body, request.timeout_ms)
            if request.api == "Metadata":
                with self.lock:
                    topics = list(self.member.subscription or ())
                return transport.metadata(topics or None, request.timeout_ms)
            with self.lock:
                coordinator = self.member.coordinator.coordinator
            if coordinator is not None:
                transport.use_coordinator(coordinator)
            return transport.call(request.api, request.body, request.timeout_ms)
        except Exception as exc:  # noqa: BLE001 - the machine decides what an error means
            return exc
