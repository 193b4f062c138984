"""Money reads short at every size: no "$36,795,068,668.09M", no "$0" for a small job."""

from planner.fmt import energy, energy_band, expected_events, money, money_band, money_short


def test_large_sums_take_billions_and_trillions():
    assert money(2_500_000) == "$2.50M"
    assert money(3.2e9) == "$3.20B"
    assert money(36_795_068.67e6) == "$36.80T"


def test_a_sum_under_a_dollar_keeps_its_cents():
    assert money(0.37) == "$0.37"
    assert money_band(0.37, (0.3, 0.45)) == "$0.37 ($0.30-$0.45)"
    assert money(12_345.6) == "$12,346" and money(9.349, cents_below=100) == "$9.35"


def test_small_sums_keep_their_cents_across_a_band_and_a_budget():
    # Trial s21: "$0.91 ($0.78-$1)" and a budget of "$0.6" beside "$0.63".
    assert money_band(0.91, (0.78, 1.05)) == "$0.91 ($0.78-$1.05)"
    assert money_band(12.6, (10.2, 14.9)) == "$13 ($10-$15)"
    assert money_short(0.63) == "$0.63" and money_short(7.8) == "$7.80" and money_short(12.34) == "$12.3"
    assert money_short(100.0) == "$100" and money_short(99.96, round_up=True) == "$100" and money_short(1e3) == "$1.0k"
    assert money_short(99.96) == "$100" and money_short(999.97) == "$1,000"
    assert energy(0.23) == "0.23 kWh" and energy(4693.2) == "4,693 kWh" and energy(None) == "-"
    # a band that is the figure alone says nothing (s36: "idle ... $0 ($0-$0)")
    assert money(0.0) == "$0" and money_band(0.0, (0.0, 0.0)) == "$0" and money_band(5.0, (5.0, 5.0)) == "$5.00"


def test_energy_carries_its_band_in_its_own_style():
    assert energy_band(3955.2, (3240.0, 6090.4)) == "3,955 kWh (3,240-6,090)"
    assert energy_band(4.2, (3.61, 5.04)) == "4.2 kWh (3.6-5.0)"  # the figure's decimals at both ends
    assert energy_band(0.086, (0.074, 0.1)) == "0.086 kWh (0.074-0.100)"  # trial s33: not "(0.074-0.1)"
    assert energy_band(0.5, (0.43, 0.58)).startswith(energy(0.5))  # review s33: the figure as energy() has it
    assert energy_band(471.0, None) == "471 kWh" and energy_band(None, (1.0, 2.0)) == "-"


def test_a_budget_answer_always_prints_the_cost_above_the_budget():
    """Review s31: whole dollars printed "$165,450 > $165,450" for a fractional budget and "$2 > $0"
    for $1.0045 against $0.01. The cost rounds up, the budget down, cents below $10 or on a tie."""
    from planner.fmt import budget_amounts

    assert budget_amounts(165_449.69, 165_449.6) == ("$165,450", "$165,449", "$165,450")
    assert budget_amounts(1.0045, 0.01) == ("$1.01", "$0.01", "$1.01")
    assert budget_amounts(0.634, 0.63) == ("$0.64", "$0.63", "$0.64")
    assert budget_amounts(100_000.4, 100_000.0) == ("$100,001", "$100,000", "$100,001")
    assert budget_amounts(3_236_521.0, 3.2e6) == ("$3.24M", "$3.20M", "$3.24M")
    # trial s35: one or two decimals by the figures ("$30.1M > $30.0M" at p80, "$31.92M" at p90)
    assert budget_amounts(30_070_000.0, 30e6) == ("$30.07M", "$30.00M", "$30.07M")
    assert budget_amounts(31_920_000.0, 30e6) == ("$31.92M", "$30.00M", "$31.92M")
    assert budget_amounts(30_071_234.0, 30e6) == ("$30.08M", "$30.00M", "$30.08M")  # rounded up, as raised to
    assert budget_amounts(10_300.0, 1.0) == ("$10.3k", "$1.00", "$10.3k")  # a tiny budget in its own unit
    # review s35: "$100.00k" beside "$1.20M"; "$3,292,678 > $500,000" where "$3.3M" was printed
    assert budget_amounts(1.2e6, 1e5) == ("$1.20M", "$0.10M", "$1.20M")
    assert budget_amounts(3_292_678.0, 5e5) == ("$3.30M", "$0.50M", "$3.30M")
    assert budget_amounts(1.2e6, 5e4) == ("$1.20M", "$50.0k", "$1.20M")
    assert budget_amounts(1e6, 999_996.0) == ("$1,000,000", "$999,996", "$1,000,000")  # a gap under a step
    for cost, budget in ((165_449.69, 165_449.6), (1.0045, 0.01), (12.345, 12.34), (10.004, 10.0), (1e6, 999_996.0)):
        shown_cost, shown_budget, _ = budget_amounts(cost, budget)
        assert shown_cost != shown_budget


def test_expected_interruptions_read_two_figures_under_ten_and_never_zero_when_some():
    """Trial s47 L7: --json's 0.151 was printed 0.2 (and the card's '< 0.1' beside the CLI's '0.0')."""
    assert expected_events(0.151) == "0.15" and expected_events(2.34) == "2.3" and expected_events(419.4) == "419"
    assert expected_events(0.004) == "< 0.01" and expected_events(0.0) == "0" and expected_events(12_345.6) == "12,346"
