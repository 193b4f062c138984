"""The job directory's ``k8s.yaml``: a Kubeflow PyTorchJob (kubeflow.org/v1) rendered from a
``JobSpec``, as JSON (a subset of YAML, so nothing user-supplied needs YAML quoting), with comment
lines on what it pins and what it leaves to the cluster. Its GPUs are the plan GPU's vendor's
(trainer/cluster.py ``K8S_VENDORS``): NVIDIA's or AMD's device plugin resource and product label."""

from __future__ import annotations

import json
import math
import re

from planner.fmt import duration_words
from planner.plan import Plan
from trainer.cluster import K8sGPUVendor, k8s_gpu, network_id, rdma_request
from trainer.job_disk import checkpoint_disk_words
from trainer.job_scripts import (
    AGENT_EXIT_S,
    CPUS_PER_PROCESS,
    SHM_GIB_PER_PROCESS,
    host_memory_gib,
    job_summary,
    one_line_comment,
    procs_per_node,
    stop_grace_s,
    whole_run_limit_s,
)
from trainer.job_spec import (
    DEFAULT_K8S_IMAGE,
    K8S_IMAGE_PATTERN,
    K8S_NO_GPU_SELECTOR,
    K8S_PVC_PATTERN,
    ClusterSettings,
    JobSpec,
)
from trainer.worker import WORKER_MODULE

K8S_JOBS_MOUNT = "/jobs"  # where the PVC is mounted in the pods
# runPolicy.activeDeadlineSeconds, "the duration in seconds relative to the startTime that the job may
# be active before the system tries to terminate it" (kubeflow/training-operator, V1RunPolicy): this
# many times the whole run at the band's pessimistic end (the Slurm --time figure). Room for the
# failures and restarts a long run expects; the bound on a pod that dies by a signal on every restart
# (host OOM kill 137, a segfault 139), which restartPolicy ExitCode recreates without counting it
# against backoffLimit (kubeflow/trainer#2045; runner53 M1: 64 GPUs in a loop with nothing to stop it).
K8S_DEADLINE_FACTOR = 2.0
# What the default image stands for: nothing in this repository builds it (runner53 M3).
IMAGE_NEEDS = (
    "an image with python on its PATH, PyTorch for the GPU (CUDA or ROCm) and trainplan installed (pip install"
    " this repository): build and push one, and emit --k8s-image REGISTRY/NAME:TAG"
)


def check_k8s_names(image: str, pvc: str) -> None:
    """``--k8s-image`` and ``--k8s-pvc`` as Kubernetes takes them (JobSpec's patterns): ValueError
    naming the flag in one line otherwise."""
    if not re.match(K8S_IMAGE_PATTERN, image):
        raise ValueError(f"--k8s-image {image!r}: give an image reference such as registry.example/trainplan:1.0")
    if not re.match(K8S_PVC_PATTERN, pvc):
        raise ValueError(f"--k8s-pvc {pvc!r}: a claim name is lower-case letters, digits, '-' and '.'")


def k8s_name(name: str) -> str:
    """A DNS-1035 label from the job name (lower case, '-' for '.' and '_', at most 50 characters
    so the operator's pod suffixes such as ``-worker-12`` still fit in 63), starting with a letter:
    the training operator's webhook checks ``NameIsDNS1035Label`` (trial s27: "70b-run" was refused
    at ``kubectl apply``; it is now "j-70b-run")."""
    label = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:50].rstrip("-")
    if label and not label[0].isalpha():
        label = f"j-{label}"[:50].rstrip("-")
    return label or "trainplan-job"


def host_requests(plan: Plan) -> dict[str, str]:
    """A pod's CPU and memory requests. Requests, not limits: no CPU throttling, no OOM kill at a
    guessed bound."""
    return {"cpu": str(procs_per_node(plan) * CPUS_PER_PROCESS), "memory": f"{host_memory_gib(plan)}Gi"}


def gpu_selector(spec: JobSpec) -> dict[str, str]:
    """The pods' nodeSelector: the GPU vendor's product label (emit --k8s-gpu-product, else the catalog
    GPU's; trial s49: a mixed cluster could place the job on smaller GPUs); empty without one."""
    gpu = k8s_gpu(spec.plan.gpu)
    product = spec.cluster.k8s_gpu_product or gpu.product
    return {} if product in (None, K8S_NO_GPU_SELECTOR) else {gpu.vendor.product_label: product}


