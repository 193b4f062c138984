"""Per-step metrics (``metrics.jsonl`` + TensorBoard), GPU sampling and the console progress line.

Only global rank 0 writes. On resume, records after the checkpoint's step (written by the
interrupted run after its last checkpoint) are dropped first, so every step appears once.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import math
import os
import sys
import time
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from planner.errors import DiskFullError
from planner.fmt import duration_clock
from trainer.files import METRICS_FILE, write_atomic

if TYPE_CHECKING:
    from planner.plan import Plan

log = logging.getLogger(__name__)

LOW_UTILIZATION_PERCENT = 70.0
UTILIZATION_WINDOW_STEPS = 20


@dataclass(frozen=True)
class StepMetrics:
    step: int
    loss: float
    lr: float
    grad_norm: float
    step_s: float
    tokens_per_s: float
    mfu: float | None
    peak_mem_gib: float | None  # rank 0's max_memory_allocated during the step (CUDA)
    gpu_util: float | None
    power_w: float | None
    skipped: bool = False  # NaN/inf loss or gradients: no optimizer update
    loss_scale: float | None = None  # fp16 only
    val_loss: float | None = None
    launch_start: bool = False  # the first step of a launch (warm-up): left out of the job's typical step
    setup: str | None = None  # timing_setup: the steps of another one are left out of the job's typical step


def timing_setup(plan: Plan, world_size: int, device: str) -> str:
    """What a step's time depends on besides the code, as a short digest: the model, layout and
    training settings (batch, recomputation, precision...), the process count and the device (a
    GPU's catalog id, else cpu or cuda). A job emitted again for another plan, replanned, or moved
    to other hardware times its typical step over the steps of the setup it runs now (trial s45:
    the report's median mixed the steps of two layouts and divided the new batch by it)."""
    what = [
        plan.model.name,
        plan.layout.model_dump(mode="json"),
        plan.training.model_dump(mode="json"),
        world_size,
        device,
    ]
    return hashlib.blake2b(json.dumps(what, sort_keys=True).encode(), digest_size=6).hexdigest()


def _finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def peak_flops_per_s(gpu_id: str, precision: str) -> float | None:
    """Dense peak of one plan GPU from the hardware catalog; None when unknown."""
    try:
        from planner.catalog.hardware import load_catalog

        return load_catalog().gpu(gpu_id).peak_flops(precision)
    except (ImportError, ValueError):
        return None


def model_flops_per_token(plan) -> float:
    """6N + attention FLOPs per token, with the planner's own convention (for a like-for-like MFU)."""
    predicted = plan.estimate.throughput.model_flops_per_token
    if predicted > 0:
        return predicted
    import numpy as np

    from planner.model.flops import model_flops_per_token as planner_flops
    from planner.model.settings import ModelingSettings

    return float(planner_flops(plan.model, np.asarray(float(plan.training.seq_len)), ModelingSettings()))


class GpuSampler:
    """Utilisation and power of this process's GPU via NVML (nvidia-ml-py); None elsewhere."""

    def __init__(self, device: torch.device):
        self._handle = None
        if device.type != "cuda":
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)
        except Exception:  # no driver / library: sampling is optional
            self._handle = None

    def sample(self) -> tuple[float | None, float | None]:
        if self._handle is None:
            return None, None
        try:
            util = float(self._nvml.nvmlDeviceGetUtilizationRates(self._handle).gpu)
            power = self._nvml.nvmlDeviceGetPowerUsage(self._handle) / 1000.0
        except Exception:
            return None, None
        return util, power


def _step_of(line: bytes) -> int | None:
    """The step of one metrics record; None for a line that is not one (cut short, garbage)."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):  # JSON errors and bytes that are not UTF-8
        return None
    step = record.get("step") if isinstance(record, dict) else None
    return step if type(step) is int else None


def truncate_after(path: Path, last_step: int) -> None:
    """Keep only records with ``step <= last_step`` (atomic rewrite); lines that are not records
    are dropped with a warning naming the file (a torn last line after a crash, silently)."""
    if not path.is_file():
        if path.exists():
            raise ValueError(f"{path} is not a file: move it aside")
        return
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read ({exc.strerror})") from None
    kept, dropped, redone = [], [], []
    for number, line in enumerate(lines, 1):
        step = _step_of(line)
        if step is None:
            if number < len(lines):  # the last line may be cut short by a crash: that is expected
                dropped.append(number)
            continue
        if step <= last_step:
            kept.append(line.decode())
        else:
            redone.append(step)
    if dropped:
        log.warning(f"warning: {path}: line(s) {', '.join(map(str, dropped[:10]))} are not metrics records; dropped")
    if redone:  # trial s37: a kill's cost was unsaid
        log.info(
            f"steps {last_step + 1}-{max(redone)} of the previous launch, past the step this one resumes from, are"
            " trained again (their metrics records dropped)"
        )
    if len(kept) == len(lines):
        return  # nothing to drop: no rewrite (which needs free space)
    try:
        write_atomic(path, "".join(line + "\n" for line in kept))
    except OSError as exc:
        path.with_name(f".{path.name}.tmp").unlink(missing_ok=True)
        raise DiskFullError(f"cannot rewrite {path} ({exc.strerror}); free space and resume") from None


def warm_step_times(path: Path, setup: str | None = None) -> list[float]:
    """The step times of the records in ``path`` without each launch's first step (warm-up):
    the earlier launches' share of the job's typical step (trial s25: after a resume the report
    timed the last launch only). Records before ``launch_start`` existed: all but the first.
    With ``setup``, only the records of that ``timing_setup`` (and those from before it was
    recorded)."""
    return [step_s for step_s, same in _warm_steps(path, setup) if same]


def _warm_steps(path: Path, setup: str | None) -> list[tuple[float, bool]]:
    """Each warm step's time, and whether it ran under ``setup``."""
    if not path.is_file():
        return []
    times = []
    for number, line in enumerate(path.read_bytes().splitlines()):
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        step_s = record.get("step_s") if isinstance(record, dict) else None
        first = record.get("launch_start", number == 0) if isinstance(record, dict) else True
        if isinstance(step_s, (int, float)) and math.isfinite(step_s) and not first:
            recorded = record.get("setup")
            times.append((float(step_s), setup is None or recorded is None or recorded == setup))
    return times


class MetricsLogger:
    def __init__(
        self, job_dir: Path, resume_step: int, enabled: bool, tensorboard: bool = True, setup: str | None = None
    ):
        self.enabled = enabled
        self.path = Path(job_dir) / METRICS_FILE
        self.low_util: deque[bool] = deque(maxlen=UTILIZATION_WINDOW_STEPS)
        self._warned_at = -UTILIZATION_WINDOW_STEPS
        self._tb = None
        self.failure: str | None = None  # why a record could not be written (the session stops on it)
        self.earlier_step_times: list[float] = []  # the earlier launches' warm steps (warm_step_times)
        if not enabled:
            return
        truncate_after(self.path, resume_step)
        warm = _warm_steps(self.path, setup)
        self.earlier_step_times = [step_s for step_s, same in warm if same]
        if len(self.earlier_step_times) < len(warm):
            log.info(
                f"the times of {len(warm) - len(self.earlier_step_times):,} earlier step(s), under another plan,"
                " process count or device, are left out of this job's typical step"
            )
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            # purge_step drops TensorBoard events after the checkpoint, as above for the jsonl.
            self._tb = SummaryWriter(log_dir=str(Path(job_dir) / "tb"), purge_step=resume_step + 1)

    def log_step(self, metrics: StepMetrics) -> None:
        if not self.enabled:
            return
        record = {
            key: (_finite_or_none(value) if isinstance(value, float) else value)
            for key, value in asdict(metrics).items()
        }
        if not math.isfinite(metrics.loss):
            record["loss"] = str(metrics.loss)  # keep "nan"/"inf" visible; JSON has no NaN
        if self.failure is not None or not self._append((json.dumps(record) + "\n").encode()):
            return
        if self._tb is not None:
            for key, value in record.items():
                if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                    self._tb.add_scalar(f"train/{key}", value, metrics.step)
        self._check_utilization(metrics)

    def _append(self, data: bytes) -> bool:
        """Append one whole line or nothing: on a failed write (a full disk) the file is cut back
        to where it was, and ``failure`` says why."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            self.failure = f"cannot write {self.path} ({exc.strerror})"
            return False
        try:
            start = os.fstat(fd).st_size
            try:
                written = os.write(fd, data)
                if written != len(data):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            except OSError as exc:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, start)  # no half-written JSON line left behind
                self.failure = f"disk full while writing {self.path} ({exc.strerror})"
                if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                    self.failure = f"cannot write {self.path} ({exc.strerror})"
                return False
        finally:
            os.close(fd)
        return True

    def _check_utilization(self, metrics: StepMetrics) -> None:
        if metrics.gpu_util is None:
            return
        self.low_util.append(metrics.gpu_util < LOW_UTILIZATION_PERCENT)
        window_full = len(self.low_util) == self.low_util.maxlen
        if window_full and all(self.low_util) and metrics.step - self._warned_at >= UTILIZATION_WINDOW_STEPS:
            self._warned_at = metrics.step
            log.warning(
                f"\nwarning: GPU utilisation below {LOW_UTILIZATION_PERCENT:.0f}% for the last "
                f"{UTILIZATION_WINDOW_STEPS} steps (now {metrics.gpu_util:.0f}%): the input pipeline, "
                f"communication or small kernels are limiting; see metrics.jsonl"
            )

    def log_scalar(self, name: str, value: float, step: int) -> None:
        if self.enabled and self._tb is not None and math.isfinite(value):
            self._tb.add_scalar(name, value, step)

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
            self._tb = None


class ProgressBar:
    """One console line on rank 0: a bar, loss, tokens/s and ETA (redrawn on a TTY, else printed every ~5%)."""

    WIDTH = 24

    def __init__(self, first_step: int, last_step: int, enabled: bool, stream=sys.stdout):
        self.first_step, self.last_step, self.enabled, self.stream = first_step, last_step, enabled, stream
        self.is_tty = enabled and stream.isatty()
        self.every = max(1, (last_step - first_step) // 20)
        self.started = time.perf_counter()

    def update(self, metrics: StepMetrics) -> None:
        if not self.enabled:
            return
        done = metrics.step - self.first_step
        if not self.is_tty and done % self.every and metrics.step != self.last_step:
            return
        elapsed = time.perf_counter() - self.started
        eta = elapsed / max(done, 1) * (self.last_step - metrics.step)
        # The bar shows the job's progress (a resumed run starts part-filled); the ETA, this launch's rate.
        filled = int(self.WIDTH * min(metrics.step, self.last_step) / max(1, self.last_step))
        line = (
            f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] step {metrics.step}/{self.last_step} "
            f"loss {metrics.loss:.4f} {metrics.tokens_per_s:,.0f} tok/s ETA {duration_clock(eta)}"
            + (" (skipped: non-finite)" if metrics.skipped else "")
        )
        self.stream.write(("\r" + line) if self.is_tty else line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.is_tty:
            self.stream.write("\n")
            self.stream.flush()
