"""Units and conversion factors, one value each.

Bytes are binary where memory is concerned (GiB, as PyTorch and nvidia-smi report it); time
is in seconds unless a name says otherwise.
"""

from __future__ import annotations

BYTES_PER_MB = 10**6  # decimal: file sizes and data rates, as ls and du -si print them
BYTES_PER_MIB = 2**20
BYTES_PER_GIB = 2**30
MIB = BYTES_PER_MIB
GIB = BYTES_PER_GIB
FP32_BYTES = 4.0  # one fp32 element
BF16_BYTES = 2.0  # one bf16 element
TOKENS_PER_BILLION = 1e9  # decimal, as training budgets are quoted (15T = 15e12)

SECONDS_PER_MINUTE = 60.0
SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24.0
SECONDS_PER_DAY = 86400.0
MONTHS_PER_YEAR = 12
# One value for the hours in a year: the mean calendar year (365.25 days, leap years
# included), 8766 h. Ownership is amortised over a lifetime of several calendar years, so
# the mean year is the right divisor; a 365-day year (8760 h) would spread a 4-year lifetime
# over a day less than it lasts. It is also the value the fleet ILP (planner.search.fleet)
# has always used, so its solutions are unchanged.
DAYS_PER_YEAR = 365.25
HOURS_PER_YEAR = DAYS_PER_YEAR * HOURS_PER_DAY
