"""``trainplan run``: start a job directory's training under torchrun, and look after it.

``run_job`` takes an exclusive lock on the job directory, prepares the data once (before any
process group exists, so a long tokenisation cannot hit a collective timeout), starts
``python -m trainer.torchrun ... -m trainer.worker JOB_DIR`` (torchrun that reports a failed worker
in one line, trainer/torchrun.py) with the plan's world size, passes its output straight through, forwards SIGINT/SIGTERM to it, and handles the trainer's
"replan needed" exit. Resuming needs nothing here: the trainer loads its latest good checkpoint.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from planner.errors import DiskFullError, ExitCode, JobDirLockedError
from planner.fmt import counted, one_line
from trainer.files import (
    CHECKED_SHARDS_ENV,
    CHECKPOINT_DIR,
    EXIT_STATUS_FILE,
    RESTART_FROM_SCRATCH_HELP,
    check_writable_dir,
)
from trainer.job_spec import JobSpec, check_estimate_current, checked_job, run_problem
from trainer.launch_report import report_failed_launch, report_stamp
from trainer.locks import check_no_workers, job_lock
from trainer.log import setup_logging
from trainer.preemption import Interrupted, signals_interrupt
from trainer.replan import archive_replan_report, print_replan_report, read_replan_report, replan_job
from trainer.worker import WORKER_MODULE

__all__ = ["JobDirLockedError", "NodeLaunch", "job_lock", "run_job", "torchrun_command"]

MAX_RESTARTS = 1000  # torchrun elastic restarts: more is a typo, not a policy
MAX_PROCS_PER_NODE = 1024  # processes one agent starts: more is a hand-edited plan, not a machine
# The rendezvous id: a prefix of torchrun's store keys (and a path part for some backends).
RDZV_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
MAX_REPLANS = 3  # a corrected plan that still does not fit is not retried forever
TERMINATE_GRACE_S = 30.0  # after forwarding a signal, before SIGKILL (when the launcher itself fails)


def resolve_device(device: str) -> str:
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device {device!r}: use auto, cpu or cuda")
    if device == "cpu":
        return device
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        # Checked here, before torchrun starts one failing worker per GPU.
        raise ValueError("--device cuda: no CUDA device is visible on this machine (use --device cpu)")
    return "cuda" if torch.cuda.is_available() else "cpu"


def _check_counts(nproc: int | None, steps: int | None, max_restarts: int) -> None:
    if nproc is not None and nproc < 1:
        raise ValueError(f"--nproc must be >= 1, got {nproc}")
    if steps is not None and steps < 1:
        raise ValueError(f"--steps must be >= 1, got {steps}")
    if max_restarts < 0:
        raise ValueError(f"--max-restarts must be >= 0, got {max_restarts}")
    if max_restarts > MAX_RESTARTS:
        raise ValueError(f"--max-restarts must be <= {MAX_RESTARTS}, got {max_restarts}")


def check_node_args(spec: JobSpec, nproc: int | None, nnodes: int | None, node_rank: int) -> int:
    """Check the per-node overrides against the plan before anything starts; the node count."""
    nnodes = spec.plan.num_nodes if nnodes is None else nnodes
    if not 1 <= nnodes <= spec.plan.num_gpus:
        raise ValueError(f"--nnodes must be in 1..{spec.plan.num_gpus} (the plan's GPUs), got {nnodes}")
    if not 0 <= node_rank < nnodes:
        raise ValueError(f"--node-rank {node_rank} is outside 0..{nnodes - 1}")
    per_node = -(-spec.plan.num_gpus // nnodes)
    if per_node > MAX_PROCS_PER_NODE:
        raise ValueError(
            f"the plan runs {counted(per_node, 'process', 'processes')} per node ({spec.plan.num_gpus} GPUs on"
            f" {counted(nnodes, 'node')}), over"
            f" {MAX_PROCS_PER_NODE}: job.json was edited after emit; emit the job again"
        )
    if nproc is not None and nproc > per_node:
        # The plan's world is the most processes the trainer can use (fewer: a smaller test run).
        raise ValueError(
            f"--nproc {nproc}: the plan runs {counted(per_node, 'process', 'processes')} per node; use at most that"
            " (fewer only where the layout resolves on them, a smaller test run)"
        )
    return nnodes


def torchrun_command(
    spec: JobSpec,
    job_dir: Path,
    *,
    device: str,
    nproc: int | None = None,
    steps: int | None = None,
    max_restarts: int = 0,
    nnodes: int | None = None,
    node_rank: int = 0,
    rdzv_endpoint: str | None = None,
    rdzv_id: str | None = None,
    restart_from_scratch: bool = False,
    module: str = WORKER_MODULE,
) -> list[str]:
    """The torchrun argv for this node. Defaults come from the plan; overrides are for CPU runs and tests."""
    plan = spec.plan
    nnodes = nnodes or plan.num_nodes
    if nproc is None:
        if plan.num_gpus % nnodes:
            raise ValueError(f"{job_dir}: {plan.num_gpus} GPUs do not split over {nnodes} nodes; pass --nproc")
        nproc = plan.num_gpus // nnodes
    if nnodes > 1 and not rdzv_endpoint:
        # trial s27: "--nnodes 2 asks for 2 nodes: pass --nnodes/..." named the flag just given
        whose = "the plan spans" if nnodes == plan.num_nodes else f"--nnodes {nnodes} asks for"
        raise ValueError(
            f"{job_dir}: {whose} {nnodes} nodes, which meet at a rendezvous: pass --rdzv-endpoint HOST:PORT (node"
            " 0's) and --node-rank on each node, or use slurm.sbatch / k8s.yaml"
        )
    if not 0 <= node_rank < nnodes:
        raise ValueError(f"node rank {node_rank} is outside 0..{nnodes - 1}")
    command = [sys.executable, "-m", "trainer.torchrun"]  # torchrun, failures as one line
    if rdzv_endpoint:
        command += [
            "--nnodes",
            str(nnodes),
            "--node-rank",
            str(node_rank),
            "--rdzv-backend",
            "c10d",
            "--rdzv-endpoint",
            rdzv_endpoint,
            "--rdzv-id",
            rdzv_id or spec.name,
        ]
    else:
        command += ["--standalone", "--nnodes", "1"]
    command += [
        "--nproc-per-node",
        str(nproc),
        "--max-restarts",
        str(max_restarts),
        "-m",
        module,
        str(job_dir),
        "--device",
        device,
    ]
    command += ["--steps", str(steps)] if steps is not None else []
    return command + (["--restart-from-scratch"] if restart_from_scratch else [])


def _node_ranks(spec: JobSpec, nproc: int | None, nnodes: int | None, node_rank: int) -> tuple[int, int]:
    """The global ranks this node's workers take: (first, count)."""
    per_node = nproc or -(-spec.plan.num_gpus // (nnodes or spec.plan.num_nodes))
    return node_rank * per_node, per_node


def check_world(spec: JobSpec, world: int, nodes: int | None = None) -> None:
    """The plan's layout resolves on the processes this run starts: the workers' own first check
    (trainer/probe.py ``check_plan``), said in one line before torchrun starts them. ``nodes``:
    the nodes the world counts (trial s25: "--nproc 2" on an 8-node plan said 16 unexplained)."""
    try:
        spec.plan.layout.resolve(world)
    except ValueError as exc:
        how = "" if not nodes or nodes == 1 else f" ({nodes} nodes x {world // nodes}; --nnodes sets the nodes)"
        raise ValueError(
            f"layout {spec.plan.layout.describe()} does not fit the {counted(world, 'process', 'processes')} this"
            f" run starts{how}: {exc}"
        ) from None


def check_endpoint(endpoint: str) -> None:
    """``HOST:PORT`` with a host name, IPv4 or [IPv6] address and a port in 1..65535 (torchrun's
    own parse fails with a traceback)."""
    host, sep, port = endpoint.rpartition(":")
    good_host = re.fullmatch(r"[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]", host) is not None
    if not sep or not good_host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--rdzv-endpoint {endpoint!r}: use HOST:PORT with a port in 1..65535")


def check_rdzv_id(rdzv_id: str) -> None:
    if not RDZV_ID.fullmatch(rdzv_id):
        raise ValueError(
            f"--rdzv-id {rdzv_id!r}: use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )


def check_visible_gpus(device: str, per_node: int) -> None:
    """Every worker on CUDA takes its own GPU: say so before torchrun starts workers that fail."""
    if device != "cuda":
        return
    import torch

    if per_node > torch.cuda.device_count():
        raise ValueError(
            f"this node runs {per_node} processes, one per GPU, but {torch.cuda.device_count()} CUDA devices are"
            " visible; pass --nproc, or run where the plan's GPUs are"
        )


def resolve_job_dir(job_dir: Path) -> Path:
    """The absolute job dir; a one-line error for control characters or a symlink loop."""
    if any(not ch.isprintable() for ch in str(job_dir)):  # "J\n" would be read back as "J" by a shell
        raise ValueError(f"job dir {str(job_dir)!r}: the path has control characters")
    try:
        resolved = Path(job_dir).resolve()
    except (RuntimeError, OSError) as exc:  # Python 3.11 raises RuntimeError for a symlink loop
        raise ValueError(f"job dir {job_dir}: cannot resolve the path ({one_line(exc)})") from None
    # trial s27: a plan file, or no directory, read as "JOB/job.json: cannot read job file (Not a directory)"
    if resolved.is_file():
        raise ValueError(f"{job_dir} is a file, not a job directory: trainplan emit {job_dir} --out JOB_DIR first")
    if not resolved.exists():
        raise ValueError(f"job dir {job_dir} does not exist: trainplan emit PLAN --out {job_dir} writes one")
    return resolved


def run_child(command: list[str], *, keep_fds: tuple[int, ...] = (), extra_env: dict[str, str] | None = None) -> int:
    """Run ``command`` in its own process group with inherited stdout/stderr and ``extra_env``;
    forward SIGINT and SIGTERM to the whole group. Returns the exit code (128 + signal number when killed)."""
    # PYTHONUNBUFFERED: progress lines reach the terminal as printed. The store knob: torchrun's
    # workers otherwise reuse the agent's TCPStore across --max-restarts, and a restarted gloo/NCCL
    # group reads the dead workers' addresses from it (pytorch/pytorch#135712, #167288); with it
    # each restart round gets a fresh store.
    env = dict(os.environ, PYTHONUNBUFFERED="1", TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1")
    env.pop(CHECKED_SHARDS_ENV, None)  # only this launcher's own check speaks for the shards
    env.update(extra_env or {})
    child = subprocess.Popen(command, start_new_session=True, pass_fds=keep_fds, env=env)

    def forward(signum: int, _frame: object) -> None:
        _signal_group(child, signum)

    forwarded = (signal.SIGINT, signal.SIGTERM)
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, forward) for sig in forwarded} if in_main_thread else {}
    try:
        code = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if child.poll() is None:  # we are failing (e.g. an exception): do not leave the job behind
            _signal_group(child, signal.SIGTERM)
            try:
                child.wait(TERMINATE_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(child, signal.SIGKILL)
                child.wait()
    return 128 - code if code < 0 else code


KILLED = 128 + signal.SIGKILL  # run_child's code for a torchrun agent killed by SIGKILL


def worker_exit_code(job_dir: Path, torchrun_code: int) -> int:
    """torchrun's 1 (a failure without a trainer code it saw) becomes the code rank 0 left in
    ``exit_status.json`` (2 invalid, 4 disk full, 5 diverged), which ``trainplan run`` returns; not
    a lost peer (144, retryable): trainer.torchrun returns that itself when every failed worker says
    it, so beside its 1 it is the echo of a rank that failed in its own way (trial s47: a SIGKILLed
    rank made ``trainplan run`` exit 144 where launch.sh exits 1, review s27's rule)."""
    if torchrun_code != ExitCode.FAILED:
        return torchrun_code
    try:
        code = int(json.loads((job_dir / EXIT_STATUS_FILE).read_text())["code"])
    except (OSError, ValueError, KeyError, TypeError):
        return torchrun_code
    return torchrun_code if code == ExitCode.PEER_LOST else code


def _signal_group(child: subprocess.Popen, signum: int) -> None:
    with suppress(ProcessLookupError):
        os.killpg(child.pid, signum)


def prepare_job_data(job_dir: Path, spec: JobSpec) -> int | None:
    """Build or reuse the job's data shards (idempotent; a no-op for synthetic data) and return
    their training tokens (None: synthetic). A signal stops it with Interrupted, after the
    temporary shards are removed."""
    if spec.run.data == "synthetic":
        return None  # nothing to build; the trainer checks the vocabulary itself
    from trainer.data import prepare_data

    with signals_interrupt():
        info = prepare_data(spec.run, job_dir, spec.plan.model.vocab_size, spec.plan.training.seq_len)
    return None if info.train is None else info.train.num_tokens


def say_data_budget(spec: JobSpec, train_tokens: int | None) -> None:
    """The data against the job's tokens, before training starts (runner53 H1: a corpus the job
    would read five times, and synthetic data for a plan's budget, went unsaid)."""
    from trainer.data_budget import data_budget

    if (line := data_budget(spec, train_tokens).words(spec.run.data)) is not None:
        print(line, flush=True)


def checked_data_env(job_dir: Path, spec: JobSpec, node_rank: int) -> dict[str, str]:
    """The workers' word that node 0's launcher has just prepared or hashed the shards
    (trainer/files.py ``CHECKED_SHARDS_ENV``): rank 0 then does not hash them again."""
    if node_rank != 0 or spec.run.data == "synthetic":
        return {}
    from trainer.data_meta import shards_stamp

    stamp = shards_stamp(job_dir)
    return {CHECKED_SHARDS_ENV: stamp} if stamp else {}


def prepare_or_exit_code(job_dir: Path, spec: JobSpec) -> int | None:
    """``prepare_job_data``; None when done, else the exit code after a one-line message (disk full:
    4; a signal: 128 + its number). Invalid data stays a ValueError for the caller's one line."""
    try:
        say_data_budget(spec, prepare_job_data(job_dir, spec))
    except DiskFullError as exc:
        print(f"trainplan: error: {exc}", file=sys.stderr)
        return ExitCode.DISK_FULL
    except Interrupted as exc:
        print(
            f"trainplan: {exc} while preparing the data; nothing partial was kept (the next run prepares it)",
            file=sys.stderr,
        )
        return exc.exit_code
    return None


@dataclass(frozen=True)
class NodeLaunch:
    """What this node's launcher was asked for (``trainplan run``'s flags); None: the plan's own."""

    device: str = "auto"
    nproc: int | None = None
    steps: int | None = None
    max_restarts: int = 0
    nnodes: int | None = None
    node_rank: int = 0
    rdzv_endpoint: str | None = None
    rdzv_id: str | None = None
    restart_from_scratch: bool = False  # no checkpoint verifies: set them aside and start over
    module: str = WORKER_MODULE

    def nodes(self, spec: JobSpec) -> int:
        return self.nnodes or spec.plan.num_nodes

    def ranks(self, spec: JobSpec) -> tuple[int, int]:
        return _node_ranks(spec, self.nproc, self.nnodes, self.node_rank)

    def command(self, spec: JobSpec, job_dir: Path) -> list[str]:
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return torchrun_command(spec, job_dir, **fields)


def run_job(job_dir: Path, launch: NodeLaunch = NodeLaunch(), *, auto_replan: bool = False) -> int:
    """Run (or resume) the job in ``job_dir`` on this node; returns the exit code.

    ``launch``'s ``nnodes``/``node_rank``/``rdzv_endpoint`` start one of several nodes (as
    slurm.sbatch does); its ``module`` is the entry module torchrun starts (tests use a stand-in).
    Raises JobDirLockedError if another launcher runs this directory, ValueError on bad input.
    """
    setup_logging()  # prepare_data's lines, printed here before torchrun starts
    job_dir = resolve_job_dir(job_dir)
    spec = checked_job(job_dir)
    launch = checked_launch(spec, launch, auto_replan)
    with job_lock(job_dir, launch.node_rank) as lock_fd:
        for _ in range(MAX_REPLANS + 1):
            code = _start_workers(job_dir, spec, launch, lock_fd)
            report = read_replan_report(job_dir) if code != ExitCode.OK else None
            if report is None:
                return code
            print_replan_report(job_dir, report)
            if not auto_replan:
                print("trainplan: rerun with --auto-replan to correct the plan and continue", file=sys.stderr)
                return ExitCode.REPLAN
            replanned = replan_job(job_dir, spec, report)
            if replanned is None:
                return ExitCode.REPLAN
            spec = replanned
        print(f"trainplan: still does not fit after {MAX_REPLANS} replans; giving up", file=sys.stderr)
        return ExitCode.REPLAN


def checked_launch(spec: JobSpec, launch: NodeLaunch, auto_replan: bool) -> NodeLaunch:
    """Every check of the run's flags against the plan and this machine, before anything starts or
    allocates; the launch with its device resolved."""
    if (problem := run_problem(spec.plan, spec.run)) is not None:  # the workers' check, before they start
        raise ValueError(problem)
    _check_counts(launch.nproc, launch.steps, launch.max_restarts)
    check_node_args(spec, launch.nproc, launch.nnodes, launch.node_rank)
    if launch.rdzv_endpoint is not None:
        check_endpoint(launch.rdzv_endpoint)
    if launch.rdzv_id is not None:
        check_rdzv_id(launch.rdzv_id)
    launch = dataclasses.replace(launch, device=resolve_device(launch.device))
    per_node = launch.ranks(spec)[1]
    if launch.module == WORKER_MODULE:  # the trainer's own rule (a stand-in module of the tests checks nothing)
        check_world(spec, per_node * launch.nodes(spec), launch.nodes(spec))
    check_visible_gpus(launch.device, per_node)
    check_estimate_current(spec.plan, spec.run, per_node, launch.device)
    if auto_replan and launch.nodes(spec) > 1:
        raise ValueError("--auto-replan works on single-node runs: a corrected plan may change the node count")
    return launch


def _start_workers(job_dir: Path, spec: JobSpec, launch: NodeLaunch, lock_fd: int) -> int:
    """One torchrun launch of this node's workers (node 0 first prepares the data); its exit code."""
    check_no_workers(job_dir, *launch.ranks(spec))
    command = launch.command(spec, job_dir)
    if launch.node_rank == 0:
        if spec.run.save_checkpoints:  # before step 1, not at the first save
            check_writable_dir(job_dir / CHECKPOINT_DIR, "checkpoints")
        if (failed := prepare_or_exit_code(job_dir, spec)) is not None:
            return failed
        archive_replan_report(job_dir)
    (job_dir / EXIT_STATUS_FILE).unlink(missing_ok=True)
    if launch.rdzv_endpoint:  # trial s27: node 0 waited 60 s for a node that never came, silent
        print(f"trainplan: node {launch.node_rank} of {launch.nodes(spec)}: waiting at {launch.rdzv_endpoint}"
              " until every node joins", file=sys.stderr, flush=True)  # fmt: skip
    data_env = checked_data_env(job_dir, spec, launch.node_rank)
    report_before, started = report_stamp(job_dir), time.monotonic()
    code = worker_exit_code(job_dir, run_child(command, keep_fds=(lock_fd,), extra_env=data_env))
    if launch.node_rank == 0:  # rank 0's node writes the reports
        report_failed_launch(job_dir, spec, launch.device, code, report_before, time.monotonic() - started)
    if code == KILLED:  # trial s25: exit 137 with no line of the launcher's own
        print(
            "trainplan: torchrun was killed (SIGKILL: an operator or the kernel's OOM killer); its workers"
            " saved on their way out where they could: run the job again to resume",
            file=sys.stderr,
        )
    return code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m trainer.launch", description=(run_job.__doc__ or "").splitlines()[0]
    )
    parser.add_argument("job_dir", type=Path)
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--nproc", type=int)
    parser.add_argument("--steps", type=int)
    parser.add_argument("--auto-replan", action="store_true")
    parser.add_argument("--max-restarts", type=int, default=0)
    parser.add_argument("--nnodes", type=int)
    parser.add_argument("--node-rank", type=int, default=0)
    parser.add_argument("--rdzv-endpoint")
    parser.add_argument("--rdzv-id")
    parser.add_argument("--restart-from-scratch", action="store_true", help=RESTART_FROM_SCRATCH_HELP)
    parser.add_argument("--prepare-only", action="store_true", help="build the data shards and exit")
    parser.add_argument("--module", default=WORKER_MODULE, help=argparse.SUPPRESS)  # tests: a stand-in trainer
    args = parser.parse_args(argv)
    setup_logging()
    try:
        if args.prepare_only:
            job_dir = resolve_job_dir(args.job_dir)
            with job_lock(job_dir):
                spec = JobSpec.load(job_dir)
                if spec.run.data == "synthetic":  # trial s49 L5: it said nothing at all
                    print("data: synthetic, generated by each rank as it trains: nothing to prepare")
                return prepare_or_exit_code(job_dir, spec) or ExitCode.OK
        flags = {f.name: getattr(args, f.name) for f in dataclasses.fields(NodeLaunch)}
        return run_job(args.job_dir, NodeLaunch(**flags), auto_replan=args.auto_replan)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.INVALID
    except OSError as exc:  # e.g. the job dir read-only where the launcher writes
        print(f"error: {exc.filename or args.job_dir}: {exc.strerror or one_line(exc)}", file=sys.stderr)
        return ExitCode.DISK_FULL if exc.errno == errno.ENOSPC else ExitCode.INVALID
    except DiskFullError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.DISK_FULL


if __name__ == "__main__":
    sys.exit(main())
