"""Every regime feature a band can name has words in every language of the app."""

from planner.accuracy.regime import Feature
from ui.i18n import LANGUAGES, all_labels


def test_every_regime_feature_has_words_in_every_language():
    for lang in LANGUAGES:
        labels = all_labels(lang)
        missing = [f.name for f in Feature if not labels.get(f"feature_{str(f.name).lower()}")]
        assert not missing, (lang, missing)
