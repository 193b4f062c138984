"""The tensor collectives under the names the installed torch prefers: torch 2.13 deprecates
``all_gather_into_tensor`` and ``reduce_scatter_tensor`` for ``all_gather_single`` and
``reduce_scatter_single`` (same arguments) and warns once per rank (trial s37: four FutureWarnings
in a cp 2 run); the torch versions pyproject allows before it have only the old names."""

from __future__ import annotations

import torch.distributed as dist

all_gather_single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
reduce_scatter_single = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
