"""The cluster flags emit and portfolio --emit take (--slurm-*, --k8s-gpu-product, --k8s-rdma-resource):
their one definition, how a command receives them (``with_cluster_flags``), and portfolio's values
per GPU type (``PortfolioCluster``; fleet51 H3: ``--slurm-gpu-type h100`` pinned five A100 jobs of a
portfolio to H100 nodes, unsaid)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ui.cli_options import (
    K8S_GPU_PRODUCT,
    K8S_RDMA_RESOURCE,
    SLURM_CONSTRAINT,
    SLURM_GPU_TYPE,
    SLURM_PARTITION,
    SLURM_TIME,
    flag_group,
)

if TYPE_CHECKING:
    from trainer.job_spec import ClusterSettings


@dataclass(frozen=True)
class ClusterFlag:
    """One of the cluster flags emit and portfolio --emit take: its option, and the value a refusal asks for."""

    option: Any  # a typer.Option whose first name is the flag
    shape: str

    @property
    def flag(self) -> str:
        return str(self.option.param_decls[0])


# ClusterSettings' fields and the flags that set them: the one definition of emit's and
# portfolio --emit's cluster flags (``with_cluster_flags``; review s50: portfolio had none of them).
CLUSTER_FLAGS = {
    "slurm_gpu_type": ClusterFlag(SLURM_GPU_TYPE, "a GRES type name such as h100 (letters, digits, '.', '_', '-')"),
    "slurm_constraint": ClusterFlag(SLURM_CONSTRAINT, "node features such as h100&ib (no spaces or quotes)"),
    "slurm_partition": ClusterFlag(SLURM_PARTITION, "a partition name such as gpu, or a comma list of them"),
    "slurm_time": ClusterFlag(SLURM_TIME, "a Slurm time such as 2880, 48:00:00 or 2-00:00:00"),
    "k8s_gpu_product": ClusterFlag(K8S_GPU_PRODUCT, "a label value such as NVIDIA-H100-80GB-HBM3, or none"),
    "k8s_rdma_resource": ClusterFlag(K8S_RDMA_RESOURCE, "a resource name with an optional count, such as rdma/ib=1"),
}


def cluster_settings(**given: str | None) -> ClusterSettings:
    """The cluster flags as ClusterSettings (ValueError naming the first bad one, in one line)."""
    from pydantic import ValidationError

    from trainer.job_spec import ClusterSettings

    try:
        return ClusterSettings(**{name: value for name, value in given.items() if value is not None})
    except ValidationError as exc:
        field = str(exc.errors()[0]["loc"][0])
        raise ValueError(f"{CLUSTER_FLAGS[field].flag} {given[field]!r}: give {CLUSTER_FLAGS[field].shape}") from None


def with_cluster_flags(command: Callable[..., None], parse: Callable[..., Any] | None = None) -> Callable[..., None]:
    """``command`` with the cluster flags (CLUSTER_FLAGS) among its options, handed to it as one
    ``cluster`` keyword: ``parse`` of them (default ``cluster_settings``: ClusterSettings), or None
    where none was given. A bad value is refused in one line before the command runs."""
    parse = parse or cluster_settings
    options = {name: flag.option for name, flag in CLUSTER_FLAGS.items()}

    def collect(given: dict[str, Any]) -> Any:
        return parse(**given) if any(value is not None for value in given.values()) else None

    return flag_group(command, options, dict.fromkeys(CLUSTER_FLAGS, "str | None"), "cluster", collect)


# The flags whose value names one GPU type's nodes: portfolio --emit takes them as GPU=VALUE,... one
# per type; a single value of the first three pins every job to one type's nodes, so a portfolio on
# several types refuses it (a partition may hold several types: one for all is taken).
PER_GPU_FIELDS = ("slurm_gpu_type", "slurm_constraint", "k8s_gpu_product", "slurm_partition")
PINNING_FIELDS = PER_GPU_FIELDS[:3]


@dataclass(frozen=True)
class PortfolioCluster:
    """portfolio --emit's cluster flags: one value for every job (``shared``), or for a per-GPU
    field one value per GPU type (``per_gpu``: field -> {catalog GPU id: value}); each value checked
    as emit checks it, and each GPU id against the catalog, before the solve."""

    shared: dict[str, str]
    per_gpu: dict[str, dict[str, str]]

    def check_types(self, gpus: Collection[str]) -> None:
        """Refuse, before any job is written, a single pinning value where the jobs run on several
        types, and a per-type value missing for a type a job runs on."""
        several = sorted(set(gpus))
        for field in PINNING_FIELDS:
            if field in self.shared and len(several) > 1:
                flag = CLUSTER_FLAGS[field].flag
                per = ",".join(f"{g}=VALUE" for g in several)
                raise ValueError(
                    f"{flag} {self.shared[field]!r}: the portfolio runs jobs on {', '.join(several)}, and one value"
                    f" would send every job to one type's nodes; give one per type: {flag} {per}"
                )
        for field, values in self.per_gpu.items():
            if missing := [g for g in several if g not in values]:
                flag = CLUSTER_FLAGS[field].flag
                raise ValueError(f"{flag}: no value for {', '.join(missing)}, a type the portfolio runs jobs on")

    def for_gpu(self, gpu: str) -> ClusterSettings:
        """The ClusterSettings of a job on ``gpu`` (after ``check_types``)."""
        return cluster_settings(**self.shared, **{f: v[gpu] for f, v in self.per_gpu.items() if gpu in v})

    def unused_types(self, gpus: Collection[str]) -> tuple[str, ...]:
        """A warning per per-type flag naming types no job runs on (review51 L3: their values were
        dropped unsaid; a cluster-wide list is fine, so said, not refused)."""
        found = []
        for field, values in self.per_gpu.items():
            if extra := sorted(set(values) - set(gpus)):
                found.append(
                    f"{CLUSTER_FLAGS[field].flag}: no job runs on {', '.join(extra)}, so its value there is not used"
                )
        return tuple(found)

    @property
    def names_types(self) -> bool:
        """Whether a GRES type or a constraint is given (else slurm.sbatch asks for any GPUs; k8s.yaml
        selects the catalog's product either way)."""
        return any(f in self.shared or f in self.per_gpu for f in ("slurm_gpu_type", "slurm_constraint"))


def portfolio_cluster(given: dict[str, str | None]) -> PortfolioCluster:
    """The flags as ``PortfolioCluster``: a per-GPU field's 'GPU=VALUE,GPU=VALUE' as a mapping (one
    value each, as emit's), any other value shared; one line naming the first bad one."""
    from planner.catalog.hardware import load_catalog

    shared: dict[str, str] = {}
    per_gpu: dict[str, dict[str, str]] = {}
    for field, value in given.items():
        if value is None:
            continue
        if field not in PER_GPU_FIELDS or "=" not in value:
            cluster_settings(**{field: value})
            shared[field] = value
            continue
        flag = CLUSTER_FLAGS[field].flag
        pairs = [part.partition("=") for part in value.split(",")]
        if any(not gpu or not sep or not one for gpu, sep, one in pairs):
            raise ValueError(f"{flag} {value!r}: give one value, or GPU=VALUE for each GPU type, comma-separated")
        try:
            values = {load_catalog().gpu(gpu.strip()).id: one for gpu, _, one in pairs}
        except ValueError as exc:
            raise ValueError(f"{flag}: {exc}") from None
        for one in values.values():
            cluster_settings(**{field: one})
        per_gpu[field] = values
    return PortfolioCluster(shared, per_gpu)


def with_portfolio_cluster_flags(command: Callable[..., None]) -> Callable[..., None]:
    """``with_cluster_flags`` handing ``PortfolioCluster`` (values per GPU type)."""
    return with_cluster_flags(command, lambda **given: portfolio_cluster(given))
