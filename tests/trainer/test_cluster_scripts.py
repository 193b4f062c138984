"""What slurm.sbatch and k8s.yaml pin beyond the plan's counts (trial s49 M3, L1, L4): the GPU type,
the network's RDMA device, whole nodes only for a plan that fills them, a --time limit and the
self-requeue at it, and emit's "run it" line."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest
from support import jobs

from planner.catalog.detect import match_gpu_name
from planner.catalog.hardware import load_catalog
from planner.layout import Layout, Precision, TrainingConfig
from planner.plan import Plan
from trainer.cluster import AMD_K8S, K8S_VENDORS, NVIDIA_K8S, format_slurm_time, k8s_gpu, slurm_time_s
from trainer.job import emit_job
from trainer.job_k8s import K8S_DEADLINE_FACTOR
from trainer.job_scripts import (
    SLURM_ALLOCATION_CAP_S,
    allocation_s,
    p80_factor,
    slurm_signal_lead_s,
    whole_run_limit_s,
)
from trainer.job_spec import K8S_LABEL_VALUE_PATTERN, ClusterSettings, JobSpec, RunSettings


def make_plan(num_nodes: int = 1, gpus_per_node: int = 8, gpu: str = "h100-sxm") -> Plan:
    num_gpus = num_nodes * gpus_per_node
    training = TrainingConfig(seq_len=64, micro_batch=1, precision=Precision.FP32)
    return jobs.make_plan(Layout(dp_shard=num_gpus), training, num_gpus, num_nodes=num_nodes, gpu=gpu)


def emitted(
    tmp_path: Path, plan: Plan, cluster: ClusterSettings | None = None, name: str = "job", checkpoints: bool = True
) -> Path:
    job_dir = tmp_path / name
    emit_job(plan, job_dir, name=name, run=RunSettings(steps=100, save_checkpoints=checkpoints), cluster=cluster)
    return job_dir


def directives(job_dir: Path) -> list[str]:
    return [
        line.removeprefix("#SBATCH ")
        for line in (job_dir / "slurm.sbatch").read_text().splitlines()
        if line.startswith("#SBATCH ")
    ]


def manifest(job_dir: Path) -> tuple[str, dict]:
    import yaml

    text = (job_dir / "k8s.yaml").read_text()
    return text, yaml.safe_load(text)


NAMED_GPUS = sorted(gpu.id for gpu in load_catalog().gpus.values() if gpu.device_name is not None)
# GPUs whose measured name is known: what torch.cuda.get_device_name reports, the name the probe's
# "ran on another GPU" check and calibration files see (device_name where the two agree, as NVML's
# and CUDA's do).
TORCH_NAMED_GPUS = sorted(
    gpu.id for gpu in load_catalog().gpus.values() if (gpu.torch_device_name or gpu.device_name) is not None
)


@pytest.mark.parametrize("gpu_id", TORCH_NAMED_GPUS)
def test_each_catalog_gpus_measured_name_is_the_device_the_catalog_matches(gpu_id: str) -> None:
    """The name torch reports for a GPU maps back to its entry through the catalog's own matcher
    (planner/catalog/detect.py, which trainer/probe.py measured_gpu runs on that name), so a run on it is
    compared with its plan; on ROCm that is HIP's marketing name, not the board's sysfs product_name."""
    catalog = load_catalog()
    gpu = catalog.gpu(gpu_id)
    measured = gpu.torch_device_name or gpu.device_name
    assert match_gpu_name(measured, gpu.memory_bytes, catalog).id == gpu_id
    if gpu.device_name is not None:
        product = k8s_gpu(gpu_id).product
        assert product is not None and " " not in product and re.fullmatch(K8S_LABEL_VALUE_PATTERN, product)


def test_every_amd_device_name_comes_with_the_name_torch_reports() -> None:
    """On ROCm the board's sysfs product_name (device_name, the labeller's) and HIP's marketing name differ
    ("AMD Instinct MI325 OAM" against "AMD Instinct MI325X": the label drops the X), so an AMD entry with a
    device name must say what torch reports, or the matcher test above would check the wrong form."""
    for gpu in load_catalog().gpus.values():
        if gpu.vendor == "amd" and gpu.device_name is not None:
            assert gpu.torch_device_name not in (None, gpu.device_name), gpu.id


@pytest.mark.parametrize(
    "name, gpu_id",
    [
        ("AMD Instinct MI300X", "mi300x"),  # torch's (vLLM's AMD_Instinct_MI300X)
        ("AMD Instinct MI300X OAM", "mi300x"),  # the board's sysfs product_name (the labeller's)
        ("AMD Instinct MI250X", "mi250x"),  # amdgpu.ids' other MI250X id, 0x7408
    ],
)
def test_both_forms_of_an_amd_name_that_keep_the_model_match_its_entry(name: str, gpu_id: str) -> None:
    """An MI300X reports "AMD Instinct MI300X" to torch and "AMD Instinct MI300X OAM" in sysfs: both keep
    the whole token "mi300x", so a calibration or probe on either form is matched to the MI300X."""
    catalog = load_catalog()
    assert match_gpu_name(name, catalog.gpu(gpu_id).memory_bytes, catalog).id == gpu_id


def test_the_catalog_names_every_nvidia_device_and_labels_it_as_its_vendor_does() -> None:
    """Every NVIDIA GPU had a name in trainer/cluster.py's table; the catalog keeps them all (h800 as its
    devices report it, "NVIDIA H800"). Labels: GPU feature discovery's dashes, AMD's labeller's underscores."""
    gpus = load_catalog().gpus.values()
    assert {gpu.id for gpu in gpus if gpu.vendor == "nvidia"} <= set(NAMED_GPUS)
    assert set(K8S_VENDORS) == {gpu.vendor for gpu in gpus}  # each vendor's components are known
    assert k8s_gpu("h100-sxm") == type(k8s_gpu("h100-sxm"))(NVIDIA_K8S, "NVIDIA-H100-80GB-HBM3")
    assert k8s_gpu("h800").product == "NVIDIA-H800"
    assert k8s_gpu("mi300x").vendor is AMD_K8S and k8s_gpu("mi300x").product == "AMD_Instinct_MI300X_OAM"
    assert AMD_K8S.product("AMD Instinct MI210 (OAM)") == "AMD_Instinct_MI210_OAM"  # the labeller drops ( )
    # AMD's boards name the MI325X, MI350X and MI355X without the X (sysfs product_name; node labels seen)
    assert [k8s_gpu(gpu).product for gpu in ("mi325x", "mi350x", "mi355x")] == [
        "AMD_Instinct_MI325_OAM",
        "AMD_Instinct_MI350_OAM",
        "AMD_Instinct_MI355_OAM",
    ]
    assert k8s_gpu("mi250x").product is None  # no sysfs name from a source: no selector, as before