def _rdma(cluster: ClusterSettings) -> tuple[dict[str, int], dict]:
    """The container's RDMA resource and the IPC_LOCK capability NCCL (and RCCL, its port) needs to
    register memory with the NICs (emit --k8s-rdma-resource); nothing without one."""
    if cluster.k8s_rdma_resource is None:
        return {}, {}
    name, count = rdma_request(cluster.k8s_rdma_resource)
    return {name: count}, {"securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}}


def _torchrun_command(plan: Plan, job_path: str) -> list[str]:
    """The container's command. The operator sets RANK (the pod's node rank), MASTER_ADDR and
    MASTER_PORT in each pod; Kubernetes expands $(VAR) in the command from the container's
    environment. trainer.torchrun: torchrun that exits 143 on SIGTERM (retryable under restartPolicy
    ExitCode), where plain torchrun raises SignalException and exits 1 (permanent)."""
    nodes, procs = str(plan.num_nodes), str(procs_per_node(plan))
    rendezvous = ["--node-rank", "$(RANK)", "--master-addr", "$(MASTER_ADDR)", "--master-port", "$(MASTER_PORT)"]
    torchrun = ["python", "-m", "trainer.torchrun", "--nnodes", nodes, "--nproc-per-node", procs, *rendezvous]
    return [*torchrun, "-m", WORKER_MODULE, job_path]


def _container(spec: JobSpec, image: str) -> dict:
    """The one container of each pod: the command, the vendor's GPUs, RDMA and host requests."""
    plan = spec.plan
    rdma, privileges = _rdma(spec.cluster)
    gpus = {k8s_gpu(plan.gpu).vendor.resource: procs_per_node(plan)}
    return {
        "name": "pytorch",  # the operator looks for a container of this name
        "image": image,
        "command": _torchrun_command(plan, f"{K8S_JOBS_MOUNT}/{spec.name}"),
        "resources": {"limits": {**gpus, **rdma}, "requests": {**gpus, **rdma, **host_requests(plan)}},
        **privileges,
        "volumeMounts": [{"name": "jobs", "mountPath": K8S_JOBS_MOUNT}, {"name": "dshm", "mountPath": "/dev/shm"}],
    }


def _volumes(plan: Plan, pvc: str) -> list[dict]:
    """The job directory's claim and /dev/shm: NCCL needs more than the default 64 MiB; bounded,
    since it counts against the node's memory."""
    shm = {"medium": "Memory", "sizeLimit": f"{procs_per_node(plan) * SHM_GIB_PER_PROCESS}Gi"}
    return [{"name": "jobs", "persistentVolumeClaim": {"claimName": pvc}}, {"name": "dshm", "emptyDir": shm}]


def _replica(spec: JobSpec, count: int, container: dict, volumes: list[dict]) -> dict:
    """One replica spec. ExitCode: restart pods that exit 128+ (preemption: 143), not on errors
    such as 2, 3 (replan), 4. The grace from SIGTERM (eviction, preemption) to SIGKILL is the
    workers' save, not Kubernetes' 30 s."""
    selector = gpu_selector(spec)
    pod = {
        "terminationGracePeriodSeconds": stop_grace_s(spec.plan) + AGENT_EXIT_S,
        **({"nodeSelector": selector} if selector else {}),
        "containers": [container],
        "volumes": volumes,
    }
    return {"replicas": count, "restartPolicy": "ExitCode", "template": {"spec": pod}}


def k8s_manifest(spec: JobSpec, image: str, pvc: str) -> dict:
    """The PyTorchJob (kubeflow.org/v1) as plain data."""
    plan = spec.plan
    container, volumes = _container(spec, image), _volumes(plan, pvc)
    replicas = {"Master": _replica(spec, 1, container, volumes)}
    if plan.num_nodes > 1:
        replicas["Worker"] = _replica(spec, plan.num_nodes - 1, container, volumes)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": k8s_name(spec.name), "labels": {"app.kubernetes.io/managed-by": "trainplan"}},
        "spec": {
            "nprocPerNode": str(procs_per_node(plan)),
            "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 3, **_deadline(spec)},
            "pytorchReplicaSpecs": replicas,
        },
    }


def active_deadline_s(spec: JobSpec) -> int | None:
    """runPolicy.activeDeadlineSeconds (``K8S_DEADLINE_FACTOR``); None for a plan without a time
    band (no whole-run figure to bound it by: the header asks for one)."""
    whole_s = whole_run_limit_s(spec)
    return None if whole_s is None else math.ceil(K8S_DEADLINE_FACTOR * whole_s)


