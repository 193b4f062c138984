"""trainer.job (emit) and trainer.launch (run): scripts, quoting, the lock, replanning, two nodes."""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support import REPO, jobs

from planner.errors import ExitCode
from planner.fmt import duration_words
from planner.layout import Layout, Precision, TrainingConfig
from planner.plan import Plan
from planner.reports import ReplanRequest
from trainer import launch
from trainer.files import CHECKPOINT_DIR
from trainer.job import JOB_FILES, default_job_name, emit_job
from trainer.job_k8s import host_requests, k8s_name
from trainer.job_spec import ClusterSettings, JobSpec, RunSettings
from trainer.launch import JobDirLockedError, NodeLaunch, job_lock, run_job

EVIL = 'x"; touch PWNED; echo "$(touch PWNED2)`touch PWNED3`'
VENV_BIN = str(Path(sys.executable).parent)


def make_plan(num_nodes: int = 1, gpus_per_node: int = 8, gpu: str = "h100-sxm", seq_len: int = 64) -> Plan:
    num_gpus = num_nodes * gpus_per_node
    training = TrainingConfig(seq_len=seq_len, micro_batch=1, precision=Precision.FP32)
    return jobs.make_plan(Layout(dp_shard=num_gpus), training, num_gpus, num_nodes=num_nodes, gpu=gpu)


def fake_tools(bin_dir: Path, record: Path) -> dict[str, str]:
    """python/srun/scontrol stand-ins: python (running trainer.torchrun) writes its argv, NUL-separated, to ``record``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    tools = {
        # The scripts run ``python -m trainer.torchrun``: this python records its argv.
        "python": f'#!/bin/bash\nprintf "%s\\0" "$@" > {shlex.quote(str(record))}\n',
        "srun": '#!/bin/bash\nwhile [[ "$1" == --* ]]; do shift; done\nexec "$@"\n',
        # Many names, as on a large allocation: a reader that stops early would SIGPIPE it.
        "scontrol": "#!/bin/bash\necho node-a\nfor i in $(seq 20000); do echo node-$i; done\n",
    }
    for name, body in tools.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    return dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")


def recorded_argv(record: Path) -> list[str]:
    """torchrun's arguments (after ``-m trainer.torchrun``)."""
    argv = record.read_bytes().decode().split("\0")[:-1]
    assert argv[:2] == ["-m", "trainer.torchrun"], argv
    return argv[2:]


# --------------------------------------------------------------------------- emit


def test_emit_writes_every_file_and_a_loadable_job(tmp_path: Path) -> None:
    job_json = emit_job(make_plan(), tmp_path / "job", name="llama-test", run=RunSettings(steps=7))
    assert job_json == tmp_path / "job" / "job.json"
    assert sorted(p.name for p in (tmp_path / "job").iterdir()) == sorted(JOB_FILES)
    spec = JobSpec.load(tmp_path / "job")
    assert (spec.name, spec.run.steps, spec.schema_version, spec.plan.num_gpus) == ("llama-test", 7, 1, 8)
    for script in ("launch.sh", "slurm.sbatch"):
        assert os.access(tmp_path / "job" / script, os.X_OK)
        subprocess.run(["bash", "-n", str(tmp_path / "job" / script)], check=True)
    readme = (tmp_path / "job" / "README.md").read_text()
    assert "8 x h100-sxm" in readme and "trainplan run" in readme


def test_emit_estimates_the_loss_the_job_will_run(tmp_path: Path) -> None:
    """--loss-chunk-tokens 0 runs the full-logits loss: the job carries that estimate, and a plan
    that fits only with the chunked loss is refused unless --force."""
    from planner.api import build_plan
    from planner.catalog.models import get_preset
    from planner.layout import ActivationCheckpointing as AC

    model = get_preset("llama3-8b")
    training = TrainingConfig(seq_len=8192, micro_batch=4, activation_checkpointing=AC.FULL)
    plan = build_plan(model, "h100-sxm", Layout(), training, num_gpus=8)
    assert plan.estimate.feasible
    same = JobSpec.load(emit_job(plan, tmp_path / "same", name="same", run=RunSettings()).parent)
    assert same.plan == plan  # the run changes nothing the planner modelled
    full = RunSettings(loss_chunk_tokens=0)
    with pytest.raises(ValueError, match=r"^with loss_chunk_tokens 0 the plan is infeasible \(memory: needs"):
        emit_job(plan, tmp_path / "full", name="full", run=full)
    job = JobSpec.load(emit_job(plan, tmp_path / "full", name="full", run=full, force=True).parent)
    logits = 12 * 4 * 8192 * model.vocab_size / 2**30  # fp32 log-softmax backward, the whole micro-batch
    assert job.plan.estimate.memory.breakdown_gib.logits_loss == pytest.approx(logits)
    assert not job.plan.estimate.feasible and job.plan.layout == plan.layout