def test_slurm_takes_whole_nodes_only_when_the_plan_fills_them(tmp_path: Path) -> None:
    """Trial s49: --exclusive took a whole 8-GPU node for a 1-GPU plan, and no --cpus-per-task gave
    the node's 8 workers one CPU where the allocation is not exclusive."""
    one = directives(emitted(tmp_path, make_plan(gpus_per_node=1), name="one"))
    assert "--exclusive" not in one
    assert {"--gpus-per-node=1", "--cpus-per-task=4", "--mem=9G"} <= set(one)  # the pod's requests, per GPU
    full = directives(emitted(tmp_path, make_plan(num_nodes=2, gpus_per_node=8), name="full"))
    assert {"--exclusive", "--cpus-per-task=32", "--gpus-per-node=8"} <= set(full)
    assert not any(d.startswith("--mem") for d in full)


def test_slurm_pins_the_gpu_type_and_features_only_when_given(tmp_path: Path) -> None:
    """GRES type names are each site's own (gres.conf), so none is guessed: the script says what to set."""
    plain = emitted(tmp_path, make_plan(num_nodes=2), name="plain")
    text = (plain / "slurm.sbatch").read_text()
    assert "# GPU type: any, though the plan is for h100-sxm" in text and "--slurm-gpu-type TYPE" in text
    assert "# Network: the predicted step assumes ib-ndr-400" in text
    assert not any(d.startswith("--constraint") for d in directives(plain))
    pinned = emitted(
        tmp_path, make_plan(num_nodes=2), ClusterSettings(slurm_gpu_type="h100", slurm_constraint="ib&h100"), "pinned"
    )
    assert {"--gpus-per-node=h100:8", "--constraint=ib&h100"} <= set(directives(pinned))
    assert "# GPU type: any" not in (pinned / "slurm.sbatch").read_text()
    assert not any(d.startswith("--partition") for d in directives(pinned))  # the cluster's default partition
    parted = emitted(tmp_path, make_plan(num_nodes=2), ClusterSettings(slurm_partition="h100-ib"), "parted")
    assert "--partition=h100-ib" in directives(parted)
    assert "assumes ib-ndr-400 between nodes (partition h100-ib)." in (parted / "slurm.sbatch").read_text()
    subprocess.run(["bash", "-n", str(pinned / "slurm.sbatch")], check=True)
    assert JobSpec.load(pinned).cluster.slurm_gpu_type == "h100"  # kept for a re-emit (run --auto-replan)


