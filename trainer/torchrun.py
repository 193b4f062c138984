"""torchrun for ``trainplan run`` and the emitted scripts: the same launcher, one line instead of a traceback.

``python -m trainer.torchrun ARGS`` takes torchrun's own arguments. Plain torchrun lets three
errors escape as Python tracebacks:

- ``ChildFailedError`` when a worker fails, with a boxed failure table, after the trainer has
  already printed its one-line reason. Here it becomes one line naming the failed ranks and exit
  codes; the exit code is the trainer's own (2 invalid, 4 disk full, 5 diverged, 143 preempted,
  144 peer lost) when a worker left one, else 1 as torchrun's.
- ``SignalException`` when the agent gets SIGTERM/SIGINT (preemption, Ctrl-C). The agent has
  already passed the signal to the workers, which save a checkpoint and exit; here it becomes
  one line and the exit code 128 + the signal (143 for SIGTERM), which schedulers and the
  Kubernetes ``restartPolicy: ExitCode`` treat as retryable, unlike torchrun's 1.

- ``RendezvousError`` when the node hosting the rendezvous store goes away: one line and 144
  (peer lost, retryable), as a worker whose peer vanished exits; a rendezvous that timed out
  (a wrong endpoint or node count, most often) one line and 2.

The agent also asks for SIGTERM when its own parent (``trainplan run``) dies, so it never trains on
detached; its workers do the same (trainer/locks.py). torch is imported inside ``main``, under
``signals_interrupt``: its import takes seconds, and Ctrl-C there was a KeyboardInterrupt traceback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from planner.errors import ExitCode
from trainer.locks import die_with_parent
from trainer.log import DropRecords, drop_records
from trainer.preemption import RESUME_WORDS, STOP_GRACE_ENV, Interrupted, signals_interrupt
from trainer.worker import WORKER_MODULE

if TYPE_CHECKING:
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

    from trainer.job_spec import JobSpec

# The trainer's own codes that say more than torchrun's 1 (planner/errors.py).
_TRAINER_CODES = {
    ExitCode.INVALID,
    ExitCode.REPLAN,
    ExitCode.DISK_FULL,
    ExitCode.DIVERGED,
    ExitCode.ABORTED,
    ExitCode.PREEMPTED,
    ExitCode.PEER_LOST,
}


# What torch's agent logs on every stop signal or failed worker, which this launcher's own line
# says (torch 2.6-2.13; trial s27: "E... api.py:1002] failed (exitcode: 2) local_rank: 0 ..." before
# every failure's one line): (logger, a part of the message).
_SAID_IN_OUR_LINE = (
    ("torch.distributed.elastic.agent.server.api", "death signal, shutting down workers"),
    ("torch.distributed.elastic.multiprocessing.api", "closing signal"),
    ("torch.distributed.elastic.multiprocessing.api", ") local_rank: "),
    # At the normal end of a multi-node run each agent closes the rendezvous in the store that
    # node 0's agent hosts; a node that gets there after node 0 has exited finds the store gone
    # and says it "has failed to shutdown the rendezvous ... RendezvousConnectionError" (trial s45
    # L4, pytorch/pytorch#69197). Node 0 closed it already, and a lost store during the run is
    # our rendezvous_line, so the note tells the user nothing.
    ("torch.distributed.elastic.rendezvous.dynamic_rendezvous", "has failed to shutdown the rendezvous"),
)
# torch's line for each worker it SIGKILLs after the stop grace: counted for our own line (trial
# s45: "Unable to shutdown process N via 15, forcefully exiting via 9" stood above "a worker that
# had begun training saved a checkpoint").
_FORCED_KILL = ("torch.distributed.elastic.multiprocessing.api", "forcefully exiting via")


def _quiet_stop_chatter() -> DropRecords:
    """Drop torch's lines that ours say; the filter counting the workers killed after the grace."""
    for name, part in _SAID_IN_OUR_LINE:
        drop_records(name, part)
    return drop_records(*_FORCED_KILL)


