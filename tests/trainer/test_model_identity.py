"""Which model a checkpoint holds (trainer/files.py ``model_identity``): the fingerprint a
checkpoint records must survive a trainplan upgrade that adds a defaulted field to the model spec
(ckpt49: rope_attention_factor changed every model's fingerprint and no checkpoint resumed)."""

from __future__ import annotations

from types import SimpleNamespace

from planner.catalog.models import get_preset
from planner.model.spec import ModelSpec
from trainer.files import ModelIdentity, model_identity

# The tiny preset's fingerprints. If one changes, every checkpoint of tiny written before stops
# resuming: keep the rule that made it in ``ModelIdentity.earlier`` instead.
TINY_SHA256 = "a3cf4f9958fc713bb8eb782d04131ee6cd4d75c48e9c6666307deb961e2c0c2c"
# What trainplan wrote until session 49 (the whole spec): a checkpoint of trial49's j2, step 25.
TINY_WHOLE_SPEC_SHA256 = "2b3c63f8c2201c80054519f0f53709a5e7797fdd775be7393e00c614574623c0"


def identity(model: ModelSpec) -> ModelIdentity:
    return model_identity(SimpleNamespace(model=model))


def test_the_fingerprints_of_a_preset_are_pinned_and_both_resume() -> None:
    tiny = identity(get_preset("tiny"))
    assert (tiny.sha256, tiny.earlier) == (TINY_SHA256, (TINY_WHOLE_SPEC_SHA256,))
    assert tiny.holds(ModelIdentity(TINY_WHOLE_SPEC_SHA256, "model tiny"))
    assert tiny.holds(ModelIdentity(TINY_SHA256, "model tiny"))


def test_a_new_defaulted_field_keeps_the_fingerprint_and_another_model_does_not_match() -> None:
    class NewerSpec(ModelSpec):
        planner_only_knob: float = 1.0  # what a later session may add

    tiny = get_preset("tiny")
    newer = NewerSpec(**tiny.model_dump())
    assert identity(newer).sha256 == identity(tiny).sha256
    wider = tiny.model_copy(update={"hidden_size": 2 * tiny.hidden_size})
    assert not identity(tiny).holds(identity(wider))
    renamed = tiny.model_copy(update={"name": "my-tiny"})  # the name is not the weights
    assert identity(renamed).sha256 == identity(tiny).sha256
