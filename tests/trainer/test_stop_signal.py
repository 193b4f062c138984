"""A stop signal (SIGTERM, Ctrl-C) is answered at once, and a step that protects nothing or cannot
end within the stop grace is not waited for (trial s49 M4: a Ctrl-C 75 s into a 10-minute CPU step
got no word, then torchrun's SIGKILL two minutes later); torchrun's lines at a stop and at an
elastic restart (M7, L3)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from support.jobs import write_job

import trainer.preemption as preemption
import trainer.step as step_module
from planner.errors import ExitCode
from planner.layout import Layout
from trainer.preemption import STOP_GRACE_ENV, AgreedStop, StopPoint, choose_stop
from trainer.train import main


def point(in_step_s: float | None = 10.0, micro_batch: tuple[int, int] | None = (2, 8), **agreed) -> StopPoint:
    """Step 5 in flight, 2 of 8 micro-batches done here after 10 s; checkpoint step-000003; the
    slowest rank's last step 30 s, its last save 1 s."""
    fields = dict(
        steps_done=4,
        last_saved_step=3,
        last_saved="step-000003",
        trained=True,
        step_s=30.0,
        save_s=1.0,
        step_follows=True,
        at_end=False,
    )
    saves = agreed.pop("saves_checkpoints", True)
    ahead = agreed.pop("boundary_ahead", False)
    return StopPoint(AgreedStop(**{**fields, **agreed}), saves, in_step_s, micro_batch, ahead)  # type: ignore[arg-type]


def test_a_step_that_can_end_within_the_grace_is_finished_and_said_so() -> None:
    choice = choose_stop("SIGINT", point(), grace_s=120)
    assert not choice.at_once
    # the rest from this step's own pace (6 micro-batches at 5 s), not the plan's GPU step
    assert (
        choice.line
        == "SIGINT: finishing step 5 (2 of 8 micro-batches done), about 30 s more, then saving a checkpoint and exiting"
    )
    # in the save at step 4's boundary: the loop trains step 5 before the next boundary stops it
    between = choose_stop("SIGTERM", point(in_step_s=None), grace_s=120)
    assert not between.at_once and between.line.startswith("SIGTERM: stopping after step 5; saving a checkpoint")
    # in step 5's evaluation, before its boundary: step 5 is saved (review s50 M3: "after step 4")
    evaluating = choose_stop("SIGTERM", point(in_step_s=None, boundary_ahead=True), grace_s=120)
    assert evaluating.line.startswith("SIGTERM: stopping after step 5; saving a checkpoint")
    last = choose_stop("SIGTERM", point(in_step_s=None, step_follows=False), grace_s=120)  # the launch's last
    assert last.line.startswith("SIGTERM: stopping after step 4; saving a checkpoint")
    # a step trained since the newest checkpoint, awaiting its boundary: not "nothing trained since"
    fresh = choose_stop(
        "SIGTERM", point(in_step_s=None, boundary_ahead=True, last_saved_step=4, last_saved="step-000004"), 120
    )
    assert not fresh.at_once and fresh.line.startswith("SIGTERM: stopping after step 5; saving")
    just_saved = choose_stop("SIGTERM", point(in_step_s=None, last_saved_step=4, last_saved="step-000004"), 120)
    assert just_saved.at_once and just_saved.line.startswith("SIGTERM: stopping at once after step 4: nothing")


def test_nothing_to_protect_stops_at_once() -> None:
    # before this launch's first step boundary: nothing trained yet (its first step in flight)
    start = choose_stop("SIGINT", point(steps_done=0, last_saved_step=-1, last_saved=None, trained=False), 120)
    assert start.at_once
    assert start.line == (
        "SIGINT: stopping at once in step 1 (2 of 8 micro-batches done): nothing trained since the start; a rerun starts"
        " from step 0"
    )
    resumed = choose_stop("SIGTERM", point(steps_done=3, trained=False, step_s=None), 120)
    assert (
        resumed.at_once
        and "nothing trained since checkpoint step-000003; a rerun resumes from step-000003" in resumed.line
    )
    off = choose_stop("SIGTERM", point(saves_checkpoints=False, last_saved_step=-1, last_saved=None), 120)
    assert off.at_once and "this job saves no checkpoints (--no-checkpoints), so its 4 steps are lost" in off.line


