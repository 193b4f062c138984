"""Which GPUs' scale-up links the validation measured, and the architecture a GPU is judged as.

Two parts of one architecture can differ where a multi-GPU job feels it most: the export parts
cut NVLink (H800 200 GB/s per direction against the H100 SXM's 450, A800 200 against 300), and
the PCIe cards pair GPUs over a bridge (H100 NVL, A100 PCIe) or not at all. Every tensor-parallel
and FSDP collective inside a node crosses that link, and no validation row of those parts measured
it: an H800 at tp 8 spends 2.05x the H100's time in tp communication, yet read "validated" from
H100 rows (trial s36, issue 27 finding 3). So a multi-GPU job on a part whose link is not one its
architecture's well-measured parts have is judged as a part of its own ("Hopper (h800's
link)", one feature away from the other Hopper parts: regime.LINK_WEIGHT), for its band and envelope; its efficiency ceiling stays its architecture's (a slower
link can only slow it). A single GPU crosses no link and stays with its architecture.

The same rule places a validation row (``row_generation``) and a query (``band_generation``):
the DeepSeek-V3 row ran on H800 and is judged as "Hopper (h800's link)" too.
"""

from __future__ import annotations

import functools
from collections import Counter

from planner.accuracy.regime import link_apart_label
from planner.accuracy.residuals import HeldOutRow, load_residuals
from planner.catalog.hardware import GPUSpec, load_catalog

# A part's link counts as measured when at least this many multi-GPU validation rows ran on a part
# with that link (counted per link: review s38): one row (DeepSeek-V3's 2,048 H800) is one layout
# of one stack, not evidence for the link under every layout. A choice, like MIN_ROWS in bands.py.
MIN_LINK_ROWS = 5

# The link a collective inside a node crosses: its kind, how many GPUs it joins, and its rate
# per GPU per direction (bytes/s).
Link = tuple[str, int, float]


def link_of(gpu: GPUSpec) -> Link:
    return (gpu.scaleup_kind, gpu.scaleup_domain_size, gpu.scaleup_bandwidth_bytes_per_s)


@functools.cache
def measured_links() -> dict[str, frozenset[Link]]:
    """Each architecture's links that ``MIN_LINK_ROWS`` or more multi-GPU validation rows ran on
    (catalog parts only: a validation-only variant such as torchtitan's 500 W H100 is not one)."""
    catalog = load_catalog()
    parts = (catalog.gpus[r.gpu] for r in load_residuals() if r.num_gpus > 1 and r.gpu in catalog.gpus)
    runs = Counter((gpu.generation, link_of(gpu)) for gpu in parts)
    links: dict[str, set[Link]] = {}
    for (generation, link), count in runs.items():
        if count >= MIN_LINK_ROWS:
            links.setdefault(generation, set()).add(link)
    return {generation: frozenset(found) for generation, found in links.items()}


def link_apart(gpu: GPUSpec) -> bool:
    """Whether ``gpu``'s link is none its architecture's measured parts have (False where the
    architecture has none measured: it is outside the envelope as a whole already)."""
    links = measured_links().get(gpu.generation, frozenset())
    return bool(links) and link_of(gpu) not in links


def row_generation(row: HeldOutRow) -> str:
    """The architecture a validation row is judged as: its own part's where it ran on more than
    one GPU of a part whose link is ``link_apart``."""
    gpu = load_catalog().gpus.get(row.gpu)
    if row.num_gpus > 1 and gpu is not None and link_apart(gpu):
        return link_apart_label(row.generation, row.gpu)
    return row.generation