def stop_line(name: str, killed: int, ends: list[int | None] | None = None, saves_checkpoints: bool = True) -> str:
    """Our one line for a stop signal: what the workers saved, or that some were killed first (trial
    s47: "a worker ... saved a checkpoint, one still starting saved nothing" read as if one had not
    saved, after both had). ``ends``: the workers' exit codes at the stop (-N: ended by signal N,
    a stop at once: trainer/preemption.py); ``saves_checkpoints``: False under --no-checkpoints,
    whose rerun starts from step 0 (trial s49 L3: this line said the workers saved a checkpoint)."""
    if not saves_checkpoints:
        return (
            f"torchrun: stopped by {name}; this job saves no checkpoints (--no-checkpoints): nothing was saved"
            " and a rerun starts from step 0"
        )
    if killed:
        workers = "1 worker was" if killed == 1 else f"{killed} workers were"
        return (
            f"torchrun: stopped by {name}; {workers} still running at the end of the stop grace and killed"
            " (SIGKILL): nothing after the last checkpoint was saved; run the job again to resume from it"
        )
    if ends and all(code is not None and code < 0 for code in ends):
        return (
            f"torchrun: stopped by {name}; the workers stopped at once, saving nothing (rank 0's line above says"
            " why, and where a rerun starts)"
        )
    return (
        f"torchrun: stopped by {name}; the workers that had begun training saved a checkpoint (rank 0's line"
        f" above says at which step), any still starting saved nothing: {RESUME_WORDS}"
    )


def restart_line(failures: dict[int, ProcessFailure], left: int, most: int, saves_checkpoints: bool = True) -> str:
    """Our line when ``--max-restarts`` restarts the workers after a failure (trial s49 M7: the log
    only repeated the start-up lines): which ranks ended how, and the restarts left."""
    codes = {rank: failure.exitcode for rank, failure in failures.items()}
    since = "the last checkpoint" if saves_checkpoints else "step 0 (this job saves no checkpoints)"
    return (
        f"torchrun: {_ranks_words(codes)}; restarting every worker from {since}"
        f" (restart {most - left} of {most}, {left} left)"
    )


def failure_line(error: ChildFailedError, saves_checkpoints: bool = True) -> str:
    """``training failed: rank 0 exited with code 1, rank 1 with code 5``; a rank ended by a signal
    is said by its name (trial s45 L5: "rank 0 exited with code -15" read as a crash, where the
    agent had stopped it after rank 1 failed)."""
    codes = {rank: failure.exitcode for rank, failure in error.failures.items()}
    if (stopped := _saved_stop_words(codes, saves_checkpoints)) is not None:
        return stopped
    refused = _refusal_words(codes)
    if refused is not None:
        return f"training failed (exit {ExitCode.INVALID:d}): the workers' error line above says why ({refused})"
    return f"training failed: {_ranks_words(codes)} (the workers' own messages are above)"


def _saved_stop_words(codes: dict[int, int], saves_checkpoints: bool) -> str | None:
    """Where every rank that ended on its own stopped on a signal after the ranks' joint save (exit
    143 or 130; the others the launcher's SIGTERM echo): a stop, not a failure (runner53 L3: SIGTERM
    to rank 1 alone saved at step 15 and was then reported as "training failed"). None otherwise."""
    exited = sorted(rank for rank, code in codes.items() if code != -signal.SIGTERM)
    saved_codes = (ExitCode.PREEMPTED, ExitCode.ABORTED)
    if not exited or any(codes[rank] not in saved_codes for rank in exited):
        return None
    code = codes[exited[0]]
    then = RESUME_WORDS if saves_checkpoints else "this job saves no checkpoints, so a rerun starts from step 0"
    return (
        f"training stopped, not failed: {_ranks(exited)} exited with {code} after a stop signal, and the workers"
        f" stopped together (rank 0's line above says what they saved and where a rerun starts); {then}"
    )