def test_a_step_that_would_outlast_the_grace_stops_at_once() -> None:
    # a 30 s step and a 1 s save: past 80 % of a 35 s grace (the exit needs the rest)
    late = choose_stop("SIGTERM", point(), grace_s=35)
    assert late.at_once
    assert late.line == (
        "SIGTERM: stopping at once in step 5 (2 of 8 micro-batches done): a step (about 30 s, the slowest rank's"
        " last) and a save (about 1 s) would outlast the 35 s stop grace; a rerun resumes from step-000003,"
        " training step 4 again"
    )
    wide = choose_stop("SIGTERM", point(steps_done=7), grace_s=25).line
    assert "training steps 4-7 again" in wide
    assert not choose_stop("SIGTERM", point(), grace_s=60).at_once
    assert not choose_stop("SIGTERM", point(), grace_s=None).at_once  # nobody kills it: finish
    assert not choose_stop("SIGTERM", point(at_end=True), grace_s=1).at_once  # its own end: save, test, report
    # a stop agreed at the boundary: only the save is left
    saving = choose_stop("SIGTERM", point(in_step_s=None, step_follows=False), grace_s=5)
    assert not saving.at_once and saving.line.startswith("SIGTERM: stopping after step 4; saving")
    slow_save = choose_stop("SIGTERM", point(in_step_s=None, step_follows=False, save_s=10.0), grace_s=5)
    assert slow_save.at_once and ": a save (about 10 s) would outlast the 5 s stop grace" in slow_save.line


def test_how_far_this_rank_is_changes_the_words_not_the_choice() -> None:
    """Review49 M2: the rest of the step from this rank's own clock flipped the choice near the
    grace, so ranks chose apart. A 30 s step and a 1 s save in a 35 s grace: at once wherever the
    rank is in the step; the words still say where rank 0 is."""
    for in_step_s, micro_batch in ((0.0, None), (1.0, (0, 8)), (10.0, (2, 8)), (29.0, (7, 8)), (None, None)):
        assert choose_stop("SIGTERM", point(in_step_s, micro_batch), grace_s=35).at_once, in_step_s
    assert " in step 5 (7 of 8 micro-batches done): " in choose_stop("SIGTERM", point(29.0, (7, 8)), 35).line


class Ended(BaseException):
    """In place of the process's end by its signal (``preemption.end_by``)."""


@pytest.fixture
def signal_in_step(monkeypatch):
    """``arm(step)``: SIGTERM to this process once the first micro-batch of ``step`` is done; a stop
    at once raises :class:`Ended` instead of ending pytest."""

    def ended(signum: int) -> None:
        raise Ended(signum)

    monkeypatch.setattr(preemption, "end_by", ended)
    tick, steps = step_module.Heartbeat.tick, {"at": 0, "seen": 0}

    def tick_and_signal(self, done: int, total: int) -> None:
        tick(self, done, total)
        if done == 0:
            steps["seen"] += 1
        if done == 1 and steps["seen"] == steps["at"]:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(step_module.Heartbeat, "tick", tick_and_signal)

    def arm(step: int) -> None:
        steps["at"] = step

    return arm


def job_of(tmp_path: Path) -> Path:
    return write_job(tmp_path, Layout(), 1, steps=8, checkpoint_every=2, grad_accum=2, probe_steps=0)


def test_a_stop_in_a_step_after_new_steps_finishes_it_and_saves(
    tmp_path, in_process, signal_in_step, monkeypatch, capsys
):
    monkeypatch.delenv(STOP_GRACE_ENV, raising=False)
    signal_in_step(4)  # step 3 trained since step-000002
    assert main([str(job_of(tmp_path)), "--device", "cpu"]) == ExitCode.PREEMPTED
    out = capsys.readouterr().out
    assert "SIGTERM: finishing step 4 (1 of 2 micro-batches done), under a second more, then saving" in out
    assert "SIGTERM: saved checkpoint at step 4; exiting (run the job again to resume from it)" in out


