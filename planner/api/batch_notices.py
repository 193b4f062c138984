"""What the planner says of a plan's global batch itself: one far off the batch asked for, and one
larger than any published pre-training ran (``estimate`` and ``plan`` warn of both; the app's card
words the second with ``batch_beyond_published``, ui/i18n_messages.py)."""

from __future__ import annotations

from planner.fmt import counted
from planner.plan import Plan

# A batch this many times off the one asked for is not "nearest achievable" but another job.
BATCH_OFF_FACTOR = 2.0

# The largest global batch (tokens per step) a published pre-training run used:
# data/validation/whole_runs.csv, row trinity-large (Arcee Trinity Large, 398B MoE, 134,217,728
# tokens per step; arXiv 2602.17004). Beside it Llama 3.1 405B used 16M and DeepSeek-V3 ~63M.
# Past it the time and cost are the model's as ever, but no run shows such a batch trains as well:
# past the critical batch more tokens per step stop saving steps (McCandlish et al. 2018). Buyer
# trial s45: --global-batch-tokens 1e9 planned 61,035 accumulation steps and a 3.6-hour step silently.
LARGEST_PUBLISHED_BATCH_TOKENS = 134_217_728
LARGEST_PUBLISHED_BATCH_RUN = "Arcee Trinity Large, arXiv 2602.17004"


def batch_off_warnings(p: Plan) -> tuple[str, ...]:
    """A warning when the layout's batch is over BATCH_OFF_FACTOR times off the requested one
    (``--global-batch-tokens 100`` makes 32,768 tokens: a sequence per data-parallel rank)."""
    e, t = p.estimate, p.training
    requested = e.requested_global_batch_tokens
    if requested is None or 1 / BATCH_OFF_FACTOR <= e.global_batch_tokens / requested <= BATCH_OFF_FACTOR:
        return ()
    least = t.micro_batch * t.seq_len * p.layout.dp
    return (
        f"--global-batch-tokens {requested:,}: this layout's batch is {e.global_batch_tokens:,} tokens, "
        f"{e.global_batch_tokens / requested:,.3g}x the request (at least micro-batch {t.micro_batch} x "
        f"{t.seq_len:,} tokens x {counted(p.layout.dp, 'data-parallel rank')} = {least:,})",
    )


def batch_beyond_published(p: Plan) -> bool:
    """Whether the plan's global batch is larger than any published pre-training used."""
    return p.estimate.global_batch_tokens > LARGEST_PUBLISHED_BATCH_TOKENS


# The English of ``batch_beyond_published``, the CLI's and the card's (review s46 M4: two copies).
BATCH_BEYOND_PUBLISHED_WORDS = (
    "The global batch, {batch:,} tokens per step, is {times:,.1f}x the largest a published pre-training used"
    " ({largest:,}: {run}); its time and cost are the model's, but no run shows it trains as well: past the"
    " critical batch more tokens per step stop saving steps"
)


def batch_beyond_published_values(p: Plan) -> dict[str, object]:
    """The figures ``BATCH_BEYOND_PUBLISHED_WORDS`` is filled with."""
    batch = p.estimate.global_batch_tokens
    return dict(
        batch=batch,
        times=batch / LARGEST_PUBLISHED_BATCH_TOKENS,
        largest=LARGEST_PUBLISHED_BATCH_TOKENS,
        run=LARGEST_PUBLISHED_BATCH_RUN,
    )


def batch_beyond_published_warnings(p: Plan) -> tuple[str, ...]:
    """The CLI's words of ``batch_beyond_published`` (the card's: ``batch_beyond_published`` in
    ui/i18n_messages.py)."""
    if not batch_beyond_published(p):
        return ()
    words = BATCH_BEYOND_PUBLISHED_WORDS.format(**batch_beyond_published_values(p))
    return (words + " (--global-batch-tokens sets it)",)