def _refusal_words(codes: dict[int, int]) -> str | None:
    """Where every rank that ended on its own refused (exit 2): which exited, and which the launcher
    then stopped; None otherwise. The ranks check the same job and checkpoints and refuse alike, so
    the one that exited first is only the quickest (ckpt49: "rank 0 stopped by the launcher after
    another rank failed, rank 1 with code 2" blamed rank 1 for a refusal of every rank's)."""
    exited = sorted(rank for rank, code in codes.items() if code != -signal.SIGTERM)
    if not exited or any(codes[rank] != ExitCode.INVALID for rank in exited):
        return None
    stopped = sorted(rank for rank, code in codes.items() if code == -signal.SIGTERM)
    if not stopped:
        return "every rank exited with it"
    return f"{_ranks(exited)} exited first; the launcher then stopped {_ranks(stopped)} (SIGTERM)"


def _ranks(ranks: list[int]) -> str:
    return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}"


def _ranks_words(codes: dict[int, int]) -> str:
    """``rank 0 exited with code 2, rank 1 stopped by SIGKILL``."""
    # a rank that failed in its own way: any end but the launcher's SIGTERM (a peer's SIGKILL or
    # SIGSEGV too: review s46 L4)
    failed_alone = any(code != -signal.SIGTERM for code in codes.values())
    return ", ".join(
        f"rank {rank} {_ended_words(code, first=i == 0, others_failed=failed_alone)}"
        for i, (rank, code) in enumerate(sorted(codes.items()))
    )


def _ended_words(code: int, first: bool, others_failed: bool) -> str:
    """How one worker ended: its exit code, or the signal that ended it (a negative exit code is
    -signal, Python's subprocess convention, which torch's agent keeps)."""
    if code >= 0:
        return f"{'exited with code' if first else 'with code'} {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = f"signal {-code}"
    # torch's agent sends SIGTERM to every worker still running when one fails: such a rank is the
    # failure's echo, not a failure of its own.
    if code == -signal.SIGTERM and others_failed:
        return f"stopped by the launcher ({name}) after another rank failed"
    return f"stopped by {name}"


def failure_code(error: ChildFailedError) -> int:
    """The lowest rank's trainer code when a worker exited with one, else torchrun's 1. A lost peer
    (144, retryable) speaks only when every failed worker says it: beside a rank that failed in its
    own way it is that rank's echo (review s27: a crashed or OOM-killed rank's peers made a
    permanent failure retryable, and Kubernetes restarted it in a loop)."""
    codes = [failure.exitcode for _, failure in sorted(error.failures.items())]
    # A rank the agent SIGTERMed once another had failed is that failure's echo (trial s47: rank 0,
    # on its way out with 144 after its peer was SIGKILLed, was reported as -15).
    judged = [code for code in codes if code != -signal.SIGTERM]
    if judged and all(code == ExitCode.PEER_LOST for code in judged):
        return ExitCode.PEER_LOST
    own = [code for code in codes if code in _TRAINER_CODES and code != ExitCode.PEER_LOST]
    return own[0] if own else ExitCode.FAILED