def test_a_stop_right_after_a_checkpoint_ends_at_once(tmp_path, in_process, signal_in_step, monkeypatch, capsys):
    monkeypatch.delenv(STOP_GRACE_ENV, raising=False)
    signal_in_step(3)  # step-000002 holds every step trained
    job = job_of(tmp_path)
    with pytest.raises(Ended):
        main([str(job), "--device", "cpu"])
    out = capsys.readouterr().out
    assert (
        "SIGTERM: stopping at once in step 3 (1 of 2 micro-batches done): nothing trained since checkpoint step-000002"
        in out
    )
    assert sorted(p.name for p in (job / "ckpt").iterdir()) == ["step-000002"]
    report = json.loads((job / "report.json").read_text())  # its report, as a stop at a step's end
    assert (report["outcome"], report["steps_done"]) == ("preempted", 2)


def test_a_step_past_the_grace_ends_at_once(tmp_path, in_process, signal_in_step, monkeypatch, capsys):
    monkeypatch.setenv(STOP_GRACE_ENV, "0.001")  # from trainer.torchrun: no step fits in it
    signal_in_step(4)
    job = job_of(tmp_path)
    with pytest.raises(Ended):
        main([str(job), "--device", "cpu"])
    out = capsys.readouterr().out
    assert "SIGTERM: stopping at once in step 4 (1 of 2 micro-batches done): a step (" in out
    assert "stop grace; a rerun resumes from step-000002, training step 3 again" in out
    assert sorted(p.name for p in (job / "ckpt").iterdir()) == ["step-000002"]


# --------------------------------------------------------------------------- torchrun's lines


def test_torchrun_tells_its_workers_the_grace(tmp_path, monkeypatch) -> None:
    import types

    from tests.trainer.test_stop_grace import make_plan
    from trainer.job import emit_job
    from trainer.job_spec import RunSettings
    from trainer.torchrun import give_workers_their_grace, job_of

    emit_job(make_plan(), tmp_path / "job", name="grace", run=RunSettings())
    monkeypatch.setenv(STOP_GRACE_ENV, "0")  # restored after the test
    monkeypatch.delenv("TORCH_ELASTIC_SHUTDOWN_TIMEOUT", raising=False)
    args = types.SimpleNamespace(
        module=True,
        training_script="trainer.worker",
        training_script_args=[str(tmp_path / "job")],
        shutdown_timeout=None,
    )
    give_workers_their_grace(args, job_of(args))
    assert os.environ[STOP_GRACE_ENV] == "120" == str(args.shutdown_timeout)
    given = types.SimpleNamespace(**{**vars(args), "shutdown_timeout": 7})
    give_workers_their_grace(given, job_of(given))
    assert os.environ[STOP_GRACE_ENV] == "7"  # the user's own wait


def test_torchrun_logs_under_the_job_and_leaves_no_empty_tree(tmp_path) -> None:
    """runner53 L6: every launch left an empty /tmp/torchelastic_*/<run>/attempt_0/{0,1} tree."""
    import types

    from tests.trainer.test_stop_grace import make_plan
    from trainer.job import emit_job
    from trainer.job_spec import RunSettings
    from trainer.torchrun import TORCHRUN_LOG_DIR, job_log_dir, job_of, prune_empty_dirs

    job = tmp_path / "job"
    emit_job(make_plan(), job, name="logs", run=RunSettings())
    args = types.SimpleNamespace(
        module=True, training_script="trainer.worker", training_script_args=[str(job)], log_dir=None
    )
    log_dir = job_log_dir(args, job_of(args))
    assert log_dir == job / TORCHRUN_LOG_DIR and args.log_dir == str(log_dir)
    (log_dir / "run_abc" / "attempt_0" / "0").mkdir(parents=True)  # what torch's agent makes
    (log_dir / "run_abc" / "attempt_0" / "1").mkdir()
    (log_dir / "run_def" / "attempt_0" / "1").mkdir(parents=True)
    (log_dir / "run_def" / "attempt_0" / "1" / "error.json").write_text("{}")  # a worker's error: kept
    prune_empty_dirs(log_dir)
    assert sorted(p.relative_to(log_dir).as_posix() for p in log_dir.rglob("*")) == [
        "run_def", "run_def/attempt_0", "run_def/attempt_0/1", "run_def/attempt_0/1/error.json"
    ]  # fmt: skip
    given = types.SimpleNamespace(**{**vars(args), "log_dir": str(tmp_path / "mine")})
    assert job_log_dir(given, job_of(given)) is None and given.log_dir == str(tmp_path / "mine")  # the user's own