def _deadline(spec: JobSpec) -> dict[str, int]:
    deadline_s = active_deadline_s(spec)
    return {} if deadline_s is None else {"activeDeadlineSeconds": deadline_s}


def image_note(image: str) -> str | None:
    """What the header and emit say of the default image: a placeholder (None: one was given)."""
    return f"the image {image} is a placeholder nothing builds: {IMAGE_NEEDS}" if image == DEFAULT_K8S_IMAGE else None


def _restarts_note(spec: JobSpec) -> str:
    restarts = (
        "Restarts: restartPolicy ExitCode recreates pods that exit 128-255 (preemption 143, but also a host OOM"
        " kill 137 or a segfault 139, which recur) without counting them against backoffLimit"
        " (kubeflow/trainer#2045), which counts the other failures; "
    )
    deadline_s = active_deadline_s(spec)
    if deadline_s is None:
        return restarts + (
            "nothing bounds them: the plan has no time band, so set runPolicy.activeDeadlineSeconds (seconds from"
            " the job's start) yourself, and alert on the pods' restart count"
        )
    return restarts + (
        f"runPolicy.activeDeadlineSeconds {deadline_s} ({duration_words(deadline_s)}, {K8S_DEADLINE_FACTOR:g} x the"
        " whole run at p80) fails the job after that long from its start: edit it for a longer queue, and alert"
        " on the pods' restart count"
    )


def _gpu_note(spec: JobSpec, vendor: K8sGPUVendor) -> str:
    """What the manifest says of its GPU: the product it selects, and what labels the nodes so."""
    label = vendor.product_label
    if selector := gpu_selector(spec):
        return (
            f"GPU: nodeSelector {label}={selector[label]} ({vendor.labeller}; without it the pods stay Pending);"
            " emit --k8s-gpu-product VALUE sets it, none drops it"
        )
    return f"GPU: any; no {label} selector for {one_line_comment(spec.plan.gpu)} (emit --k8s-gpu-product VALUE)"


def _k8s_notes(spec: JobSpec) -> list[str]:
    """What the manifest pins and what it leaves to the cluster (GPU product, RDMA, restarts)."""
    plan, cluster = spec.plan, spec.cluster
    vendor = k8s_gpu(plan.gpu).vendor
    notes = [_gpu_note(spec, vendor)]
    if plan.num_nodes > 1 and cluster.k8s_rdma_resource is None:
        notes.append(
            f"Network: the predicted step assumes {one_line_comment(network_id(plan) or 'the GPU default')}; with no"
            f" RDMA device in the pods {vendor.collectives} uses TCP sockets, far slower: emit --k8s-rdma-resource"
            " NAME[=COUNT] (the cluster's RDMA device plugin's, e.g. rdma/ib) requests it and adds the IPC_LOCK"
            " capability"
        )
    elif plan.num_nodes > 1:
        notes.append(
            f"Network: {cluster.k8s_rdma_resource} with IPC_LOCK, for {vendor.collectives} over InfiniBand/RoCE"
        )
    notes.append(_restarts_note(spec))
    if (disk := checkpoint_disk_words(spec)) is not None:
        notes.append(f"Disk: {disk} (the PVC)")
    if (image := image_note(spec.k8s_image)) is not None:
        notes.append(f"Image: {image}")
    return notes


def _image_words(image: str) -> str:
    if image == DEFAULT_K8S_IMAGE:
        return f"build the image first ({image} is a placeholder: see Image below)"
    return f"the image is {one_line_comment(image)} (emit --k8s-image)"


def render_k8s(spec: JobSpec) -> str:
    image, pvc = spec.k8s_image, spec.k8s_pvc
    header = (
        f"# trainplan job {spec.name}: {job_summary(spec)}\n"
        f"# Copy this job directory to {K8S_JOBS_MOUNT}/{spec.name} on the PVC {one_line_comment(pvc)} "
        f"(ReadWriteMany); {_image_words(image)}; then: kubectl apply -f k8s.yaml\n"
        + "".join(f"# {note}.\n" for note in _k8s_notes(spec))
        + "# Below these comments the manifest is plain JSON, which every YAML parser reads.\n"
    )
    return header + json.dumps(k8s_manifest(spec, image, pvc), indent=2) + "\n"
