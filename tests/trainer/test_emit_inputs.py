"""emit reads the tokenizer and lists the data as the data preparation will (trial s45: a text file
as --tokenizer, a tokenizer larger than the model's vocabulary, and a folder of .md files as --data
were all written into a job that ``run`` then refused, after a Slurm queue)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import jobs

from planner.layout import Layout, Precision, TrainingConfig
from planner.plan import Plan
from trainer.job import emit_job
from trainer.job_spec import RunSettings


def tiny_plan() -> Plan:  # the tiny preset: vocabulary 512
    return jobs.make_plan(Layout(dp_shard=2), TrainingConfig(seq_len=64, micro_batch=1, precision=Precision.FP32), 2)


def word_tokenizer(path: Path, words: int) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {f"w{i}": i for i in range(words)} | {"<|endoftext|>": words, "[UNK]": words + 1}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(path))
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("w1 w2 w3 w4\n")
    return tmp_path / "corpus"


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("not a tokenizer", r"--tokenizer .*/notes\.txt: cannot load tokenizer"),
        ("too many tokens", r"--tokenizer .*/big\.json: 1002 tokens do not fit the model's vocab_size 512"),
        ("no data files", r"--data .*/notes: no \.txt, \.jsonl, \.parquet files found"),
    ],
)
def test_emit_refuses_inputs_the_run_would_refuse(tmp_path: Path, corpus: Path, case: str, words: str) -> None:
    (tmp_path / "notes.txt").write_text("not json\n")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "README.md").write_text("# notes\n")
    run = {
        "not a tokenizer": RunSettings(data=str(corpus), tokenizer=str(tmp_path / "notes.txt")),
        "too many tokens": RunSettings(data=str(corpus), tokenizer=str(word_tokenizer(tmp_path / "big.json", 1000))),
        "no data files": RunSettings(data=str(tmp_path / "notes")),
    }[case]
    with pytest.raises(ValueError, match=words):
        emit_job(tiny_plan(), tmp_path / "job", name="inputs", run=run)
    assert not (tmp_path / "job").exists()  # nothing written


def test_emit_takes_a_tokenizer_that_fits_and_a_corpus(tmp_path: Path, corpus: Path) -> None:
    tokenizer = word_tokenizer(tmp_path / "small.json", 100)
    emit_job(tiny_plan(), tmp_path / "job", name="inputs", run=RunSettings(data=str(corpus), tokenizer=str(tokenizer)))
    assert (tmp_path / "job" / "job.json").is_file()