def test_pruning_torchrun_logs_survives_another_agent_pruning_them(tmp_path, monkeypatch) -> None:
    """CI stop 72: two agents of a two-node job on one host prune the same tree; a directory the
    other agent removed mid-walk raised FileNotFoundError and failed a run that had trained."""
    import os
    import shutil

    from trainer.torchrun import prune_empty_dirs

    log_dir = tmp_path / "torchrun"
    (log_dir / "run_a" / "attempt_0" / "0").mkdir(parents=True)
    (log_dir / "run_b" / "attempt_0" / "1").mkdir(parents=True)
    (log_dir / "run_b" / "attempt_0" / "1" / "error.json").write_text("{}")
    scandir = os.scandir

    def other_agent_first(path):  # the other agent removes run_a just before this one reads it
        if not isinstance(path, int) and os.fspath(path) == os.fspath(log_dir / "run_a"):
            shutil.rmtree(path)  # (rmtree itself scans by file descriptor: the int case)
        return scandir(path)

    monkeypatch.setattr(os, "scandir", other_agent_first)
    prune_empty_dirs(log_dir)
    prune_empty_dirs(tmp_path / "never-made")
    assert sorted(p.relative_to(log_dir).as_posix() for p in log_dir.rglob("*")) == [
        "run_b", "run_b/attempt_0", "run_b/attempt_0/1", "run_b/attempt_0/1/error.json"
    ]  # fmt: skip


def test_torchrun_says_a_stop_at_once_and_a_job_without_checkpoints() -> None:
    from trainer.torchrun import stop_line

    at_once = stop_line("SIGINT", 0, [-signal.SIGINT, -signal.SIGINT])
    assert (
        "the workers stopped at once, saving nothing (rank 0's line above says why, and where a rerun starts)"
        in at_once
    )
    assert "saved a checkpoint" in stop_line("SIGTERM", 0, [ExitCode.PREEMPTED, ExitCode.PREEMPTED])
    assert "saved a checkpoint" in stop_line("SIGTERM", 0, [])  # no codes known
    assert stop_line("SIGTERM", 0, [ExitCode.PREEMPTED]).endswith("run the job again to resume")  # runner53 L2
    # trial s49 L3: "the workers that had begun training saved a checkpoint" under --no-checkpoints
    off = stop_line("SIGTERM", 0, [ExitCode.PREEMPTED], saves_checkpoints=False)
    assert "saved a checkpoint" not in off and "this job saves no checkpoints" in off and "from step 0" in off


def test_an_elastic_restart_is_one_line_naming_the_rank_its_end_and_the_restarts_left() -> None:
    from torch.distributed.elastic.multiprocessing.errors import ProcessFailure

    from trainer.torchrun import restart_line

    failures = {1: ProcessFailure(local_rank=1, pid=101, exitcode=-signal.SIGKILL, error_file="")}
    assert restart_line(failures, left=0, most=1) == (
        "torchrun: rank 1 stopped by SIGKILL; restarting every worker from the last checkpoint (restart 1 of 1, 0 left)"
    )
    failures[0] = ProcessFailure(local_rank=0, pid=100, exitcode=ExitCode.PEER_LOST, error_file="")
    line = restart_line(failures, left=2, most=3, saves_checkpoints=False)
    assert "rank 0 exited with code 144, rank 1 stopped by SIGKILL; restarting every worker from step 0" in line
    assert "(restart 1 of 3, 2 left)" in line


