"""What the energy figure assumes, said where it is printed (review s48): the CLI's energy line and
the app card's energy help read planner/model/energy.py ``power_basis_words``, whose figures are
the settings' (``power_fraction_of_max``, ``pue``)."""

from support.app import EN, ZH

from planner.api import build_plan
from planner.catalog.models import get_preset
from planner.layout import Layout, TrainingConfig
from planner.model.energy import power_basis_words
from planner.model.settings import DEFAULT_SETTINGS
from ui.render import summary_lines


def test_the_words_follow_the_settings():
    assert power_basis_words() == (
        "servers drawing 80% of their maximum power whatever the MFU, PUE 1.25"
    )  # the settings' 0.8 and 1.25 (planner/model/settings_job.py)
    other = power_basis_words(DEFAULT_SETTINGS.but(power_fraction_of_max=0.65, pue=1.1))
    assert "65% of their maximum power" in other and other.endswith("PUE 1.1")


def test_the_cli_energy_line_says_what_it_assumes():
    plan = build_plan(
        get_preset("llama3-8b"), "h100-sxm", Layout(), TrainingConfig(seq_len=4096), num_gpus=8, training_tokens=1e10
    )
    (line,) = [line for line in summary_lines(plan) if "energy " in line and "kWh" in line]
    assert line.endswith(": " + power_basis_words())


def test_the_card_help_says_it_in_both_languages():
    fraction, pue = f"{DEFAULT_SETTINGS.power_fraction_of_max:.0%}", f"{DEFAULT_SETTINGS.pue:g}"
    assert EN("card_energy_help") == "Servers drawing 80% of their maximum power whatever the MFU, PUE 1.25."
    for tr in (EN, ZH):
        assert fraction in tr("card_energy_help") and f"PUE {pue}" in tr("card_energy_help")