def test_slurm_time_is_the_p80_allocation_plus_the_stop_lead(tmp_path: Path) -> None:
    """Trial s49 L4: no --time, so the partition's default applied, and a job longer than it had to be
    resubmitted by hand."""
    from planner.api import build_plan
    from planner.catalog.models import get_preset

    plan = build_plan(
        get_preset("llama3.2-1b"), "h100-sxm", Layout(dp_shard=16), TrainingConfig(seq_len=2048),
        num_gpus=16, training_tokens=1e10,
    )  # fmt: skip
    job_dir = tmp_path / "job"
    spec = JobSpec.load(emit_job(plan, job_dir, name="p80", run=RunSettings(steps=100_000)).parent)
    wall, _, fixed = allocation_s(spec)
    limit_s = fixed + (wall - fixed) * p80_factor(plan) + slurm_signal_lead_s(plan)
    assert f"--time={format_slurm_time(limit_s)}" in directives(job_dir)
    assert abs(slurm_time_s(format_slurm_time(limit_s)) - limit_s) < 60  # whole minutes, rounded up
    # runner53 M1: pods that die by a signal are recreated without count; the deadline bounds the job
    text, job = manifest(job_dir)
    deadline_s = job["spec"]["runPolicy"]["activeDeadlineSeconds"]
    assert deadline_s == math.ceil(K8S_DEADLINE_FACTOR * limit_s)
    assert f"runPolicy.activeDeadlineSeconds {deadline_s} (" in text
    given = ClusterSettings(slurm_time="2-00:00:00")
    emit_job(plan, job_dir, name="p80", run=RunSettings(steps=100_000), cluster=given, force=True)
    assert "--time=2-00:00:00" in directives(job_dir)
    assert "--time is emit --slurm-time's" in (job_dir / "slurm.sbatch").read_text()


def test_a_run_longer_than_a_day_asks_a_day_per_allocation(tmp_path: Path) -> None:
    """Review49 M1: an 8B run on 1T tokens wrote --time=213-01:22:00, which a partition's MaxTime
    refuses at submit or leaves pending for ever; the requeue chain it relies on never started."""
    from planner.api import build_plan
    from planner.catalog.models import get_preset

    plan = build_plan(
        get_preset("llama3.2-1b"), "h100-sxm", Layout(dp_shard=16), TrainingConfig(seq_len=2048),
        num_gpus=16, training_tokens=1e12,
    )  # fmt: skip
    long_run = RunSettings(steps=20_000_000)
    spec = JobSpec.load(emit_job(plan, tmp_path / "long", name="long", run=long_run).parent)
    whole_s = whole_run_limit_s(spec)
    assert whole_s is not None and whole_s > 10 * SLURM_ALLOCATION_CAP_S
    assert "--time=1-00:00:00" in directives(tmp_path / "long")
    text = (tmp_path / "long" / "slurm.sbatch").read_text()
    assert f"the whole run, {format_slurm_time(whole_s)} at the band's upper end, would pend" in text
    # without checkpoints a requeue starts again from step 0: one allocation for the whole run
    once = RunSettings(steps=20_000_000, save_checkpoints=False)
    once_s = whole_run_limit_s(JobSpec.load(emit_job(plan, tmp_path / "once", name="once", run=once).parent))
    assert once_s is not None and once_s > 10 * SLURM_ALLOCATION_CAP_S  # no checkpoint writes: a little less
    assert f"--time={format_slurm_time(once_s)}" in directives(tmp_path / "once")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 5400), ("90:30", 5430), ("2:00:00", 7200), ("1-0", 86400), ("1-2:30", 95400), ("2-00:00:05", 172805)],
)
def test_slurm_time_formats(text: str, seconds: int) -> None:
    assert slurm_time_s(text) == seconds
    assert slurm_time_s("UNLIMITED") is None
    assert format_slurm_time(seconds) == format_slurm_time(slurm_time_s(format_slurm_time(seconds)))


