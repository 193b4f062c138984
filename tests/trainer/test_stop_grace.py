"""The time a stopped worker has to finish its step and save (trial s45): torchrun's SIGKILL came
30 s after SIGTERM or Ctrl-C whatever the job, so a step or a save longer than that was killed
mid-way and the preemption saved nothing; a pod had Kubernetes' default 30 s as well."""

from __future__ import annotations

import json
import signal
import types
from pathlib import Path

import pytest
from support import jobs

from planner.layout import Layout, Precision, TrainingConfig
from planner.plan import Plan
from trainer.job import emit_job
from trainer.job_scripts import AGENT_EXIT_S, slurm_signal_lead_s, stop_grace_s
from trainer.job_spec import RunSettings


def make_plan(step_s: float | None = None, write_s: float | None = None) -> Plan:
    training = TrainingConfig(seq_len=64, micro_batch=1, precision=Precision.FP32)
    plan = jobs.make_plan(Layout(dp_shard=2), training, 2)
    estimate = plan.estimate
    if step_s is not None:
        estimate = estimate.model_copy(update={"time": estimate.time.model_copy(update={"step_s": step_s})})
    if write_s is not None:
        from planner.estimate_parts import GoodputEstimate

        estimate = estimate.model_copy(update={"goodput": GoodputEstimate.model_construct(checkpoint_write_s=write_s)})
    return plan.model_copy(update={"estimate": estimate})


def test_the_grace_covers_the_step_in_flight_and_the_save() -> None:
    assert stop_grace_s(make_plan()) == 120  # a tiny job: the two-minute floor
    assert stop_grace_s(make_plan(write_s=100.0)) == 301  # three 100 s saves and two 0.05 s steps
    assert stop_grace_s(make_plan(step_s=240.0)) >= 480  # a 4-minute step runs to its end first


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    emit_job(make_plan(), tmp_path / "job", name="grace", run=RunSettings())
    return tmp_path / "job"


def started_with(monkeypatch, argv: list[str]):
    """The arguments trainer.torchrun hands torch's ``run`` for ``argv``."""
    import torch.distributed.run as torch_run

    from trainer.torchrun import main

    seen = []
    monkeypatch.setattr(torch_run, "run", seen.append)
    monkeypatch.delenv("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", raising=False)
    monkeypatch.delenv("PET_SHUTDOWN_TIMEOUT", raising=False)
    assert main(argv) == 0
    return seen[0]


def test_torchrun_waits_the_jobs_grace_before_its_sigkill(job_dir: Path, monkeypatch) -> None:
    argv = ["--standalone", "--nproc-per-node", "2", "-m", "trainer.worker", str(job_dir), "--device", "cpu"]
    assert started_with(monkeypatch, argv).shutdown_timeout == 120  # was None: torch's 30 s
    legacy = ["--standalone", "--nproc-per-node", "2", "-m", "trainer.train", str(job_dir)]
    assert started_with(monkeypatch, legacy).shutdown_timeout == 120
    given = ["--shutdown-timeout", "7", *argv]
    assert started_with(monkeypatch, given).shutdown_timeout == 7  # the user's own wait stands
    assert started_with(monkeypatch, ["--nproc-per-node", "1", "train.py"]).shutdown_timeout is None  # no job
    missing = ["--nproc-per-node", "1", "-m", "trainer.worker", str(job_dir / "nowhere")]
    assert started_with(monkeypatch, missing).shutdown_timeout is None  # its worker says what is wrong


def test_a_torch_without_the_knob_gets_the_grace_as_its_stop_default(job_dir: Path, monkeypatch) -> None:
    from torch.distributed.elastic.multiprocessing.api import PContext

    from trainer.torchrun import give_workers_their_grace, job_of

    waits = []
    monkeypatch.setattr(PContext, "close", lambda self, death_sig=None, timeout=30: waits.append(timeout))
    monkeypatch.delenv("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", raising=False)
    old_args = types.SimpleNamespace(module=True, training_script="trainer.worker", training_script_args=[str(job_dir)])
    give_workers_their_grace(old_args, job_of(old_args))
    PContext.close(object(), signal.SIGTERM)  # as an older agent's _shutdown calls it
    PContext.close(object(), signal.SIGTERM, 5)  # a caller's own timeout stands
    assert waits == [120, 5]


def test_a_pod_has_the_grace_and_the_agents_exit_before_kubernetes_kills_it(tmp_path: Path) -> None:
    plan = make_plan(step_s=240.0)
    emit_job(plan, tmp_path / "job", name="slow", run=RunSettings(), force=True)
    text = (tmp_path / "job" / "k8s.yaml").read_text()
    manifest = json.loads(text[text.index("{") :])
    for replica in manifest["spec"]["pytorchReplicaSpecs"].values():
        pod = replica["template"]["spec"]
        assert pod["terminationGracePeriodSeconds"] == stop_grace_s(plan) + AGENT_EXIT_S >= 480 + 30
    assert slurm_signal_lead_s(plan) == stop_grace_s(plan) + AGENT_EXIT_S
    assert f"#SBATCH --signal=B:USR1@{slurm_signal_lead_s(plan)}\n" in (tmp_path / "job" / "slurm.sbatch").read_text()