def test_emit_makes_local_paths_absolute_and_validates_names(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("Some words.\n")  # emit lists the data's files (trial s45)
    emit_job(make_plan(), Path("job"), name=None, run=RunSettings(data="corpus"))
    spec = JobSpec.load(tmp_path / "job")
    assert spec.run.data == str(tmp_path / "corpus") and spec.name == "job"
    with pytest.raises(ValueError, match="job name 'bad name': use 1-64 letters"):
        emit_job(make_plan(), tmp_path / "j2", name="bad name", run=RunSettings())
    assert default_job_name(Path("/x/.. weird  dir!!")) == "weird-dir"
    assert default_job_name(Path("/x/!!!")) == "trainplan-job"
    assert k8s_name("My_Job.v2") == "my-job-v2"
    assert k8s_name("70B_Run") == "j-70b-run" and k8s_name("7" * 60) == "j-" + "7" * 48  # DNS-1035: a letter first


def test_launch_sh_runs_torchrun_with_the_exact_job_dir(tmp_path: Path) -> None:
    job_dir = tmp_path / EVIL / "job"
    (tmp_path / "a.txt").write_text("Some words.\n")  # emit lists the data's files (trial s45)
    emit_job(make_plan(), job_dir, name=None, run=RunSettings(data=str(tmp_path)))
    env = fake_tools(tmp_path / "bin", tmp_path / "argv")
    subprocess.run(["bash", "-n", str(job_dir / "launch.sh")], check=True)
    subprocess.run(["bash", str(job_dir / "launch.sh"), "--steps", "5"], check=True, env=env, cwd=tmp_path)
    assert recorded_argv(tmp_path / "argv") == [
        "--standalone",
        "--nnodes",
        "1",
        "--nproc-per-node",
        "8",
        "-m",
        "trainer.worker",
        str(job_dir),
        "--steps",
        "5",
    ]
    assert not list(tmp_path.rglob("PWNED*"))


def test_launch_sh_multi_node_needs_an_endpoint(tmp_path: Path) -> None:
    emit_job(make_plan(num_nodes=2, gpus_per_node=4), tmp_path / "job", name="two", run=RunSettings())
    env = fake_tools(tmp_path / "bin", tmp_path / "argv")
    missing = subprocess.run(["bash", str(tmp_path / "job" / "launch.sh")], env=env, capture_output=True, text=True)
    assert missing.returncode != 0 and "set RDZV_ENDPOINT" in missing.stderr
    env.update(NODE_RANK="1", RDZV_ENDPOINT="head:29500")
    subprocess.run(["bash", str(tmp_path / "job" / "launch.sh")], check=True, env=env)
    assert recorded_argv(tmp_path / "argv") == [
        "--nnodes",
        "2",
        "--nproc-per-node",
        "4",
        "--node-rank",
        "1",
        "--rdzv-backend",
        "c10d",
        "--rdzv-endpoint",
        "head:29500",
        "--rdzv-id",
        "two",
        "--max-restarts",
        "0",
        "-m",
        "trainer.worker",
        str(tmp_path / "job"),
    ]


def test_slurm_script_contents_and_quoting(tmp_path: Path) -> None:
    job_dir = tmp_path / EVIL
    emit_job(make_plan(num_nodes=4, gpus_per_node=8), job_dir, name="big.run", run=RunSettings(steps=1800))
    script = (job_dir / "slurm.sbatch").read_text()
    for line in (
        "#SBATCH --job-name=big.run",
        "#SBATCH --nodes=4",
        "#SBATCH --ntasks-per-node=1",
        "#SBATCH --gpus-per-node=8",
        "#SBATCH --signal=B:USR1@150",  # trial s27: save before the --time limit (s49: then requeue)
        "#SBATCH --requeue",  # trial s27a: a failed node or a preemption requeues, and the job resumes
        "#SBATCH --open-mode=append",  # and the requeued attempt's output does not erase the first's
        '--nnodes "$SLURM_NNODES" --nproc-per-node 8',
        '--rdzv-backend c10d --rdzv-endpoint "$head_node:29500" --rdzv-id "$SLURM_JOB_ID"',
        'srun --kill-on-bad-exit=1 "$PYTHON" -m trainer.torchrun',
        "predicted: 1,800 steps in 1.5 minutes",
    ):  # 0.05 s a step
        assert line in script
    subprocess.run(["bash", "-n", str(job_dir / "slurm.sbatch")], check=True)
    env = fake_tools(tmp_path / "bin", tmp_path / "argv")
    env.update(SLURM_JOB_NODELIST="node-[a-b]", SLURM_NNODES="4", SLURM_JOB_ID="77")
    subprocess.run(["bash", str(job_dir / "slurm.sbatch")], check=True, env=env, cwd=tmp_path)
    assert recorded_argv(tmp_path / "argv") == [
        "--nnodes",
        "4",
        "--nproc-per-node",
        "8",
        "--rdzv-backend",
        "c10d",
        "--rdzv-endpoint",
        "node-a:29500",
        "--rdzv-id",
        "77",
        "-m",
        "trainer.worker",
        str(job_dir),
    ]
    assert not list(tmp_path.rglob("PWNED*"))


def test_a_moved_job_runs_from_where_it_is_submitted(tmp_path: Path) -> None:
    """Slurm runs a copy of the script, so it cannot find its own directory: a job moved or unzipped
    elsewhere (the app's zip, trial s25) runs from the directory it is submitted from, and with
    neither it says so; $TRAINPLAN_PYTHON names the interpreter."""
    emit_job(make_plan(num_nodes=2, gpus_per_node=8), tmp_path / "emitted", name="moved", run=RunSettings(steps=3))
    moved = tmp_path / "elsewhere" / "moved"
    moved.parent.mkdir()
    (tmp_path / "emitted").rename(moved)
    env = fake_tools(tmp_path / "bin", tmp_path / "argv")
    env.update(SLURM_JOB_NODELIST="node-a", SLURM_NNODES="2", SLURM_JOB_ID="5", SLURM_SUBMIT_DIR=str(moved))
    subprocess.run(["bash", str(moved / "slurm.sbatch")], check=True, env=env, cwd=moved)
    assert recorded_argv(tmp_path / "argv")[-1] == str(moved)
    env["SLURM_SUBMIT_DIR"] = str(tmp_path)
    proc = subprocess.run(["bash", str(moved / "slurm.sbatch")], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 2 and "submit from the job directory or set TRAINPLAN_JOB_DIR" in proc.stderr
    env["TRAINPLAN_JOB_DIR"] = str(moved)  # named: wins wherever it is submitted from
    subprocess.run(["bash", str(moved / "slurm.sbatch")], check=True, env=env, cwd=tmp_path)
    assert recorded_argv(tmp_path / "argv")[-1] == str(moved)
    env.update(JOB_DIR=str(tmp_path), PYTHON="/nonexistent")  # other tools' variables are not read
    (tmp_path / "bin" / "python").rename(tmp_path / "bin" / "venv-python")
    env.update(TRAINPLAN_PYTHON=str(tmp_path / "bin" / "venv-python"), RDZV_ENDPOINT="node-a:29500")
    subprocess.run(["bash", str(moved / "launch.sh")], check=True, env=env, cwd=tmp_path)
    assert recorded_argv(tmp_path / "argv")[-1] == str(moved)
    readme = (moved / "README.md").read_text()
    assert "`sbatch slurm.sbatch`" in readme  # and each node's commands (trial s49: `trainplan run .` stopped)
    assert "`trainplan run . --node-rank I --rdzv-endpoint NODE0:29500`" in readme
    assert "`NODE_RANK=I RDZV_ENDPOINT=NODE0:29500 bash launch.sh`" in readme


def _load_yaml(text: str) -> dict:
    try:
        import yaml
    except ImportError:  # JSON is a subset of YAML: without PyYAML, check the JSON part
        return json.loads("".join(line for line in text.splitlines(True) if not line.startswith("#")))
    return yaml.safe_load(text)


@pytest.mark.parametrize("num_nodes", [1, 3])
def test_k8s_manifest_is_a_valid_pytorchjob(tmp_path: Path, num_nodes: int) -> None:
    # A hostile GPU name must stay inside the comment header.
    plan = make_plan(num_nodes=num_nodes, gpus_per_node=2).model_copy(update={"gpu": "H100\nkind: Pod\n# x"})
    emit_job(plan, tmp_path / "job", name="Tiny_Run.1", run=RunSettings(), k8s_image="reg/trainplan:1")
    manifest = _load_yaml((tmp_path / "job" / "k8s.yaml").read_text())
    assert (manifest["apiVersion"], manifest["kind"]) == ("kubeflow.org/v1", "PyTorchJob")
    assert manifest["metadata"]["name"] == "tiny-run-1"
    spec = manifest["spec"]
    assert spec["nprocPerNode"] == "2"
    replicas = spec["pytorchReplicaSpecs"]
    assert replicas["Master"]["replicas"] == 1
    assert ("Worker" in replicas) == (num_nodes > 1)
    if num_nodes > 1:
        assert replicas["Worker"]["replicas"] == num_nodes - 1
    for replica in replicas.values():
        pod = replica["template"]["spec"]
        container = pod["containers"][0]
        assert container["name"] == "pytorch" and container["image"] == "reg/trainplan:1"
        assert container["resources"]["limits"]["nvidia.com/gpu"] == 2
        # trial s27a: no CPU or memory request made the pods BestEffort, evicted first; /dev/shm unbounded
        assert container["resources"]["requests"] == {"nvidia.com/gpu": 2, "cpu": "8", "memory": "18Gi"}
        assert "memory" not in container["resources"]["limits"]
        (shm,) = [v for v in pod["volumes"] if v["name"] == "dshm"]
        assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": "2Gi"}
        command = container["command"]
        # trainer.torchrun exits 143 on SIGTERM: a preempted pod is retried under restartPolicy ExitCode
        assert command[:7] == ["python", "-m", "trainer.torchrun", "--nnodes", str(num_nodes), "--nproc-per-node", "2"]
        assert replica["restartPolicy"] == "ExitCode"
        assert command[-3:] == ["-m", "trainer.worker", "/jobs/Tiny_Run.1"]
        claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v]
        assert claims == ["trainplan-jobs"]
        assert {"name": "jobs", "mountPath": "/jobs"} in container["volumeMounts"]


# --------------------------------------------------------------------------- the launcher


FAKE_TRAINER = textwrap.dedent('''
    """Stand-in for trainer.train: records what it was given, then behaves as MODE says."""
    import fcntl, json, os, signal, sys, time
    from pathlib import Path

    job_dir = Path(sys.argv[1])
    mode = os.environ.get("FAKE_MODE", "ok")
    runs = job_dir / "fake_runs.jsonl"
    try:
        lock = os.open(job_dir / ".lock", os.O_RDWR)
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        locked = False
    except BlockingIOError:
        locked = True
    job = json.loads((job_dir / "job.json").read_text())
    with runs.open("a") as out:
        out.write(json.dumps({"argv": sys.argv[1:], "world": os.environ["WORLD_SIZE"], "rank": os.environ["RANK"],
                              "locked": locked, "micro_batch": job["plan"]["training"]["micro_batch"]}) + "\\n")
    if mode == "replan" and job["plan"]["training"]["micro_batch"] == 1:
        if os.environ["RANK"] == "0":
            (job_dir / "replan_needed.json").write_text(
                json.dumps({"reason": "probe too big", "measured": {"peak_gib": 91.5}, "capacity_gib": 80})
            )
        sys.exit(3)
    if mode == "sleep":
        def stop(signum, frame):
            (job_dir / f"got_signal_{os.environ['RANK']}").write_text(str(signum))
            sys.exit(143)
        signal.signal(signal.SIGTERM, stop)
        (job_dir / "started").write_text("")
        time.sleep(60)
''')


@pytest.fixture
def fake_trainer(tmp_path: Path, monkeypatch) -> Path:
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "fake_trainer.py").write_text(FAKE_TRAINER)
    monkeypatch.setenv("PYTHONPATH", f"{modules}:{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    job_dir = tmp_path / "job"
    emit_job(make_plan(gpus_per_node=2), job_dir, name="fake", run=RunSettings())
    return job_dir


def _runs(job_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (job_dir / "fake_runs.jsonl").read_text().splitlines()]


def test_run_job_starts_the_plans_world_and_holds_the_lock(fake_trainer: Path) -> None:
    code = run_job(fake_trainer, NodeLaunch(device="cpu", steps=3, module="fake_trainer"))
    assert code == 0
    runs = _runs(fake_trainer)
    assert sorted(r["rank"] for r in runs) == ["0", "1"] and {r["world"] for r in runs} == {"2"}
    assert all(r["argv"] == [str(fake_trainer), "--device", "cpu", "--steps", "3"] for r in runs)
    assert all(r["locked"] for r in runs)  # the lock is held while the trainer runs
    with job_lock(fake_trainer):  # ... and released afterwards
        pass


def test_second_run_on_the_same_directory_refuses(fake_trainer: Path) -> None:
    with (
        job_lock(fake_trainer),
        pytest.raises(JobDirLockedError, match=rf"job dir .*job is already being run by pid {os.getpid()} "),
    ):
        run_job(fake_trainer, NodeLaunch(device="cpu", module="fake_trainer"))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import sys, time
        from trainer.launch import job_lock
        with job_lock({str(fake_trainer)!r}):
            print("locked", flush=True)
            time.sleep(30)
        """),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(JobDirLockedError, match=f"already being run by pid {holder.pid} on"):
            run_job(fake_trainer, NodeLaunch(device="cpu", module="fake_trainer"))
        assert launch.main([str(fake_trainer), "--device", "cpu"]) == 2
    finally:
        holder.kill()
        holder.wait()
    assert not (fake_trainer / "fake_runs.jsonl").exists()


def test_replan_needed_is_reported_and_refused_without_auto_replan(fake_trainer: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("FAKE_MODE", "replan")
    assert run_job(fake_trainer, NodeLaunch(device="cpu", nproc=1, module="fake_trainer")) == 3
    err = capsys.readouterr().err
    assert 'measured: {"peak_gib": 91.5, "reserved_gib": null}' in err and "--auto-replan" in err
    from planner.errors import Constraint, InfeasiblePlan

    def nothing_fits(plan, report):
        raise InfeasiblePlan(Constraint.MEMORY, "needs 95.0 GiB per GPU", "use more GPUs")

    monkeypatch.setattr("planner.api.replan", nothing_fits)
    assert run_job(fake_trainer, NodeLaunch(device="cpu", nproc=1, module="fake_trainer"), auto_replan=True) == 3
    assert "no layout of" in capsys.readouterr().err
    assert JobSpec.load(fake_trainer).plan.training.micro_batch == 1


def test_auto_replan_rewrites_the_job_and_continues(fake_trainer: Path, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_MODE", "replan")
    seen = []

    def replan(plan: Plan, correction: ReplanRequest) -> Plan:
        seen.append(correction)
        return plan.model_copy(update={"training": plan.training.model_copy(update={"micro_batch": 2})})

    monkeypatch.setattr("planner.api.replan", replan)
    # review s27: the re-emitted k8s.yaml went back to the default image and claim
    emit_job(
        JobSpec.load(fake_trainer).plan, fake_trainer, name="fake", run=RunSettings(), force=True,
        k8s_image="reg.example/tp:2", k8s_pvc="team-jobs", cluster=ClusterSettings(slurm_gpu_type="h100"),
    )  # fmt: skip
    before = JobSpec.load(fake_trainer)
    assert run_job(fake_trainer, NodeLaunch(device="cpu", nproc=1, module="fake_trainer"), auto_replan=True) == 0
    manifest = _load_yaml((fake_trainer / "k8s.yaml").read_text())
    pod = manifest["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "reg.example/tp:2" and "team-jobs" in json.dumps(pod["volumes"])
    assert seen == [ReplanRequest(reason="probe too big", measured={"peak_gib": 91.5}, capacity_gib=80)]
    after = JobSpec.load(fake_trainer)
    assert after.plan.training.micro_batch == 2 and after.run == before.run and after.name == before.name
    assert (
        after.cluster == before.cluster
        and "#SBATCH --gpus-per-node=h100:" in (fake_trainer / "slurm.sbatch").read_text()
    )
    assert JobSpec.model_validate_json((fake_trainer / "job.replan-1.json").read_text()) == before
    assert [r["micro_batch"] for r in _runs(fake_trainer)] == [1, 2]
    assert (fake_trainer / "replan_needed.1.json").exists() and not (fake_trainer / "replan_needed.json").exists()


def test_sigterm_reaches_the_trainer(fake_trainer: Path) -> None:
    env = dict(os.environ, FAKE_MODE="sleep")
    runner = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainer.launch",
            str(fake_trainer),
            "--device",
            "cpu",
            "--nproc",
            "1",
            "--module",
            "fake_trainer",
        ],
        env=env,
        cwd=REPO,
    )
    deadline = time.monotonic() + 60
    while not (fake_trainer / "started").exists():
        assert runner.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(60) != 0
    assert (fake_trainer / "got_signal_0").read_text() == str(int(signal.SIGTERM))


def test_multi_node_plans_need_rendezvous_options(tmp_path: Path) -> None:
    emit_job(make_plan(num_nodes=2, gpus_per_node=1), tmp_path / "job", name="two", run=RunSettings())
    with pytest.raises(ValueError, match="the plan spans 2 nodes"):
        run_job(tmp_path / "job", NodeLaunch(device="cpu"))
    with pytest.raises(ValueError, match="--auto-replan works on single-node runs"):
        run_job(tmp_path / "job", NodeLaunch(device="cpu", rdzv_endpoint="h:1"), auto_replan=True)


# --------------------------------------------------------------------------- two nodes, end to end


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
@pytest.mark.skipif(not (REPO / "trainer" / "train.py").exists(), reason="trainer/train.py is not written yet")
def test_two_torchrun_agents_train_a_tiny_job(tmp_path: Path) -> None:
    """Node 0 via `python -m trainer.launch` (lock, data), node 1 via the emitted launch.sh."""
    job_dir = tmp_path / "job"
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"text": f"Document {i} about the river and the stone bridge."}) + "\n" for i in range(300))
    )
    emit_job(
        make_plan(num_nodes=2, gpus_per_node=1, seq_len=32),
        job_dir,
        name="two-nodes",
        run=RunSettings(steps=2, checkpoint_every=2, probe_steps=0, warmup_steps=0, data=str(corpus)),
    )
    endpoint = f"127.0.0.1:{_free_port()}"
    env = dict(os.environ, OMP_NUM_THREADS="1", PATH=f"{VENV_BIN}:{os.environ['PATH']}")
    node0 = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainer.launch",
            str(job_dir),
            "--device",
            "cpu",
            "--nnodes",
            "2",
            "--node-rank",
            "0",
            "--rdzv-endpoint",
            endpoint,
        ],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    node1 = subprocess.Popen(
        ["bash", str(job_dir / "launch.sh"), "--device", "cpu"],
        env=dict(env, NODE_RANK="1", RDZV_ENDPOINT=endpoint),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        out0, _ = node0.communicate(timeout=240)
        out1, _ = node1.communicate(timeout=60)
    finally:
        for proc in (node0, node1):
            if proc.poll() is None:
                proc.kill()
    assert node0.returncode == 0, out0[-3000:]
    assert node1.returncode == 0, out1[-3000:]
    assert "300 kept" in out0  # node 0's launcher prepared the shards before torchrun started
    assert json.loads((job_dir / "data" / "meta.json").read_text())["cleaning"]["num_kept"] == 300
    report = json.loads((job_dir / "report.json").read_text())  # written by the trainer's rank 0
    assert report["steps_done"] == 2 and "dp_shard=2" in report["layout"], report
    assert (job_dir / "ckpt" / "step-000002").is_dir()


def test_a_world_the_layout_cannot_take_is_refused_before_torchrun(tmp_path: Path) -> None:
    """--nproc 1 under a layout of 2 shards: the workers' own check, in one line before any process
    starts; --nnodes on a one-node plan is named as the flag's, not the plan's."""
    plan = make_plan(gpus_per_node=2)
    emit_job(plan, tmp_path / "job", name="two", run=RunSettings())
    with pytest.raises(ValueError, match=r"does not fit the 1 process this run starts"):
        run_job(tmp_path / "job", NodeLaunch(device="cpu", nproc=1))
    with pytest.raises(
        ValueError, match="--nnodes 2 asks for 2 nodes, which meet at a rendezvous: pass --rdzv-endpoint HOST:PORT"
    ):
        run_job(tmp_path / "job", NodeLaunch(device="cpu", nnodes=2))


def test_the_warmup_scales_with_the_job_unless_given(tmp_path: Path) -> None:
    """trial s25: a 143k-step job warmed up over RunSettings' 5 steps, and emit could not change it."""
    from trainer.job import MAX_DEFAULT_WARMUP_STEPS, warmup_schedule

    assert warmup_schedule(RunSettings(steps=20)).warmup_steps == 5  # a trial keeps the default
    # trial s45: a shorter trial warmed up over 5 steps and never reached the peak emit names
    assert [warmup_schedule(RunSettings(steps=n)).warmup_steps for n in (1, 3, 6)] == [0, 2, 5]
    assert warmup_schedule(RunSettings(steps=50_000)).warmup_steps == 500
    assert warmup_schedule(RunSettings(steps=143_052)).warmup_steps == 1_431
    assert warmup_schedule(RunSettings(steps=400_000)).warmup_steps == MAX_DEFAULT_WARMUP_STEPS
    assert warmup_schedule(RunSettings(steps=143_052, warmup_steps=7)).warmup_steps == 7
    emit_job(make_plan(), tmp_path / "job", name="long", run=RunSettings(steps=60_000, lr=1.5e-4))
    run = JobSpec.load(tmp_path / "job").run
    assert (run.warmup_steps, run.lr) == (600, 1.5e-4)


def test_emit_takes_the_learning_rate_and_warmup_and_says_them(tmp_path: Path, capsys) -> None:
    from ui.cli import main

    plan_file = tmp_path / "plan.json"
    assert main(["estimate", "--model", "tiny", "--gpu", "h100-sxm", "--num-gpus", "1", "--out", str(plan_file)]) == 0
    out = tmp_path / "job"
    assert (
        main(["emit", str(plan_file), "--out", str(out), "--steps", "3000", "--lr", "2e-4", "--warmup-steps", "40"])
        == 0
    )
    assert "optimizer: AdamW, peak lr 0.0002 after 40 warmup steps, cosine to 0.1 x" in capsys.readouterr().out
    assert (JobSpec.load(out).run.lr, JobSpec.load(out).run.warmup_steps) == (2e-4, 40)
    assert main(["emit", str(plan_file), "--out", str(out), "--steps", "10", "--warmup-steps", "50"]) == 2
    assert "--warmup-steps 50: at least the job's 10 steps" in capsys.readouterr().err


def test_a_collective_that_lost_its_peer_is_told_from_other_errors() -> None:
    """trainer/train.py peer_lost: NCCL's DistError, gloo's transport error (as torch 2.13 words it)."""
    import torch.distributed as dist

    from trainer.train import peer_lost

    gloo = "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer"
    assert peer_lost(RuntimeError(gloo)) and peer_lost(dist.DistNetworkError("connection reset"))
    assert not peer_lost(RuntimeError("CUDA out of memory")) and not peer_lost(RuntimeError("shape mismatch"))
    # a rank's own NCCL fault or a store failure is its own, and keeps its traceback (review s25)
    assert not peer_lost(dist.DistBackendError("NCCL error: unhandled cuda error")) and not peer_lost(
        dist.DistStoreError("timeout")
    )
    # trial s27a: NCCL's ncclRemoteError, as ProcessGroupNCCL words it, is a peer's
    nccl = (
        "NCCL error in: ProcessGroupNCCL.cpp:3345, remote process exited or there was a network error,"
        " NCCL version 2.27.3\nncclRemoteError: A call failed possibly due to a network error or a remote"
        " process exiting prematurely.\nLast error:\nsocketProgress: Connection closed by remote peer"
    )
    assert peer_lost(dist.DistBackendError(nccl)) and not peer_lost(RuntimeError(nccl.replace("remote process", "x")))


def test_a_rank_whose_peer_died_stops_in_one_line_and_keeps_its_traceback(tmp_path: Path, monkeypatch, capsys) -> None:
    import trainer.train as train

    gloo = "[/x/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:1."

    def peer_died(*_args):
        raise RuntimeError(gloo)

    monkeypatch.setattr(train, "train", peer_died)
    monkeypatch.setenv("RANK", "1")
    # retryable (trial s27: 1 is permanent under Kubernetes' restartPolicy ExitCode, so a multi-node
    # job whose node was preempted failed instead of resuming)
    assert train.main([str(tmp_path), "--device", "cpu"]) == ExitCode.PEER_LOST >= 128
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("rank 1: a peer rank stopped during a collective") and "Traceback" not in line
    assert "Connection closed by peer" in (tmp_path / "logs" / "rank-1.traceback").read_text()


def test_a_run_on_fewer_processes_than_the_plan_names_its_nodes(tmp_path: Path, capsys) -> None:
    """trial s25: `run --nproc 2` of an 8-node plan said "the 16 processes this run starts" unexplained."""
    from ui.cli import main

    plan_file = tmp_path / "plan.json"
    assert main(["estimate", "--model", "tiny", "--gpu", "h100-sxm", "--num-gpus", "16", "--out", str(plan_file)]) == 0
    assert main(["emit", str(plan_file), "--out", str(tmp_path / "job"), "--steps", "2"]) == 0
    capsys.readouterr()
    assert main(["run", str(tmp_path / "job"), "--device", "cpu", "--nproc", "2"]) == 2
    assert "the 4 processes this run starts (2 nodes x 2; --nnodes sets the nodes)" in capsys.readouterr().err


def test_emit_sets_the_k8s_image_and_claim_and_refuses_names_kubernetes_would(tmp_path: Path, capsys) -> None:
    """Trial s27: the image and PVC could be set only through the Python API, so every k8s.yaml
    said trainplan:latest and trainplan-jobs; and a job named "70b-run" was refused by the operator."""
    from ui.cli import main

    plan_file = tmp_path / "plan.json"
    make_plan(num_nodes=2, gpus_per_node=2, gpu="h100-sxm").save(plan_file)
    base = ["emit", str(plan_file), "--name", "70b-run", "--k8s-image", "reg.example/tp:1.0", "--k8s-pvc", "team-jobs"]
    assert main([*base, "--out", str(tmp_path / "job")]) == 0
    manifest = _load_yaml((tmp_path / "job" / "k8s.yaml").read_text())
    pod = manifest["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert manifest["metadata"]["name"] == "j-70b-run" and pod["containers"][0]["image"] == "reg.example/tp:1.0"
    assert {"name": "jobs", "persistentVolumeClaim": {"claimName": "team-jobs"}} in pod["volumes"]
    capsys.readouterr()
    for flag, bad in (("--k8s-pvc", "Team_Jobs"), ("--k8s-image", "has space")):
        assert main([*base, flag, bad, "--out", str(tmp_path / bad.replace(" ", "-"))]) == 2
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert line.startswith(f"trainplan: error: {flag} ")


def test_a_node_says_it_waits_at_the_rendezvous(tmp_path: Path, monkeypatch, capsys) -> None:
    """Trial s27: node 0 of a 2-node run printed nothing for a minute while node 1 never came."""
    emit_job(make_plan(num_nodes=2, gpus_per_node=1), tmp_path / "job", name="two", run=RunSettings())
    monkeypatch.setattr(launch, "run_child", lambda *_args, **_kwargs: 0)
    assert run_job(tmp_path / "job", NodeLaunch(device="cpu", node_rank=0, rdzv_endpoint="localhost:29555")) == 0
    assert "trainplan: node 0 of 2: waiting at localhost:29555 until every node joins" in capsys.readouterr().err


def test_a_pod_requests_the_host_memory_its_offloaded_states_take() -> None:
    plan = make_plan(num_nodes=1, gpus_per_node=8)
    assert host_requests(plan) == {"cpu": "32", "memory": "72Gi"}
    memory = plan.estimate.memory.model_copy(update={"host_gib_per_node": 300.2})
    offloaded = plan.model_copy(update={"estimate": plan.estimate.model_copy(update={"memory": memory})})
    assert host_requests(offloaded)["memory"] == "373Gi"


def test_slurms_warning_signal_leaves_time_for_three_checkpoint_writes() -> None:
    from trainer.job_scripts import stop_grace_s

    plan = make_plan(num_nodes=1, gpus_per_node=2)
    assert stop_grace_s(plan) == 120  # a tiny model writes in well under a second
    from planner.estimate_parts import GoodputEstimate

    goodput = GoodputEstimate.model_construct(checkpoint_write_s=100.0)  # a 100 s save
    slow = plan.model_copy(update={"estimate": plan.estimate.model_copy(update={"goodput": goodput})})
    assert stop_grace_s(slow) == 301  # and two 0.05 s steps (trial s45)


def test_a_lost_peer_is_retryable_only_when_every_failed_worker_lost_one() -> None:
    """Review s27: the lowest rank's code won, so a rank's own failure (1, 2, an OOM kill's -9) beside
    its peers' 144 became retryable, and Kubernetes restarted a permanent failure in a loop."""
    import types

    from trainer.torchrun import failure_code

    def failed(*codes: int) -> int:
        failures = {rank: types.SimpleNamespace(exitcode=code) for rank, code in enumerate(codes)}
        return failure_code(types.SimpleNamespace(failures=failures))

    lost = ExitCode.PEER_LOST
    assert failed(lost, lost) == lost and failed(lost) == lost  # a node of a multi-node job was preempted
    assert failed(lost, 2) == 2 and failed(lost, 4, 2) == 4  # the rank's own code, lowest rank first
    assert failed(lost, 1) == failed(lost, -9) == ExitCode.FAILED  # a crash or a kill: not retried
    # the ranks the agent SIGTERMed after the first failure echo it (trial s47)
    assert failed(lost, -15) == lost and failed(-15, -9) == failed(-15, -15) == ExitCode.FAILED


def test_trainplan_run_keeps_a_killed_ranks_failure_permanent(tmp_path: Path) -> None:
    """Trial s47: rank 1 SIGKILLed, rank 0 stopped with 144 (its peer lost) and wrote it to
    exit_status.json; torchrun said 1 (a kill is not retried) but `trainplan run` returned 144."""
    from trainer.launch import worker_exit_code

    status = tmp_path / "exit_status.json"
    status.write_text(json.dumps({"code": ExitCode.PEER_LOST}))
    assert worker_exit_code(tmp_path, ExitCode.FAILED) == ExitCode.FAILED
    assert worker_exit_code(tmp_path, ExitCode.PEER_LOST) == ExitCode.PEER_LOST  # torchrun's own judgement
    status.write_text(json.dumps({"code": ExitCode.DIVERGED}))
    assert worker_exit_code(tmp_path, ExitCode.FAILED) == ExitCode.DIVERGED


def test_a_lost_rendezvous_store_is_one_line_and_retryable(monkeypatch, capsys) -> None:
    """Trial s37: with the head node (its rendezvous store) lost, the surviving node's agent raised
    RendezvousConnectionError: ~100 lines of traceback and torchrun's 1, a permanent failure under
    Kubernetes' restartPolicy ExitCode. Now one line and 144; a rendezvous that timed out says so."""
    import torch.distributed.run as torch_run
    from torch.distributed.elastic.rendezvous.api import RendezvousConnectionError, RendezvousTimeoutError

    from trainer.torchrun import main

    for error, words, code in (
        (RendezvousConnectionError("The connection to the C10d store has failed."), "lost the rendezvous", 144),
        (RendezvousTimeoutError("the join timed out"), "the rendezvous timed out", ExitCode.INVALID),
    ):

        def fail(_args, error=error):
            raise error

        monkeypatch.setattr(torch_run, "run", fail)
        assert main(["--nproc-per-node", "1", "train.py"]) == code
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and words in err and "Traceback" not in err


def test_a_full_disk_outside_a_checkpoint_names_the_file_and_exits_4(tmp_path: Path, monkeypatch, capsys) -> None:
    """Trial s37: emit onto a full disk said "No space left on device" with no path, exit 2, and
    left .job.json.tmp behind, so the retry refused the directory as "not empty and holds no job";
    docs/trainer.md says ENOSPC anywhere is exit 4."""
    import errno

    import trainer.files as files
    from ui.cli import main

    plan = jobs.make_plan(Layout(dp_shard=1), TrainingConfig(seq_len=32, micro_batch=2, precision="fp32"), 1)
    plan_file = plan.save(tmp_path / "plan.json")
    real_fsync = os.fsync

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", full)
    out = tmp_path / "job"
    assert main(["emit", str(plan_file), "--out", str(out)]) == ExitCode.DISK_FULL
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{out / 'job.json'}: disk full (No space left on device)" in err
    assert not list(out.glob(".*.tmp"))
    monkeypatch.setattr(files.os, "fsync", real_fsync)
    assert main(["emit", str(plan_file), "--out", str(out)]) == ExitCode.OK  # the retry is not refused


def test_slurms_time_advice_reads_the_bands_pessimistic_end(tmp_path: Path) -> None:
    """Trial s28c: the script advised --time from the point estimate (78 h) where the portfolio
    had scheduled the job at its p80 (115 h)."""
    import re

    from planner.api import build_plan
    from planner.catalog.models import get_preset
    from planner.layout import Layout, TrainingConfig
    from trainer.job_scripts import allocation_s, p80_factor

    plan = build_plan(
        get_preset("llama3.2-1b"), "h100-sxm", Layout(dp_shard=16), TrainingConfig(seq_len=2048),
        num_gpus=16, training_tokens=1e10,
    )  # fmt: skip
    assert p80_factor(plan) > 1.0
    spec = JobSpec.load(emit_job(plan, tmp_path / "job", name="p80", run=RunSettings(steps=100_000)).parent)
    script = (tmp_path / "job" / "slurm.sbatch").read_text()
    wall, at_p80, fixed = allocation_s(spec)
    assert at_p80 - fixed == pytest.approx((wall - fixed) * p80_factor(plan)) and at_p80 > wall
    words = re.search(r"predicted: 100,000 steps in ([\d.,]+ \w+), ([\d.,]+ \w+) at p80", script).groups()
    assert words == (duration_words(wall), duration_words(at_p80))


def test_the_slurm_time_advice_counts_start_up_and_checkpoint_writes(tmp_path: Path) -> None:
    """Trial s33: "200 steps = 0.00 h of training ... add a --time limit above that", below the
    ten-minute start-up every allocation pays."""
    import numpy as np

    from planner.api import build_plan
    from planner.catalog.models import get_preset
    from planner.model.goodput import run_losses
    from planner.model.settings import DEFAULT_SETTINGS
    from trainer.job_scripts import allocation_s, render_slurm

    plan = build_plan(
        get_preset("tiny"), "h100-sxm", Layout(), TrainingConfig(seq_len=256), num_gpus=1, training_tokens=1e7
    )
    spec = JobSpec.load(emit_job(plan, tmp_path / "job", name="short", run=RunSettings(steps=200)).parent)
    g = spec.plan.estimate.goodput
    wall, at_p80, fixed = allocation_s(spec)
    writes = -(-200 // spec.run.checkpoint_every)  # and the last step's save
    assert fixed == pytest.approx(g.startup_s + writes * g.checkpoint_write_s) and g.startup_s >= 60
    # the goodput model's own factor (planner/model/goodput.py run_losses), not a copy of it
    losses = run_losses(np.array([1.0]), np.array([1.0]), DEFAULT_SETTINGS)
    steps = 200 * spec.plan.estimate.time.step_s * float(losses.step_factor[0])
    assert wall == pytest.approx(fixed + steps, rel=1e-6) and at_p80 >= wall
    older = spec.model_copy(update={"plan": spec.plan.model_copy(update={"estimate": spec.plan.estimate.model_copy(
        update={"goodput": None})})})  # fmt: skip
    assert allocation_s(older)[2] == 0.0 and "included" not in render_slurm(older, tmp_path / "job")


def test_emit_refuses_new_training_settings_over_a_jobs_checkpoints(tmp_path: Path) -> None:
    """Trial s33: --lr 1e-2 was written over a job with checkpoints, exit 0, and the resumed run
    kept the old peak. Settings that change what is trained need --force there; others do not."""
    plan, job_dir = make_plan(), tmp_path / "job"
    emit_job(plan, job_dir, name="job", run=RunSettings(steps=40))
    emit_job(plan, job_dir, name="job", run=RunSettings(steps=40, lr=1e-2))  # no checkpoints yet: fine
    (job_dir / CHECKPOINT_DIR / "step-000020").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"checkpoints \(up to step 20\) under other settings \(lr 0.01 -> 0.02\)"):
        emit_job(plan, job_dir, name="job", run=RunSettings(steps=40, lr=2e-2))
    emit_job(plan, job_dir, name="job", run=RunSettings(steps=40, lr=1e-2, checkpoint_every=5))  # when, not what
    emit_job(plan, job_dir, name="job", run=RunSettings(steps=40, lr=2e-2), force=True)
    assert JobSpec.load(job_dir).run.lr == 2e-2


def test_one_node_job_files_count_in_words(tmp_path: Path) -> None:
    """Trial s33: "1 node(s)", "NODE_RANK=<0..0>" in a one-node job's files."""
    emit_job(make_plan(), tmp_path / "one", name="one", run=RunSettings())
    emit_job(make_plan(num_nodes=2, gpus_per_node=4), tmp_path / "two", name="two", run=RunSettings())
    one = {f: (tmp_path / "one" / f).read_text() for f in ("launch.sh", "slurm.sbatch", "README.md")}
    assert not any("node(s)" in text for text in one.values()) and "(1 node)" in one["launch.sh"]
    assert "NODE_RANK=<" not in one["launch.sh"]
    assert "NODE_RANK=<0..1>" in (tmp_path / "two" / "launch.sh").read_text()


def test_emit_sets_validation_and_checkpoint_retention(tmp_path: Path) -> None:
    """Trial s37: eval_every and keep_checkpoints could only be set by hand-editing job.json."""
    from ui.cli import main

    plan = jobs.make_plan(Layout(dp_shard=1), TrainingConfig(seq_len=32, micro_batch=2, precision="fp32"), 1)
    plan_file = plan.save(tmp_path / "plan.json")
    out = tmp_path / "job"
    assert main(["emit", str(plan_file), "--out", str(out), "--eval-every", "10", "--keep-checkpoints", "3"]) == 0
    run = JobSpec.load(out).run
    assert (run.eval_every, run.keep_checkpoints) == (10, 3)
    assert main(["emit", str(plan_file), "--out", str(tmp_path / "bad"), "--keep-checkpoints", "0"]) == 2


def test_a_refusal_names_the_flags_of_the_command_that_emits(tmp_path: Path) -> None:
    """fleet51 L2: portfolio --emit into another plan's job directory was told to use --out or --force,
    flags portfolio lacks, and of "its checkpoints" where there were none."""
    from trainer.job import EmitFlags, emit_job
    from trainer.job_spec import RunSettings

    small = jobs.make_plan(Layout(dp_shard=1), TrainingConfig(seq_len=32, micro_batch=2, precision="fp32"), 1)
    other = jobs.make_plan(
        Layout(dp_shard=1, sharding="zero1"), TrainingConfig(seq_len=32, micro_batch=2, precision="fp32"), 1
    )
    target = tmp_path / "job"
    emit_job(small, target, name="a", run=RunSettings(steps=2))
    assert other.layout != small.layout
    for flags, said, unsaid in (
        (EmitFlags(), f"--out {target}: holds another job", ()),
        (EmitFlags(out="--emit", force=False), f"--emit {target}: holds another job", ("--force", "--out")),
    ):
        with pytest.raises(ValueError) as info:
            emit_job(other, target, name="b", run=RunSettings(steps=2), flags=flags)
        words = str(info.value)
        assert words.startswith(said) and "checkpoints" not in words and not any(u in words for u in unsaid)
    assert str(info.value).endswith("emit into a new directory")