def main(argv: list[str] | None = None) -> int:
    die_with_parent(signal.SIGTERM)
    try:
        with signals_interrupt():  # nothing started yet: a stop here is one line, not a traceback
            from torch.distributed.elastic.multiprocessing.api import SignalException
            from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
            from torch.distributed.elastic.rendezvous.api import RendezvousError
            from torch.distributed.run import determine_local_world_size, parse_args, run
    except Interrupted as stop:
        print(f"torchrun: {stop} while starting; no worker had started", file=sys.stderr)
        return stop.exit_code
    kills = _quiet_stop_chatter()
    ends = _record_worker_ends()
    saves = True  # without a job (or before it is read): the workers' own words stand
    log_dir: Path | None = None
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        job = job_of(args)
        saves = job is None or job.run.save_checkpoints
        say_restarts(saves)
        give_workers_their_grace(args, job)
        log_dir = job_log_dir(args, job)
        ignore_node_rank_off_static(args)
        if "OMP_NUM_THREADS" not in os.environ and determine_local_world_size(args.nproc_per_node) > 1:
            # torchrun's own default (one OpenMP thread per worker), without its warning banner
            os.environ["OMP_NUM_THREADS"] = "1"
        run(args)
    except ChildFailedError as error:
        print(failure_line(error, saves), file=sys.stderr)
        return failure_code(error)
    except SignalException as error:
        print(stop_line(signal.Signals(error.sigval).name, kills.dropped, ends, saves), file=sys.stderr)
        return 128 + int(error.sigval)
    except RendezvousError as error:
        # The rendezvous store went with its node (the head node lost, or its agent killed): this
        # node's workers stopped at their next collective and said so; the job resumes from its
        # last checkpoint when every node runs again (trial s37: a traceback and torchrun's 1,
        # which Kubernetes' restartPolicy ExitCode treats as permanent).
        print(rendezvous_line(error), file=sys.stderr)
        # a timeout is most often a misconfigured endpoint or node count, which a retry repeats
        return ExitCode.INVALID if type(error).__name__ == "RendezvousTimeoutError" else ExitCode.PEER_LOST
    except KeyboardInterrupt:  # before torchrun installed its handlers
        return ExitCode.ABORTED
    finally:
        if log_dir is not None:
            prune_empty_dirs(log_dir)
    return ExitCode.OK


# torchrun's per-launch log tree (run id / attempt / rank), in the job directory rather than a
# /tmp/torchelastic_* of its own (runner53 L6: 3,159 empty ones left in a shared /tmp).
TORCHRUN_LOG_DIR = Path("logs") / "torchrun"


def job_log_dir(args, job: JobSpec | None) -> Path | None:
    """Point torchrun's ``--log-dir`` at the job's ``logs/torchrun`` where none was given; the
    directory to prune after the run (None: not ours)."""
    if job is None or getattr(args, "log_dir", None):
        return None
    log_dir = Path(args.training_script_args[0]) / TORCHRUN_LOG_DIR
    args.log_dir = str(log_dir)
    return log_dir


def prune_empty_dirs(root: Path) -> None:
    """Remove the directories under ``root`` (and it) that hold no file: torchrun leaves an empty
    tree per launch where its workers wrote no error file."""
    # Bottom-up os.walk skips what vanishes under it: the agents of a multi-node job on one
    # host share this tree and prune it at the same time (CI stop 72: rglob raised on a
    # directory another agent had just removed).
    for parent, _dirs, _files in os.walk(root, topdown=False):
        with contextlib.suppress(OSError):
            Path(parent).rmdir()  # only succeeds when empty


# The modules that train a job directory (trainer.train: jobs emitted before trainer.worker).
_TRAINER_MODULES = (WORKER_MODULE, "trainer.train")


def job_of(args) -> JobSpec | None:
    """The job torchrun starts; None when the command runs no job directory, or one that does not
    load (its worker says why)."""
    script_args = list(getattr(args, "training_script_args", None) or [])
    if not getattr(args, "module", False) or args.training_script not in _TRAINER_MODULES or not script_args:
        return None
    from trainer.job_spec import JobSpec

    try:
        return JobSpec.load(script_args[0])
    except (ValueError, OSError):
        return None


def give_workers_their_grace(args, job: JobSpec | None) -> None:
    """torchrun SIGKILLs its workers 30 s after passing on SIGTERM or Ctrl-C, whatever they are
    doing; a worker finishes its step, then saves (trial s45: a 4-minute step was killed mid-way,
    nothing saved). Unless ``--shutdown-timeout`` or ``TORCH_ELASTIC_SHUTDOWN_TIMEOUT`` sets that
    wait, it is the job's stop grace. A torch without the knob (it came in 2026) takes it as the
    default of the agent's stop (``PContext.close``)."""
    given = os.environ.get("TORCH_ELASTIC_SHUTDOWN_TIMEOUT") or getattr(args, "shutdown_timeout", None)
    if given is not None:
        os.environ[STOP_GRACE_ENV] = str(given)  # the workers size their stop by it (trainer/preemption.py)
        return
    if job is None:  # no job directory, or one that does not load (``job_of``)
        return
    from trainer.job_scripts import stop_grace_s

    # the job's: the step in flight and a checkpoint save (trainer/job_scripts.py ``stop_grace_s``)
    grace = stop_grace_s(job.plan)
    os.environ[STOP_GRACE_ENV] = str(grace)
    if hasattr(args, "shutdown_timeout"):
        args.shutdown_timeout = grace
        return
    from torch.distributed.elastic.multiprocessing.api import PContext

    close = PContext.close

    def close_with_grace(self, death_sig=None, timeout=grace):
        return close(self, death_sig, timeout)

    PContext.close = close_with_grace  # type: ignore[method-assign]


