"""Money reads short at every size: no "$36,795,068,668.09M", no "$0" for a small job."""

from planner.fmt import money, money_band


def test_large_sums_take_billions_and_trillions():
    assert money(2_500_000) == "$2.50M"
    assert money(3.2e9) == "$3.20B"
    assert money(36_795_068.67e6) == "$36.80T"


def test_a_sum_under_a_dollar_keeps_its_cents():
    assert money(0.37) == "$0.37"
    assert money_band(0.37, (0.3, 0.45)) == "$0.37 ($0.30-$0.45)"
    assert money(12_345.6) == "$12,346" and money(9.349, cents_below=100) == "$9.35"