def test_workers_killed_at_the_end_of_the_grace_are_said_in_our_line(monkeypatch, capsys) -> None:
    """Trial s45: torch's "Unable to shutdown process N via 15, forcefully exiting via 9" stood above
    our "a worker that had begun training saved a checkpoint"; now one line says they were killed."""
    import logging

    import torch.distributed.run as torch_run
    from torch.distributed.elastic.multiprocessing.api import SignalException

    from trainer.torchrun import main

    def stopped(_args, killed=1):
        agent_log = logging.getLogger("torch.distributed.elastic.multiprocessing.api")
        for pid in range(killed):
            agent_log.warning("Unable to shutdown process %s via %s, forcefully exiting via %s", pid, 15, 9)
        raise SignalException("stopped", sigval=signal.SIGTERM)

    monkeypatch.setattr(torch_run, "run", stopped)
    assert main(["--nproc-per-node", "1", "train.py"]) == 128 + signal.SIGTERM
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Unable to shutdown" not in err
    assert "1 worker was still running at the end of the stop grace and killed (SIGKILL)" in err
    monkeypatch.setattr(torch_run, "run", lambda _args: stopped(_args, killed=0))
    assert main(["--nproc-per-node", "1", "train.py"]) == 128 + signal.SIGTERM
    said = capsys.readouterr().err
    assert "the workers that had begun training saved a checkpoint (rank 0's line above says at which step)" in said
    assert "one still starting saved nothing" not in said  # read as one worker's fate (trial s47)


def test_a_rank_the_launcher_stopped_is_said_by_its_signal() -> None:
    """Trial s45 L5: "rank 0 exited with code -15, rank 1 with code 2" read as two crashes; torch's
    agent had SIGTERMed rank 0 after rank 1 failed."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

    from trainer.torchrun import failure_line

    def failed(codes: dict[int, int]) -> ChildFailedError:
        failures = {
            rank: ProcessFailure(local_rank=rank, pid=100 + rank, exitcode=code, error_file="")
            for rank, code in codes.items()
        }
        return ChildFailedError("trainer.worker", failures)

    echo = failure_line(failed({0: -signal.SIGTERM, 1: 5}))
    assert "rank 0 stopped by the launcher (SIGTERM) after another rank failed, rank 1 with code 5" in echo
    assert "-15" not in echo
    assert "rank 0 stopped by SIGKILL" in failure_line(failed({0: -signal.SIGKILL}))
    killed = failure_line(failed({0: -signal.SIGTERM, 1: -signal.SIGKILL}))  # review s46 L4
    assert "rank 0 stopped by the launcher (SIGTERM) after another rank failed, rank 1 stopped by SIGKILL" in killed
    assert "after another" not in failure_line(failed({0: -signal.SIGTERM}))  # alone: stopped from outside
    assert failure_line(failed({0: 1, 1: 2})).startswith(
        "training failed: rank 0 exited with code 1, rank 1 with code 2"
    )
    # runner53 L3: SIGTERM to rank 1 alone; the ranks saved together, rank 1 exited 143 first
    preempted = failure_line(failed({0: -signal.SIGTERM, 1: 143}))
    assert (
        preempted.startswith("training stopped, not failed: rank 1 exited with 143")
        and "training failed" not in preempted
    )
    assert preempted.endswith("run the job again to resume")
    assert "from step 0" in failure_line(failed({0: -signal.SIGTERM, 1: 143}), saves_checkpoints=False)
    assert failure_line(failed({0: 143, 1: 5})).startswith("training failed")  # a failure beside it is one


def test_a_refusal_of_every_rank_blames_none() -> None:
    """ckpt49: every rank refused a checkpoint alike (exit 2); the one that exited first was named as
    the failure ("rank 0 stopped by the launcher (SIGTERM) after another rank failed, rank 1 with code 2")."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError, ProcessFailure

    from trainer.torchrun import failure_line

    def failed(codes: dict[int, int]) -> ChildFailedError:
        return ChildFailedError(
            "trainer.worker",
            {r: ProcessFailure(local_rank=r, pid=100 + r, exitcode=c, error_file="") for r, c in codes.items()},
        )

    assert failure_line(failed({0: -signal.SIGTERM, 1: 2, 2: -signal.SIGTERM})) == (
        "training failed (exit 2): the workers' error line above says why (rank 1 exited first; the launcher then"
        " stopped ranks 0, 2 (SIGTERM))"
    )
    assert failure_line(failed({0: 2, 1: 2})) == (
        "training failed (exit 2): the workers' error line above says why (every rank exited with it)"
    )