def _record_worker_ends() -> list[int | None]:
    """The workers' exit codes at the agent's last stop (``SubprocessContext._close``), filled in
    as it ends them: a stop at once (a negative code) or a save first (the trainer's code)."""
    from torch.distributed.elastic.multiprocessing.api import SubprocessContext

    close = getattr(SubprocessContext._close, "__wrapped__", SubprocessContext._close)
    ends: list[int | None] = []

    def close_and_record(self, death_sig, timeout=30):
        close(self, death_sig, timeout)
        ends[:] = [handler.proc.returncode for handler in self.subprocess_handlers.values()]

    close_and_record.__wrapped__ = close  # type: ignore[attr-defined]
    SubprocessContext._close = close_and_record  # type: ignore[method-assign]
    return ends


def say_restarts(saves_checkpoints: bool) -> None:
    """One line per elastic restart (``--max-restarts``): torch's agent says it only at INFO, which
    torchrun does not show (trial s49 M7)."""
    from torch.distributed.elastic.agent.server.api import SimpleElasticAgent
    from torch.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent

    monitor = getattr(LocalElasticAgent._monitor_workers, "__wrapped__", LocalElasticAgent._monitor_workers)
    restart = getattr(SimpleElasticAgent._restart_workers, "__wrapped__", SimpleElasticAgent._restart_workers)

    def monitor_and_keep(self, worker_group):
        self.trainplan_last_result = monitor(self, worker_group)
        return self.trainplan_last_result

    def say_and_restart(self, worker_group):
        last = getattr(self, "trainplan_last_result", None)
        if last is not None and last.failures:  # not a restart for a node joining
            spec = worker_group.spec
            line = restart_line(last.failures, self._remaining_restarts, spec.max_restarts, saves_checkpoints)
            print(line, file=sys.stderr, flush=True)
        return restart(self, worker_group)

    monitor_and_keep.__wrapped__ = monitor  # type: ignore[attr-defined]
    say_and_restart.__wrapped__ = restart  # type: ignore[attr-defined]
    LocalElasticAgent._monitor_workers = monitor_and_keep  # type: ignore[method-assign]
    SimpleElasticAgent._restart_workers = say_and_restart  # type: ignore[method-assign]


def ignore_node_rank_off_static(args) -> None:
    """A c10d rendezvous gives the nodes their ranks in the order they join, and torch ignores
    ``--node-rank`` there, with a warning on every node but node 0 ("node_rank is only used for static
    rdzv_backend", trial s47). The scripts pass it all the same (each node says which it is, and
    ``trainplan run`` names its lock after it); off the static backend it is dropped here, so torch
    has nothing to warn about."""
    if getattr(args, "rdzv_backend", "static") != "static":
        args.node_rank = 0


def rendezvous_line(error: Exception) -> str:
    """``torchrun: lost the rendezvous (...)``: the store another node hosted went away, or (a
    ``RendezvousTimeoutError``) the nodes never all joined."""
    reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if type(error).__name__ == "RendezvousTimeoutError":
        return (
            f"torchrun: the rendezvous timed out ({reason}): not every node joined; check that each runs"
            " with the same --rdzv-endpoint and --nnodes, then run the job again on every node"
        )
    return (
        f"torchrun: lost the rendezvous ({reason}): another node, or the one hosting its store, stopped;"
        " nothing was saved since the last checkpoint: run the job again on every node to resume from it"
    )


if __name__ == "__main__":
    sys.exit(main())
