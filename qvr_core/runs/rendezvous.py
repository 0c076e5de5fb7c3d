"""The processes of one run meeting before it starts, and keeping track of each other.

torch's own rendezvous (`init_process_group("env://")`) waits for the whole group inside
C++: 30 minutes by default, deaf to Ctrl-C and SIGTERM, and with nothing to say about
which process is missing or why. So qvr meets over the same kind of `TCPStore` (the
torchrun agent's, when torchrun says it serves one; else one that rank 0 serves at
`MASTER_ADDR:MASTER_PORT`) but waits in Python, polling: a signal stops a wait at once
(`Interrupted`, one line), a group that does not form within the connect timeout is one
line naming the ranks missing, and each rank writes under its own keys that it arrived,
what it runs (`runs.agreement`: every rank checks that all run the same), that it failed
and why (so the others stop at once and say which rank stopped), that it left, and a
heartbeat (a thread), by which a rank that stopped answering is told from one that is
only slower. Only then does `runs.distributed` make the process group, over this store,
with a bounded timeout for its collectives.

Timeouts, in seconds, from the environment: `QVR_CONNECT_TIMEOUT` (`CONNECT_TIMEOUT`)
and `QVR_COLLECTIVE_TIMEOUT` (`COLLECTIVE_TIMEOUT`).
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from qvr_core.inference.errors import InferenceError
from qvr_core.plan.run_arguments import TORCHRUN_VARIABLE
from qvr_core.runtime.errors import first_line

if TYPE_CHECKING:  # torch's C module: imported where used, torch may lack distributed
    from torch._C._distributed_c10d import Store

CONNECT_TIMEOUT_VARIABLE = "QVR_CONNECT_TIMEOUT"
COLLECTIVE_TIMEOUT_VARIABLE = "QVR_COLLECTIVE_TIMEOUT"
#: How long a process waits for the others to arrive, and how long a process that
#: arrived may go without a heartbeat before the others stop. torchrun starts a node's
#: processes together, once its own rendezvous has gathered the nodes, so the others
#: arrive within the seconds it takes to start Python and import torch; a minute leaves
#: room for a slow shared file system and a loaded node, and a group that will never form
#: (a process that failed to start, variables left over in a shell) is one line after a
#: minute, not gloo's 30.
CONNECT_TIMEOUT = 60.0
#: How long one collective (an all-reduce, the gathering of the chains) may wait for the
#: others. The processes call them in lock step (one all-reduce per SVI step), so a
#: collective waits for the slowest process's step, and a process that ended closes its
#: sockets, which fails the collective at once: this bounds only a process that hangs
#: (stopped, swapped out). Five minutes is far over any step of a run qvr admits; a NUTS
#: run waits for the others' chains before it gathers (`Group.wait_for_all`), where the
#: heartbeats, not this, tell a slow process from a gone one.
COLLECTIVE_TIMEOUT = 300.0
#: Seconds between heartbeats, and between two looks at the others' heartbeats.
BEAT = 1.0
#: The most seconds one call of the heartbeat's own connection may take (connecting, or
#: one beat). The process waits for its heartbeat to end before Python finalizes (a
#: thread still inside torch's C++ then aborts the process), so this bounds how long a
#: process that is ending can wait on a store that stopped answering; a beat that takes
#: longer is missed, and the next one connects anew.
BEAT_CALL_TIMEOUT = 5.0
#: Seconds between two looks at the store while waiting: a signal is handled at once
#: (a sleep is interrupted), this only paces the polling.
POLL = 0.05


class Interrupted(InferenceError):
    """A signal (or the caller's stop) ended a wait for the other processes; `signum` is
    the signal's number, None when the caller asked to stop."""

    def __init__(self, message: str, signum: int | None) -> None:
        super().__init__(message)
        self.signum = signum


class _Signalled(KeyboardInterrupt):  # raised by a handler, caught below; else an abort
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A timeout from the environment variable `name`, in seconds (`default` without it)."""
    text = env.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 86_400:
        raise InferenceError(f"{name} must be a number of seconds from 0 to 86400, not {text!r}")
    return value


@dataclass(frozen=True)
class Launch:
    """Where this process is in its run's world and where the world meets, as read from
    torchrun's variables."""

    rank: int
    size: int
    host: str
    port: int
    agent_store: bool  # torchrun's agent serves the store (else rank 0 does)
    prefix: str  # the keys of this meeting, apart from earlier ones in the same store
    connect_timeout: float
    collective_timeout: float

    @classmethod
    def read(cls, env: Mapping[str, str], meeting: int) -> Launch:
        """From `env` (`meeting`: how many this process had before); InferenceError for a
        variable that is missing or not a number."""

        def number(name: str, low: int, high: int) -> int:
            text = env.get(name)
            if text is None:
                raise InferenceError(
                    f"{name} is not set: it says where this process meets the others"
                )
            try:
                value = int(text)
            except ValueError:
                value = low - 1
            if not low <= value <= high:
                raise InferenceError(
                    f"{name} must be a whole number from {low} to {high}, not {text!r}"
                )
            return value

        size = number("WORLD_SIZE", 1, 1 << 20)
        rank = number("RANK", 0, size - 1)
        port = number("MASTER_PORT", 1, 65_535)
        host = env.get("MASTER_ADDR") or "127.0.0.1"
        restart = env.get("TORCHELASTIC_RESTART_COUNT", "0")
        return cls(
            rank,
            size,
            host,
            port,
            env.get("TORCHELASTIC_USE_AGENT_STORE") == "True" and TORCHRUN_VARIABLE in env,
            f"qvr/{env.get(TORCHRUN_VARIABLE, '')}/{restart}/{meeting}",
            seconds(env, CONNECT_TIMEOUT_VARIABLE, CONNECT_TIMEOUT),
            seconds(env, COLLECTIVE_TIMEOUT_VARIABLE, COLLECTIVE_TIMEOUT),
        )

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"


_meetings = 0  # how many meetings this process had: each gets its own keys


def _interrupted(e: _Signalled, doing: str) -> Interrupted:
    name = "Ctrl-C" if e.signum == signal.SIGINT else signal.Signals(e.signum).name
    return Interrupted(f"stopped by {name} while {doing}", e.signum)


@dataclass
class _Caught:
    """The signals a `_signals_raise` block received; once `quiet`, a signal is only
    recorded here (the block is already ending, and must end whole)."""

    signals: list[int] = field(default_factory=list)
    quiet: bool = False


@contextlib.contextmanager
def _signals_raise() -> Iterator[_Caught]:
    """SIGINT and SIGTERM raise `_Signalled` for the block (in the main thread; a signal
    handler installed from C is left alone), and are recorded in what it yields: a signal
    that arrives while the main thread is inside a store's call breaks that call first
    (torch raises its own error), and the record says the error was the signal."""
    caught = _Caught()
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return

    def handle(signum: int, frame: Any) -> None:
        caught.signals.append(signum)
        if not caught.quiet:
            raise _Signalled(signum)

    previous: dict[signal.Signals, Any] = {}
    for stopping in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(stopping) is not None:
            previous[stopping] = signal.signal(stopping, handle)
    try:
        yield caught
    finally:
        for stopping, handler in previous.items():
            signal.signal(stopping, handler)


class Group:
    """This process among the others of its run, over their store: from `meet` (all have
    arrived) to `close`."""

    def __init__(
        self, launch: Launch, base: Store, served: bool, should_stop: Callable[[], bool]
    ) -> None:
        self.launch = launch
        self.rank, self.size = launch.rank, launch.size
        self._base = base  # a store this process serves lives as long as this object
        self._served = served
        from torch._C._distributed_c10d import PrefixStore

        self.store = PrefixStore(launch.prefix, base)
        self._should_stop = should_stop
        self._seen: dict[int, tuple[bytes, float]] = {}  # rank -> (its last beat, seen at)
        self._looked = 0.0
        self._beating = threading.Event()
        self._beat: threading.Thread | None = None
        self._waits = 0

    # ------------------------------------------------------------------ meeting

    @classmethod
    def meet(cls, env: Mapping[str, str], should_stop: Callable[[], bool]) -> Group:
        """Connect to the run's store and wait for every rank to arrive; an InferenceError
        naming who is missing after the connect timeout, `Interrupted` on a signal."""
        global _meetings
        launch = Launch.read(env, _meetings)
        _meetings += 1
        deadline = time.monotonic() + launch.connect_timeout
        doing = f"waiting for the other processes of the run at {launch.where}"
        with _signals_raise() as caught:
            try:
                base, served = _store(launch, deadline, should_stop)
                group = cls(launch, base, served, should_stop)
            except _Signalled as e:
                raise _interrupted(e, doing) from None
            try:
                group._arrive()
                group.wait_for_all("arrived", deadline=deadline, start=True)
            except BaseException as e:  # the others learn why; nothing of it outlives this
                caught.quiet = True  # (no call before it: a signal pending runs at a call)
                signum = e.signum if isinstance(e, _Signalled) else None
                if signum is None and caught.signals:  # torch's error of a call it broke
                    signum = caught.signals[0]
                error = e if signum is None else _interrupted(_Signalled(signum), doing)
                group.fail(str(error) or type(error).__name__)
                group.close(linger=not isinstance(error, Interrupted | KeyboardInterrupt))
                if error is e:
                    raise
                raise error from None
        return group

    def _arrive(self) -> None:
        # not a daemon: Python waits for it before finalizing, which a thread inside a
        # store's C++ call would abort ("terminate called without an active exception")
        self._beat = threading.Thread(target=self._heartbeat, name="qvr-heartbeat")
        self.store.set(f"beat/{self.rank}", "0")
        self._beat.start()
        self._post("arrived", "")

    def _heartbeat(self) -> None:
        """In a thread, over a connection of its own: a beat every `BEAT` seconds until
        `close`, or until the main thread has ended (the process is exiting without
        `close`). A beat that fails (the store gone, or slower than `BEAT_CALL_TIMEOUT`)
        is missed, and the next connects anew: the others learn of a store that is gone
        from the missing beats."""
        from torch._C._distributed_c10d import PrefixStore, TCPStore

        timeout = timedelta(seconds=min(self.launch.connect_timeout, BEAT_CALL_TIMEOUT))
        own: Store | None = None
        beat = 0
        while not self._beating.wait(BEAT) and threading.main_thread().is_alive():
            try:
                if own is None:
                    own = PrefixStore(
                        self.launch.prefix,
                        TCPStore(
                            self.launch.host, self.launch.port, is_master=False, timeout=timeout
                        ),
                    )
                beat += 1
                own.set(f"beat/{self.rank}", str(beat))
            except Exception:  # torch's DistError, mostly: missed; reconnect for the next
                own = None

    def _post(self, kind: str, value: str) -> None:
        self.store.set(f"{kind}/{self.rank}", value)
        self.store.add(f"{kind}#", 1)

    # ------------------------------------------------------------------ waiting

    def wait_for_all(
        self, kind: str, *, deadline: float | None = None, start: bool = False
    ) -> list[str]:
        """Wait until every rank posted `kind`; their values, by rank. InferenceError when
        a rank failed, stopped beating or (with `deadline`) did not post in time. `start`:
        a wait before the run, which the caller's stop ends too."""
        try:
            while self.store.add(f"{kind}#", 0) < self.size:
                if start and self._should_stop():
                    raise Interrupted(
                        f"stopped while waiting for the other processes of the run at "
                        f"{self.launch.where}",
                        None,
                    )
                try:
                    self.check_others(beats=kind != "arrived")
                except InferenceError:
                    # a rank posts before it can fail at what all posted (the differing
                    # terms): when the count is complete now, that rank failed after
                    # this one had read it short, and this rank reaches its own verdict
                    if self.store.add(f"{kind}#", 0) >= self.size:
                        break
                    raise
                if deadline is not None and time.monotonic() > deadline:
                    missing = [r for r in range(self.size) if not self._has(f"{kind}/{r}")]
                    raise InferenceError(self._missing(missing, kind))
                time.sleep(POLL)
            keys = [f"{kind}/{r}" for r in range(self.size)]
            return [v.decode() for v in self.store.multi_get(keys)]
        except RuntimeError as e:  # torch's DistError: the store's server ended
            raise InferenceError(
                f"the run's meeting at {self.launch.where} closed: rank 0 (or torchrun), "
                f"which served it, has ended ({_torch_line(e)})"
            ) from None

    def _missing(self, ranks: list[int], kind: str) -> str:
        who = _ranks(ranks)
        waited = f"{self.launch.connect_timeout:g} s"
        if kind == "arrived":
            return (
                f"the run's processes did not all meet at {self.launch.where}: {who} of "
                f"{self.size} did not arrive within {waited} (start every process, as "
                f"torchrun does; {_setting(CONNECT_TIMEOUT_VARIABLE)})"
            )
        return f"{who} of the run did not answer within {waited}"

    def _has(self, key: str) -> bool:
        return bool(self.store.check([key]))

    def check_others(self, beats: bool = True) -> None:
        """InferenceError when another rank failed (its reason) or, with `beats`, went
        without a heartbeat for the connect timeout."""
        failed = self.failure()
        if failed is not None:
            rank, why = failed
            raise InferenceError(f"rank {rank} of the run stopped: {why}")
        now = time.monotonic()
        if not beats or now - self._looked < BEAT:
            return
        self._looked = now
        others = [r for r in range(self.size) if r != self.rank]
        silent = self._silent(others, self.launch.connect_timeout)
        if silent:
            raise InferenceError(
                f"{_ranks(silent)} of the run stopped answering (no heartbeat for "
                f"{self.launch.connect_timeout:g} s; {_setting(CONNECT_TIMEOUT_VARIABLE)})"
            )

    def _silent(self, ranks: list[int], longer_than: float) -> list[int]:
        """Of `ranks` (each has beaten once), those whose heartbeat has not changed for
        `longer_than` seconds, as seen from here."""
        now = time.monotonic()
        values = self.store.multi_get([f"beat/{r}" for r in ranks]) if ranks else []
        silent = []
        for r, value in zip(ranks, values, strict=True):
            last = self._seen.get(r)
            if last is None or last[0] != value:
                self._seen[r] = (value, now)
            elif now - last[1] > longer_than:
                silent.append(r)
        return silent

    def failure(self) -> tuple[int, str] | None:
        """The rank that failed and its one line, if another rank did."""
        if not self._has("failed"):
            return None
        rank = int(self.store.get("failed"))
        return (rank, self.store.get(f"failed/{rank}").decode()) if rank != self.rank else None

    def left_early(self) -> list[int]:
        """The other ranks that have left the run."""
        return [r for r in range(self.size) if r != self.rank and self._has(f"left/{r}")]

    # ------------------------------------------------------------------ what all run

    def agree(
        self, terms: dict[str, Any], compare: Callable[[list[dict[str, Any]]], str | None]
    ) -> None:
        """Post this rank's `terms` (`runs.agreement`), wait for every rank's and stop, on
        every rank with the same line, where `compare` finds that they differ."""
        self._post("terms", json.dumps(terms, sort_keys=True))
        with _signals_raise():
            try:
                posted = self.wait_for_all("terms", start=True)
            except _Signalled as e:
                raise _interrupted(e, "waiting for the other processes of the run") from None
        differ = compare([json.loads(p) for p in posted])
        if differ is not None:
            raise InferenceError(f"the processes of the run differ: {differ}")

    def wait_for_others(self) -> None:
        """Before a gathering: wait (as long as the others beat) until every rank is at it,
        so the collective itself never waits long (`COLLECTIVE_TIMEOUT`)."""
        self._waits += 1
        self._post(f"at{self._waits}", "")
        self.wait_for_all(f"at{self._waits}")

    # ------------------------------------------------------------------ leaving

    def fail(self, why: str) -> None:
        """Tell the others this rank stopped, and why (one line); never raises."""
        with contextlib.suppress(Exception):
            self.store.set(f"failed/{self.rank}", why)
            self.store.set("failed", str(self.rank))

    def close(self, linger: bool = True) -> None:
        """Stop the heartbeat and say this rank left; the rank serving the store waits,
        with `linger` (at most the connect timeout), for the others to leave before it
        ends it: to read why it stopped, they need the store."""
        self._beating.set()
        if self._beat is not None:
            # a signal that came between the thread's making and its start left none to
            # join (RuntimeError); one that started sees `_beating` and ends by itself
            with contextlib.suppress(RuntimeError):
                self._beat.join(timeout=BEAT_CALL_TIMEOUT + BEAT)
        with contextlib.suppress(Exception):
            self._post("left", "")
            if not (self._served and linger):
                return
            deadline = time.monotonic() + self.launch.connect_timeout
            others = [r for r in range(self.size) if r != self.rank]
            arrived = [r for r in others if self._has(f"arrived/{r}")]
            while time.monotonic() < deadline:
                staying = [r for r in arrived if not self._has(f"left/{r}")]
                # a rank that has not left yet but whose heartbeat stopped is gone too
                if len(self._silent(staying, 3 * BEAT)) == len(staying):
                    return
                time.sleep(POLL)

    def collective_timeout(self) -> timedelta:
        return timedelta(seconds=self.launch.collective_timeout)


def _store(launch: Launch, deadline: float, should_stop: Callable[[], bool]) -> tuple[Store, bool]:
    """The run's store: served here (rank 0, without torchrun's agent serving one) or
    connected to, once its port answers (polled here, so a signal stops the wait; torch's
    own client would retry inside C++). Whether this process serves it."""
    from torch._C._distributed_c10d import TCPStore

    timeout = timedelta(seconds=launch.connect_timeout)
    if launch.rank == 0 and not launch.agent_store:
        try:
            store = TCPStore(
                launch.host,
                launch.port,
                launch.size,
                is_master=True,
                timeout=timeout,
                wait_for_workers=False,
                multi_tenant=True,
            )
        except (RuntimeError, ValueError) as e:
            raise InferenceError(
                f"cannot serve the run's meeting at {launch.where}: {_torch_line(e)}"
            ) from None
        return store, True
    while True:
        try:
            with socket.create_connection((launch.host, launch.port), timeout=0.5):
                break
        except OSError:
            pass
        if should_stop():
            raise Interrupted(
                f"stopped while waiting for rank 0 of the run at {launch.where}", None
            )
        if time.monotonic() > deadline:
            raise InferenceError(
                f"the run's processes did not all meet at {launch.where}: nothing answered "
                f"there within {launch.connect_timeout:g} s (rank 0, or torchrun, serves "
                f"it; {_setting(CONNECT_TIMEOUT_VARIABLE)})"
            )
        time.sleep(POLL)
    try:
        return TCPStore(launch.host, launch.port, is_master=False, timeout=timeout), False
    except RuntimeError as e:
        raise InferenceError(
            f"cannot reach the run's meeting at {launch.where}: {_torch_line(e)}"
        ) from None


def _ranks(ranks: list[int]) -> str:
    shown = ", ".join(map(str, ranks[:8])) + (", ..." if len(ranks) > 8 else "")
    return f"rank{'s' if len(ranks) > 1 else ''} {shown}"


def _setting(variable: str) -> str:
    return f"{variable} sets the seconds"


def _torch_line(e: BaseException) -> str:
    """torch's message in one line, without the C++ source location gloo prefixes."""
    line = first_line(e)
    if line.startswith("[") and "] " in line:
        line = line.split("] ", 1)[1]
    return line
