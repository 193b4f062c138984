"""What a calibration file's measured job does to a plan of another shape (calib50 H2: a 1-GPU probe
of a 124M model, memory x0.647 from three steps, made a 70B layout the model puts at 99 GiB per GPU
fit at 61 GiB, and only the accuracy line's "extrapolated" hinted at it)."""

from __future__ import annotations

from dataclasses import dataclass

from planner.plan import Plan


@dataclass(frozen=True)
class ExtrapolatedMemory:
    """The plan fits only by the memory ``factor`` the job ``job`` measured on ``shape``: the model
    alone puts its reserved peak at ``alone_gib``, past the ``usable_gib`` the fit rule allows. The CLI
    says ``words()``; the app's card words the fields in the page's language (ui/plan_card.py)."""

    factor: float
    job: str
    shape: str
    alone_gib: float
    usable_gib: float

    def words(self) -> str:
        return (
            f"the plan fits only by the memory factor x{self.factor:.3g} your job {self.job} measured on another"
            f" shape ({self.shape}): the model alone puts its reserved peak at {self.alone_gib:,.1f} GiB, past the"
            f" {self.usable_gib:,.1f} GiB the fit rule allows; a factor is extrapolated to every shape on the GPU,"
            " so check this one's memory (trainplan run's probe) before relying on it, or plan with --no-calibration"
        )


def extrapolated_memory(p: Plan) -> ExtrapolatedMemory | None:
    """The plan fits only by a memory factor measured on another shape: the model alone puts its
    reserved peak past what the fit rule allows (the factor scales the modelled peak, so the
    model's own reserved peak is the figure over the factor)."""
    u, m = p.estimate.uncertainty, p.estimate.memory
    job = None if u is None else u.measured_job
    if job is None or job.exact or job.memory_factor >= 1 or not p.estimate.feasible:
        return None
    alone_gib = m.reserved_gib / job.memory_factor
    if alone_gib <= m.usable_gib:
        return None
    return ExtrapolatedMemory(job.memory_factor, job.name, job.shape, alone_gib, m.usable_gib)


def extrapolated_memory_warnings(p: Plan) -> tuple[str, ...]:
    """The CLI's words of ``extrapolated_memory``."""
    found = extrapolated_memory(p)
    return () if found is None else (found.words(),)