def test_the_agents_restart_says_our_line(monkeypatch, capsys) -> None:
    """The line comes from torch's own agent loop: its monitor's failures, then its restart."""
    import types

    from torch.distributed.elastic.agent.server.api import RunResult, SimpleElasticAgent, WorkerState
    from torch.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent
    from torch.distributed.elastic.multiprocessing.errors import ProcessFailure

    from trainer.torchrun import say_restarts

    failed = RunResult(
        state=WorkerState.FAILED,
        failures={1: ProcessFailure(local_rank=1, pid=1, exitcode=-signal.SIGKILL, error_file="")},
    )
    monkeypatch.setattr(LocalElasticAgent, "_monitor_workers", lambda self, group: failed)
    monkeypatch.setattr(SimpleElasticAgent, "_restart_workers", lambda self, group: None)
    say_restarts(saves_checkpoints=True)
    agent = types.SimpleNamespace(_remaining_restarts=0)
    group = types.SimpleNamespace(spec=types.SimpleNamespace(max_restarts=1))
    LocalElasticAgent._monitor_workers(agent, group)
    SimpleElasticAgent._restart_workers(agent, group)
    assert capsys.readouterr().err == (
        "torchrun: rank 1 stopped by SIGKILL; restarting every worker from the last checkpoint (restart 1 of 1, 0 left)\n"
    )


def test_a_failing_answer_leaves_the_flag_and_raises_nothing_into_the_step() -> None:
    from trainer.preemption import PreemptionFlag

    flag = PreemptionFlag()

    def broken(name: str):
        raise AttributeError("the session is half built")

    flag.choose = broken
    try:
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here, in this thread
        assert flag.requested and flag.signum == signal.SIGTERM
    finally:
        flag.close()


def test_a_stop_at_once_reports_without_a_collective(tmp_path, in_process, signal_in_step, monkeypatch):
    """The report before a stop at once is written inside the signal handler, where each rank is at
    its own point of the step: a collective there (the memory peaks' all-reduce, on CUDA) would pair
    with another rank's step traffic and hang until the launcher's SIGKILL (review49 H1)."""
    from trainer.meter import RunMeter

    def no_collective(self):
        raise RuntimeError("a collective inside a signal handler")

    monkeypatch.delenv(STOP_GRACE_ENV, raising=False)
    monkeypatch.setattr(RunMeter, "reading", no_collective)
    signal_in_step(3)  # step-000002 holds every step trained: at once
    job = job_of(tmp_path)
    with pytest.raises(Ended):
        main([str(job), "--device", "cpu"])
    report = json.loads((job / "report.json").read_text())
    assert (report["outcome"], report["steps_done"]) == ("preempted", 2)


def test_a_stop_at_a_steps_first_instant_counts_no_micro_batch(tmp_path, in_process, monkeypatch, capsys):
    """Review49 L1: a signal before the step's first micro-batch said the last step's count."""

    def ended(signum: int) -> None:
        raise Ended(signum)

    monkeypatch.setattr(preemption, "end_by", ended)
    monkeypatch.delenv(STOP_GRACE_ENV, raising=False)
    train_step, calls = step_module.Stepper.train_step, []

    def signal_then_train(self, batches):
        calls.append(1)
        if len(calls) == 3:  # step 3 has begun; step-000002 holds every step trained: at once
            os.kill(os.getpid(), signal.SIGTERM)
        return train_step(self, batches)

    monkeypatch.setattr(step_module.Stepper, "train_step", signal_then_train)
    with pytest.raises(Ended):
        main([str(job_of(tmp_path)), "--device", "cpu"])
    assert (
        "SIGTERM: stopping at once in step 3: nothing trained since checkpoint step-000002" in capsys.readouterr().out
    )
