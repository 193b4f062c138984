"""How a run is asked to stop: SIGTERM (preemption, or the parent's death: trainer/locks.py) and
SIGINT (Ctrl-C) set a flag the training loop reads at each step boundary (trainer/session.py).

The signal is answered at once, in one line on rank 0 (trial s49 M4: a Ctrl-C 75 s into a 10-minute
CPU step got no word until torchrun's SIGKILL two minutes later): the run either finishes the step
in flight and saves, or, where that protects nothing or cannot end within the stop grace, stops at
once (:func:`choose_stop`)."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass

from planner.errors import ExitCode

log = logging.getLogger(__name__)

# The seconds between a stop signal and the launcher's SIGKILL, which trainer/torchrun.py gives its
# workers (the job's stop grace, or the user's --shutdown-timeout); unset: nobody kills the worker.
STOP_GRACE_ENV = "TRAINPLAN_STOP_GRACE_S"
# The share of that grace the rest of the step and the save may take: the remainder is the exit
# (report, process-group teardown), and a step's time varies.
GRACE_SHARE = 0.8


@dataclass(frozen=True)
class AgreedStop:
    """What every rank holds alike from one step boundary to the next: set after each boundary's
    all-reduce (trainer/session_stop.py) and after each save. A stop signal's choice reads only this
    (review49 M2): each rank chooses alone, in its handler, where a collective would hang (review49
    H1), and ranks that choose apart hang (the finishing ones wait in a collective for the ones gone
    until the launcher's SIGKILL, saving nothing). Choices differ only while a signal lands in the
    instant some ranks have passed a boundary whose choice changed and others have not."""

    steps_done: int
    last_saved_step: int  # the newest checkpoint's step; -1: none
    last_saved: str | None  # its directory name; None: none
    trained: bool  # this launch trained a step (its first boundary is passed)
    step_s: float | None  # the slowest rank's last step in this launch; None: none yet
    save_s: float  # the slowest rank's last save, else the plan's
    step_follows: bool  # another training step comes before the launch ends (no stop agreed)
    at_end: bool  # the loop is over: the run's own end (save, test, report) follows

    @property
    def new_steps(self) -> bool:
        """A step was trained (in this launch) since the newest checkpoint."""
        return self.trained and self.steps_done > self.last_saved_step


@dataclass(frozen=True)
class StopPoint:
    """Where the run is when a stop signal arrives (trainer/session_stop.py ``RunStops.point``)."""

    agreed: AgreedStop  # what the choice is made from
    saves_checkpoints: bool
    # This rank's own clock, for rank 0's words only: how far each rank is differs.
    in_step_s: float | None  # seconds into the step in flight; None: between steps
    micro_batch: tuple[int, int] | None  # (done, of) in the step in flight; None: not counted
    # Between steps: a step has ended whose boundary is still ahead (its evaluation, its metrics),
    # so the run is one step past ``agreed.steps_done`` (review s50 M3: "after step 4", then step 5 saved).
    boundary_ahead: bool = False


@dataclass(frozen=True)
class StopChoice:
    at_once: bool  # end the process now (its signal's default action), not at the step's end
    line: str  # rank 0's answer to the signal


def stop_grace_s() -> float | None:
    """The launcher's stop grace (``STOP_GRACE_ENV``); None when unset or unreadable."""
    try:
        return float(os.environ[STOP_GRACE_ENV])
    except (KeyError, ValueError):
        return None


def remaining_step_s(at: StopPoint) -> float | None:
    """About how long this rank's step in flight has left (rank 0's words): from its own
    micro-batches' pace once one is done (the device actually used, trial s49: the plan's GPU step
    said 0.05 s of a 10-minute CPU step), else from the launch's last step; 0 between steps; None
    when nothing was measured."""
    if at.in_step_s is None:
        return 0.0
    if at.micro_batch is not None and at.micro_batch[0] > 0:
        done, total = at.micro_batch
        return at.in_step_s * (total - done) / done
    step_s = at.agreed.step_s
    return None if step_s is None else max(0.0, step_s - at.in_step_s)


def choose_stop(name: str, at: StopPoint, grace_s: float | None) -> StopChoice:
    """Finish the step in flight and save, or stop at once: with checkpoints off, or nothing trained
    since the newest checkpoint, there is nothing to protect; where a step and the save would outlast
    the grace, the launcher's SIGKILL would end it mid-way all the same. A whole step, the slowest
    rank's last, not the rest of the one in flight: every rank must choose alike (``AgreedStop``)."""
    agreed = at.agreed
    counted = f" ({at.micro_batch[0]:,} of {at.micro_batch[1]:,} micro-batches done)" if at.micro_batch else ""
    step = f"step {agreed.steps_done + 1}{counted}"
    done = trained_steps(at)
    where = f"after step {done}" if at.in_step_s is None else f"in {step}"
    if agreed.at_end:
        return StopChoice(False, f"{name}: the run is at its end; it saves, reports and exits")
    if not at.saves_checkpoints:
        return StopChoice(
            True,
            f"{name}: stopping at once {where}: {_lost_without_checkpoints(done)}",
        )
    resume = f"a rerun resumes from {agreed.last_saved}" if agreed.last_saved else "a rerun starts from step 0"
    # a step ended and awaiting its boundary is new too (its own instant, as a boundary's: the
    # step's last collective ends it on every rank within moments of the others)
    if not (agreed.new_steps or done > agreed.steps_done):
        since = f"checkpoint {agreed.last_saved}" if agreed.last_saved else "the start"
        return StopChoice(True, f"{name}: stopping at once {where}: nothing trained since {since}; {resume}")
    rest = (agreed.step_s or 0.0) if agreed.step_follows else 0.0
    if grace_s is not None and rest + agreed.save_s > GRACE_SHARE * grace_s:
        work = f"a step ({_about(rest)}, the slowest rank's last) and a save" if rest else "a save"
        return StopChoice(
            True,
            f"{name}: stopping at once {where}: {work} ({_about(agreed.save_s)}) would outlast the"
            f" {grace_s:,.0f} s stop grace; {resume}, training"
            f" {_steps(max(agreed.last_saved_step, 0) + 1, done)} again",
        )
    if at.in_step_s is None:
        # past its boundary, the loop trains the next step before the next one agrees to stop
        saved = done + (1 if agreed.step_follows and not at.boundary_ahead else 0)
        return StopChoice(False, f"{name}: stopping after step {saved}; saving a checkpoint, then exiting")
    left = remaining_step_s(at)
    about = f", {_about(left)} more" if left is not None else ""
    return StopChoice(False, f"{name}: finishing {step}{about}, then saving a checkpoint and exiting")


def trained_steps(at: StopPoint) -> int:
    """The steps trained so far on this rank: the agreed ones, and one more between a step's end
    and its boundary (rank 0's words only; the choice reads the agreed figures)."""
    return at.agreed.steps_done + (1 if at.in_step_s is None and at.boundary_ahead else 0)


def _steps(first: int, last: int) -> str:
    return f"step {last}" if first == last else f"steps {first}-{last}"


def _about(seconds: float) -> str:
    return f"about {seconds:,.0f} s" if seconds >= 1 else "under a second"


# What a saved stop tells its reader to do next (runner53 L2: the SIGKILL path said it, the SIGTERM
# lines did not).
RESUME_WORDS = "run the job again to resume"


def stopped_words(name: str, step: int, saved: bool) -> str:
    """The run's last line after a stop signal, at ``step``: what it ``saved``, or why nothing."""
    if saved:
        return f"{name}: saved checkpoint at step {step}; exiting ({RESUME_WORDS} from it)"
    if step == 0:
        return f"{name}: stopped at step 0 before anything was trained; exiting"
    # trial s37: this said "before anything new was trained" and the rerun began at step 1
    return f"{name}: stopped at step {step}; {_lost_without_checkpoints(step)}; exiting"


def _lost_without_checkpoints(steps: int) -> str:
    return f"this job saves no checkpoints (--no-checkpoints), so its {steps} steps are lost and a rerun starts from step 0"


class PreemptionFlag:
    """SIGTERM (preemption, or the parent's death: trainer/locks.py) and SIGINT (Ctrl-C) set a flag;
    the loop saves at the next step boundary and exits, unless ``choose`` (the run's answer, said at
    once) stops the process at once. Installed once the model is built (before that,
    :func:`stop_at_once`)."""

    _installed: PreemptionFlag | None = None
    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self.signum: int | None = None
        # The run's answer to the first signal (trainer/session.py); None: only the flag is set.
        self.choose: Callable[[str], StopChoice] | None = None
        # What rank 0 leaves before a stop at once (its report), then the process ends.
        self.last_words: Callable[[], None] | None = None
        self._previous = {sig: signal.signal(sig, self._handle) for sig in self.SIGNALS}

    @classmethod
    def install(cls) -> PreemptionFlag:
        if cls._installed is None:
            cls._installed = cls()
        return cls._installed

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def _handle(self, signum, frame) -> None:
        del frame
        first = self.signum is None
        self.signum = self.signum or signum
        if not first or self.choose is None:
            return
        try:
            choice = self.choose(signal.Signals(signum).name)
        except Exception:  # a handler must not raise into the step it interrupted: the flag stands
            return
        log.info("\n" + choice.line)
        if choice.at_once:
            if self.last_words is not None:
                with suppress(Exception):  # the stop comes first: a report that fails is only lost
                    self.last_words()
            end_by(signum)

    @property
    def by_user(self) -> bool:
        """Ctrl-C (SIGINT), not a scheduler's or the launcher's SIGTERM."""
        return self.signum == signal.SIGINT

    def exit_code(self) -> ExitCode:
        return ExitCode.ABORTED if self.by_user else ExitCode.PREEMPTED

    def name(self) -> str:
        return signal.Signals(self.signum).name if self.signum else "SIGTERM"

    def close(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        if PreemptionFlag._installed is self:
            PreemptionFlag._installed = None


def end_by(signum: int) -> None:
    """End this process by ``signum``'s default action: at once, also inside a collective that waits
    for a peer (a Python handler would wait for the call), and its exit status says the signal."""
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    time.sleep(5)  # the signal lands while the process sleeps; this is only a fallback
    os._exit(128 + signum)


class Interrupted(BaseException):
    """SIGTERM or SIGINT during work that has no step boundary to stop at (data preparation): it
    unwinds like KeyboardInterrupt, so ``finally`` and ``except BaseException`` clean up."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


@contextmanager
def _stop_signals_handled_by(handler) -> Iterator[None]:
    """SIGTERM and SIGINT go to ``handler`` inside the block, in the main thread (Python runs
    handlers only there; elsewhere the caller's own handling stays); the previous ones after it."""
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, handler) for sig in PreemptionFlag.SIGNALS} if in_main_thread else {}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def signals_interrupt() -> AbstractContextManager[None]:
    """SIGTERM and SIGINT raise :class:`Interrupted` inside the block."""

    def interrupt(signum, frame) -> None:
        del frame
        raise Interrupted(signum)

    return _stop_signals_handled_by(interrupt)


def stop_at_once() -> AbstractContextManager[None]:
    """SIGTERM and SIGINT take their default action inside the block, until a run installs its
    :class:`PreemptionFlag` (trainer/session.py, once the model is built): the kernel ends the worker
    at once, also inside a rendezvous or collective that waits for a peer already gone, where a
    Python handler would wait for the call to return (a rank that set a flag there hung until
    torchrun's SIGKILL, 30 s later). No step has run, so nothing is lost; torchrun's own line says
    that a worker still starting saved nothing. Before, Ctrl-C while torch imported was a
    KeyboardInterrupt traceback from every rank."""
    return _stop_signals_handled_by(signal.SIG_DFL)
