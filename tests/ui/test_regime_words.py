"""Every regime feature a band can name has words in every language of the app."""

from planner.accuracy.regime import Feature
from ui.i18n import LANGUAGES, all_labels


def test_every_regime_feature_has_words_in_every_language():
    for lang in LANGUAGES:
        labels = all_labels(lang)
        missing = [f.name for f in Feature if not labels.get(f"feature_{str(f.name).lower()}")]
        assert not missing, (lang, missing)


def test_a_part_apart_for_its_link_is_named_in_the_pages_language():
    """planner/accuracy/links.py: "Hopper (h800's link)" is English; the Chinese card had read it raw."""
    from ui.i18n import Labels
    from ui.messages import generation_text

    assert generation_text(Labels("en"), "Hopper (h800's link)") == "Hopper (h800's link)"
    assert generation_text(Labels("zh"), "Hopper (h800's link)") == "Hopper（h800 的互连）"
    assert generation_text(Labels("zh"), "Hopper (h20)") == "Hopper (h20)"  # a GPU id only: no words