def fake_slurm(bin_dir: Path, log: Path, worker_exit: int) -> dict[str, str]:
    """srun/scancel/scontrol stand-ins: the 'workers' (python) wait for SIGTERM and exit ``worker_exit``;
    scancel --signal=TERM sends it to them; each tool logs its arguments."""
    bin_dir.mkdir()
    pid_file = bin_dir / "workers.pid"
    q = shlex.quote
    tools = {
        "python": f"#!/bin/bash\necho $$ > {q(str(pid_file))}\ntrap 'echo saved >> {q(str(log))}; exit {worker_exit}' TERM\n"
        "while :; do sleep 0.1; done\n",
        "srun": '#!/bin/bash\nwhile [[ "$1" == --* ]]; do shift; done\nexec "$@"\n',
        "scancel": f'#!/bin/bash\necho "scancel $*" >> {q(str(log))}\nkill -TERM "$(cat {q(str(pid_file))})"\n',
        "scontrol": f'#!/bin/bash\nif [ "$1" = show ]; then echo node-a; exit; fi\necho "scontrol $*" >> {q(str(log))}\n',
    }
    for name, body in tools.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    env.update(SLURM_JOB_NODELIST="node-a", SLURM_NNODES="1", SLURM_JOB_ID="77")
    return env


@pytest.mark.parametrize(
    ("worker_exit", "requeued", "checkpoints"), [(143, True, True), (1, False, True), (143, False, False)]
)
def test_the_time_limit_signal_saves_then_requeues_the_job(
    tmp_path: Path, worker_exit: int, requeued: bool, checkpoints: bool
) -> None:
    """Trial s49 L4: at the time limit the job exited 143 and someone had to sbatch it again. Now
    Slurm's USR1 (--signal=B:USR1) has the workers save (SIGTERM through scancel, to the steps only)
    and, once they exit 143, requeues the job; workers that fail otherwise are not requeued, nor a
    job without checkpoints, whose rerun would start from step 0 and meet the same limit (review49)."""
    job_dir = emitted(tmp_path, make_plan(gpus_per_node=1), checkpoints=checkpoints)
    assert f"--signal=B:USR1@{slurm_signal_lead_s(make_plan(gpus_per_node=1))}" in directives(job_dir)
    log = tmp_path / "slurm.log"
    env = fake_slurm(tmp_path / "bin", log, worker_exit)
    script = subprocess.Popen(
        ["bash", str(job_dir / "slurm.sbatch")], env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "bin" / "workers.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        script.send_signal(signal.SIGUSR1)
        _, err = script.communicate(timeout=30)
    finally:
        if script.poll() is None:
            script.kill()
    assert script.returncode == worker_exit, err
    expected = ["scancel --signal=TERM 77", "saved"] + (["scontrol requeue 77"] if requeued else [])
    assert log.read_text().splitlines() == expected
    assert "the time limit is near" in err and ("not requeued" in err) != requeued
    assert ("--no-checkpoints" in err) != checkpoints


def test_k8s_pods_select_the_plans_gpu_product(tmp_path: Path) -> None:
    """Trial s49 M3: no nodeSelector, so on a mixed cluster the job could land on smaller GPUs."""
    text, job = manifest(emitted(tmp_path, make_plan(gpus_per_node=8), name="sel"))
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        assert replica["template"]["spec"]["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert "backoffLimit" in text and "kubeflow/trainer#2045" in text
    # no time band: no figure to bound the restarts by, and the header says to set one (runner53 M1)
    assert "activeDeadlineSeconds" not in job["spec"]["runPolicy"] and "nothing bounds them" in text
    _, other = manifest(emitted(tmp_path, make_plan(), ClusterSettings(k8s_gpu_product="NVIDIA-H100-SXM5-80GB"), "own"))
    pod = other["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-SXM5-80GB"}
    _, none = manifest(emitted(tmp_path, make_plan(), ClusterSettings(k8s_gpu_product="none"), "none"))
    assert "nodeSelector" not in none["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    unnamed_text, unnamed = manifest(emitted(tmp_path, make_plan(gpu="mi250x"), name="unnamed"))
    assert "nodeSelector" not in unnamed["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    assert "# GPU: any; no amd.com/gpu.product-name selector for mi250x" in unnamed_text


def test_k8s_pods_on_amd_gpus_ask_amds_device_plugin_and_labeller(tmp_path: Path) -> None:
    """An MI300X plan asked for nvidia.com/gpu, which no AMD node offers (the pods stayed Pending), and
    named NVIDIA's label; AMD's device plugin offers amd.com/gpu, its labeller sets amd.com/gpu.product-name."""
    text, job = manifest(emitted(tmp_path, make_plan(num_nodes=2, gpu="mi300x"), name="amd"))
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        pod = replica["template"]["spec"]
        assert pod["nodeSelector"] == {"amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM"}
        resources = pod["containers"][0]["resources"]
        assert resources["limits"] == {"amd.com/gpu": 8} and resources["requests"]["amd.com/gpu"] == 8
    assert "nvidia" not in text.lower()
    assert "AMD GPU node labeller" in text and "RCCL uses TCP sockets" in text
    _, own = manifest(emitted(tmp_path, make_plan(gpu="mi300x"), ClusterSettings(k8s_gpu_product="MI300X"), "own"))
    assert own["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["nodeSelector"] == {
        "amd.com/gpu.product-name": "MI300X"
    }


def test_multi_node_k8s_pods_request_the_rdma_device_nccl_needs(tmp_path: Path) -> None:
    """Trial s49 M3: no RDMA resource nor IPC_LOCK, so NCCL fell back to TCP sockets between nodes,
    not the plan's InfiniBand; the manifest says so, and --k8s-rdma-resource requests them."""
    text, plain = manifest(emitted(tmp_path, make_plan(num_nodes=2), name="plain"))
    assert "the predicted step assumes ib-ndr-400" in text and "--k8s-rdma-resource" in text
    assert "securityContext" not in plain["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    _, rdma = manifest(
        emitted(tmp_path, make_plan(num_nodes=2), ClusterSettings(k8s_rdma_resource="rdma/ib=2"), "rdma")
    )
    for replica in rdma["spec"]["pytorchReplicaSpecs"].values():
        container = replica["template"]["spec"]["containers"][0]
        assert container["resources"]["limits"]["rdma/ib"] == container["resources"]["requests"]["rdma/ib"] == 2
        assert container["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}  # core/v1 Container fields
    assert "Network" not in manifest(emitted(tmp_path, make_plan(), name="one"))[0]  # one node: no NCCL between nodes


def test_emit_says_a_run_command_that_pastes(tmp_path: Path, capsys) -> None:
    """Trial s49 L1: "run it: trainplan run /tmp/x/job 16 nodes" (unquoted), and for a 2-node plan a
    command that stops asking for --rdzv-endpoint and --node-rank."""
    from ui.cli import main

    plan_file = make_plan(gpus_per_node=1).save(tmp_path / "plan.json")
    out = tmp_path / "job with spaces"
    assert main(["emit", str(plan_file), "--out", str(out), "--steps", "40"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("run it")]
    first = line.removeprefix("run it: ").split(";")[0]
    assert shlex.split(first) == ["trainplan", "run", str(out)]
    two = make_plan(num_nodes=2, gpus_per_node=1).save(tmp_path / "two.json")
    assert main(["emit", str(two), "--out", str(tmp_path / "two nodes")]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("run it")]
    assert "on each of the 2 nodes" in line and "--node-rank I --rdzv-endpoint NODE0:29500" in line
    assert f"sbatch {shlex.quote(str(tmp_path / 'two nodes' / 'slurm.sbatch'))}" in line


def test_emit_takes_the_cluster_flags_and_refuses_bad_ones_in_one_line(tmp_path: Path, capsys) -> None:
    from ui.cli import main

    plan_file = make_plan(num_nodes=2).save(tmp_path / "plan.json")
    flags = ["--slurm-gpu-type", "h100", "--slurm-time", "48:00:00", "--k8s-gpu-product", "NVIDIA-H100-80GB-HBM3"]
    flags += ["--slurm-partition", "gpu,gpu-low"]
    assert main(["emit", str(plan_file), "--out", str(tmp_path / "job"), *flags, "--k8s-rdma-resource", "rdma/ib"]) == 0
    cluster = JobSpec.load(tmp_path / "job").cluster
    assert (cluster.slurm_gpu_type, cluster.slurm_time, cluster.k8s_rdma_resource) == ("h100", "48:00:00", "rdma/ib")
    assert "--partition=gpu,gpu-low" in directives(tmp_path / "job")
    capsys.readouterr()
    for flag, bad in (
        ("--slurm-time", "2 days"),
        ("--slurm-time", "2:00"),  # minutes:seconds, 120 s: ends before the workers' save has begun
        ("--slurm-gpu-type", "h100:8"),
        ("--slurm-constraint", "a b"),
        ("--slurm-partition", "gpu part"),
        ("--slurm-partition", "gpu;reboot"),
        ("--k8s-gpu-product", "NVIDIA H100"),
        ("--k8s-rdma-resource", "rdma"),
    ):
        assert main(["emit", str(plan_file), "--out", str(tmp_path / "bad"), flag, bad]) == 2, (flag, bad)
        (err,) = capsys.readouterr().err.strip().splitlines()
        assert err.startswith(f"trainplan: error: {flag} "), err
    assert not (tmp_path / "bad").exists()
    assert json.loads((tmp_path / "job" / "job.json").read_text())["cluster"]["k8s_rdma_resource"] == "rdma/ib"


def test_portfolio_emit_says_the_same_run_commands(tmp_path: Path, capsys) -> None:
    """portfolio --emit printed "run it: trainplan run DIR" too: unquoted, and for multi-node jobs."""
    from support import REPO

    from ui.cli import main

    emit_dir = tmp_path / "p jobs"
    assert main(["portfolio", str(REPO / "examples" / "portfolio.toml"), "--emit", str(emit_dir)]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("chat-8b: job written to")]
    assert len(lines) == 1 and f"sbatch {shlex.quote(str(emit_dir / 'chat-8b' / 'slurm.sbatch'))};" in lines[0]


def test_portfolio_emit_takes_emits_cluster_flags(tmp_path: Path, capsys) -> None:
    """portfolio --emit had none of emit's --slurm-*/--k8s-* flags, so its jobs' scripts could not be
    pinned to a partition, a GPU type or an RDMA device (review s50); a bad value or a flag without
    --emit is refused in one line before the solve."""
    from support import REPO

    from ui.cli import main

    jobs_file = str(REPO / "examples" / "portfolio.toml")
    emit_dir = tmp_path / "jobs"
    # one GRES type per GPU type (fleet51 H3: one value pinned the A100 jobs to H100 nodes)
    per_type = "h100-sxm=h100,a100-80gb-sxm=a100"
    flags = ["--slurm-partition", "gpu", "--slurm-gpu-type", per_type, "--k8s-rdma-resource", "rdma/ib=2"]
    assert main(["portfolio", jobs_file, "--emit", str(emit_dir), *flags]) == 0
    jobs = sorted(emit_dir.iterdir())
    assert jobs
    for job in jobs:
        gres = {"h100-sxm": "h100", "a100-80gb-sxm": "a100"}[JobSpec.load(job).plan.gpu]
        assert {"--partition=gpu"} <= set(directives(job)) and any(
            d.startswith(f"--gpus-per-node={gres}:") for d in directives(job)
        )
        assert JobSpec.load(job).cluster.k8s_rdma_resource == "rdma/ib=2"
    capsys.readouterr()
    for args in (["--emit", str(tmp_path / "bad"), "--slurm-partition", "a b"], ["--slurm-partition", "gpu"]):
        assert main(["portfolio", jobs_file, *args]) == 2
        (err,) = capsys.readouterr().err.strip().splitlines()
        assert err.startswith("trainplan: error: --"), err
    assert not (tmp_path / "bad").exists()
