"""trainer.data and trainer.loader: cleaning, 8:1:1 document split, packed shards, per-rank resumable loaders."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from trainer import data
from trainer.data import BYTE_VOCAB_SIZE, SYNTHETIC_FOLLOW_PROB, is_garbled, prepare_data
from trainer.data_meta import SPLITS, read_meta
from trainer.job_spec import RunSettings
from trainer.loader import build_loader

WORDS = [
    "river",
    "stone",
    "light",
    "garden",
    "paper",
    "window",
    "morning",
    "silver",
    "market",
    "bridge",
    "quiet",
    "yellow",
    "winter",
    "forest",
    "engine",
    "letter",
    "harbor",
    "candle",
    "meadow",
    "thunder",
]
MODEL_VOCAB = 512


def make_documents(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [
        f"Document {i}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 40))) + "." for i in range(count)
    ]


def write_jsonl(path: Path, texts: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    return path


def shard_documents(job_dir: Path, split: str) -> list[str]:
    """Decode a byte-level shard back into its documents."""
    meta = read_meta(job_dir / "data")
    tokens = np.fromfile(job_dir / "data" / f"{split}.bin", dtype=meta["dtype"])
    ends = np.flatnonzero(tokens == BYTE_VOCAB_SIZE - 1)
    starts = np.concatenate([[0], ends[:-1] + 1])
    return [tokens[s:e].astype(np.uint8).tobytes().decode() for s, e in zip(starts, ends, strict=True)]


@pytest.fixture
def corpus_job(tmp_path: Path) -> tuple[RunSettings, Path, list[str]]:
    texts = make_documents(600)
    write_jsonl(tmp_path / "corpus" / "docs.jsonl", texts)
    return RunSettings(data=str(tmp_path / "corpus"), seed=7), tmp_path / "job", texts


# --------------------------------------------------------------------------- cleaning and splitting


def test_cleaning_counts_duplicates_empty_and_garbled(tmp_path: Path, capsys) -> None:
    good = make_documents(50)
    duplicates = [good[0], "  " + good[1].replace(" ", "   ") + "\n", good[2]]  # whitespace-only variants too
    empty = ["", "   \n\t "]
    garbled = [
        "Caf\ufffd " * 20,  # mis-decoded bytes
        "text " + "\x00\x01\x02" * 10 + " more text",  # binary control characters
        "#### 1234 5678 !!! ??? %%% 9999 &&& ***",
    ]  # no letters to speak of
    write_jsonl(tmp_path / "in.jsonl", good + duplicates + empty + garbled)
    info = prepare_data(RunSettings(data=str(tmp_path / "in.jsonl")), tmp_path / "job", MODEL_VOCAB, 16)
    c = info.cleaning
    assert (c.num_read, c.num_empty, c.num_garbled, c.num_duplicates, c.num_kept) == (58, 2, 3, 3, 50)
    said = capsys.readouterr().out
    assert "58 documents: 2 empty, 3 garbled, 3 duplicates removed, 50 kept" in said
    # trial s27: nothing was said before the work, which takes minutes on a large corpus
    assert said.index("data: preparing 1 file(s), ") < said.index("data: read 58 documents")
    kept = sorted(doc for s in SPLITS for doc in shard_documents(tmp_path / "job", s))
    assert kept == sorted(good)


def test_garbled_thresholds_keep_ordinary_text() -> None:
    assert not is_garbled("def f(x):\n    return x + 1  # a line of code with some symbols")
    assert not is_garbled("Übergrößenträger café naïve — ordinary accented text, 2024.")
    assert not is_garbled("Одна строка русского текста и ещё немного слов")
    assert is_garbled("\ufffd\ufffd bad bytes in the middle of an otherwise fine sentence here")


def test_split_is_8_1_1_by_document_disjoint_and_round_trips(corpus_job) -> None:
    run, job_dir, _texts = corpus_job
    write_jsonl(Path(run.data) / "docs.jsonl", make_documents(3000))
    info = prepare_data(run, job_dir, MODEL_VOCAB, 32)
    counts = {s: getattr(info, s).num_documents for s in SPLITS}
    assert sum(counts.values()) == 3000
    # Hash buckets are binomial: 4 standard deviations around 2400/300/300.
    assert abs(counts["train"] - 2400) < 88 and abs(counts["val"] - 300) < 66 and abs(counts["test"] - 300) < 66
    decoded = {s: shard_documents(job_dir, s) for s in SPLITS}
    assert {s: len(d) for s, d in decoded.items()} == counts
    sets = [set(decoded[s]) for s in SPLITS]
    assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
    assert set().union(*sets) == set(make_documents(3000))
    meta = read_meta(job_dir / "data")
    assert meta["dtype"] == "uint16"
    for s in SPLITS:
        size = (job_dir / "data" / f"{s}.bin").stat().st_size
        assert size == 2 * getattr(info, s).num_tokens == 2 * meta["splits"][s]["num_tokens"]


def test_split_assignment_does_not_depend_on_seed_or_order(tmp_path: Path) -> None:
    texts = make_documents(400)
    write_jsonl(tmp_path / "a" / "d.jsonl", texts)
    write_jsonl(tmp_path / "b" / "d.jsonl", texts[::-1])
    prepare_data(RunSettings(data=str(tmp_path / "a"), seed=1), tmp_path / "ja", MODEL_VOCAB, 8)
    prepare_data(RunSettings(data=str(tmp_path / "b"), seed=2), tmp_path / "jb", MODEL_VOCAB, 8)
    for split in SPLITS:
        assert set(shard_documents(tmp_path / "ja", split)) == set(shard_documents(tmp_path / "jb", split))


def test_txt_jsonl_and_parquet_inputs_give_the_same_tokens(tmp_path: Path) -> None:
    texts = make_documents(200)
    write_jsonl(tmp_path / "jsonl" / "part.jsonl", texts)
    (tmp_path / "txt").mkdir()
    (tmp_path / "txt" / "all.txt").write_text(("\n" + data.TXT_DOCUMENT_SEPARATOR + "\n").join(texts))
    (tmp_path / "parquet").mkdir()
    pq.write_table(pa.table({"text": texts, "id": list(range(200))}), tmp_path / "parquet" / "part.parquet")
    shards = []
    for kind in ("jsonl", "txt", "parquet"):
        info = prepare_data(RunSettings(data=str(tmp_path / kind)), tmp_path / f"job-{kind}", MODEL_VOCAB, 8)
        assert info.cleaning.num_kept == 200
        shards.append((tmp_path / f"job-{kind}" / "data" / "train.bin").read_bytes())
    assert shards[0] == shards[1] == shards[2]


def test_directory_of_mixed_files_is_read_in_sorted_order(tmp_path: Path) -> None:
    texts = make_documents(90)
    write_jsonl(tmp_path / "in" / "b.jsonl", texts[30:60])
    write_jsonl(tmp_path / "in" / "sub" / "c.jsonl", texts[60:])
    (tmp_path / "in" / "a.txt").write_text(texts[0] + "\n<|endoftext|>\n" + "\n<|endoftext|>\n".join(texts[1:30]))
    (tmp_path / "in" / "notes.md").write_text("ignored")
    (tmp_path / "in" / ".hidden").mkdir()
    write_jsonl(tmp_path / "in" / ".hidden" / "x.jsonl", ["hidden files are skipped entirely"])
    info = prepare_data(RunSettings(data=str(tmp_path / "in")), tmp_path / "job", MODEL_VOCAB, 8)
    assert info.cleaning.num_read == 90
    train = shard_documents(tmp_path / "job", "train")
    assert train == [t for t in texts if t in set(train)]  # file order, then line order


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"text": "fine"}\n{"text": broken\n', "bad.jsonl:2: invalid JSON"),
        ('{"text": "fine"}\n{"body": "no text"}\n', 'bad.jsonl:2: expected an object with a string "text" field'),
        ('["not", "an", "object"]\n', "bad.jsonl:1: expected an object"),
    ],
)
def test_bad_jsonl_names_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "bad.jsonl").write_text(content)
    with pytest.raises(ValueError, match=message):
        prepare_data(RunSettings(data=str(tmp_path / "bad.jsonl")), tmp_path / "job", MODEL_VOCAB, 8)


def test_a_few_invalid_jsonl_lines_are_skipped_and_counted_many_stop(tmp_path: Path, capsys) -> None:
    """Trial s45 L9: one truncated line stopped a whole corpus. Up to 1% of a file's lines are
    skipped, counted and the first named; more (another format, another field name) still stop."""
    lines = [json.dumps({"text": t}) + "\n" for t in make_documents(400)]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_text("".join([*lines[:100], '{"body": "no text"}\n', *lines[100:200]]))
    (tmp_path / "in" / "b.jsonl").write_text("".join(lines[200:]) + '{"text": "cut off')  # a download cut mid-line
    info = prepare_data(RunSettings(data=str(tmp_path / "in")), tmp_path / "job", MODEL_VOCAB, 16)
    assert info.cleaning.num_invalid_lines == 2 and info.cleaning.num_read == 400
    out = capsys.readouterr().out
    assert "skipped 1 invalid line of 201; the first: " in out and "a.jsonl:101: expected an object" in out
    assert "b.jsonl:201: invalid JSON (Unterminated string" in out
    assert "(2 invalid .jsonl lines skipped)" in out
    assert read_meta(tmp_path / "job" / "data")["cleaning"]["num_invalid_lines"] == 2
    (tmp_path / "c.jsonl").write_text("".join(lines[:100]) + "{\n" * 2)  # 2 of 102 lines: over 1%
    with pytest.raises(ValueError, match=r"c.jsonl:101: invalid JSON .*; 2 of its 102 lines are invalid, over the 1%"):
        prepare_data(RunSettings(data=str(tmp_path / "c.jsonl")), tmp_path / "job2", MODEL_VOCAB, 16)
    assert not (tmp_path / "job2" / "data" / "meta.json").exists()


def test_bad_inputs_are_refused_clearly(tmp_path: Path) -> None:
    pq.write_table(pa.table({"content": ["x"]}), tmp_path / "p.parquet")
    with pytest.raises(ValueError, match=r'p.parquet: parquet file has no "text" column'):
        prepare_data(RunSettings(data=str(tmp_path / "p.parquet")), tmp_path / "job", MODEL_VOCAB, 8)
    with pytest.raises(ValueError, match="data path does not exist"):
        prepare_data(RunSettings(data=str(tmp_path / "missing")), tmp_path / "job", MODEL_VOCAB, 8)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"no .txt, .jsonl, .parquet files found"):
        prepare_data(RunSettings(data=str(tmp_path / "empty")), tmp_path / "job", MODEL_VOCAB, 8)
    (tmp_path / "x.csv").write_text("text\nhello\n")
    with pytest.raises(ValueError, match="unsupported data file"):
        prepare_data(RunSettings(data=str(tmp_path / "x.csv")), tmp_path / "job", MODEL_VOCAB, 8)
    write_jsonl(tmp_path / "small.jsonl", ["only a few words here"])
    with pytest.raises(ValueError, match="fewer than one sequence of 4096"):
        prepare_data(RunSettings(data=str(tmp_path / "small.jsonl")), tmp_path / "job", MODEL_VOCAB, 4096)
    with pytest.raises(ValueError, match="257 tokens do not fit the model's vocab_size 100"):
        prepare_data(RunSettings(), tmp_path / "job", 100, 8)


# --------------------------------------------------------------------------- shards on disk


def test_prepare_is_idempotent_and_rebuilds_when_inputs_change(corpus_job, capsys) -> None:
    run, job_dir, texts = corpus_job
    first = prepare_data(run, job_dir, MODEL_VOCAB, 32)
    shard = job_dir / "data" / "train.bin"
    stamp = shard.stat().st_mtime_ns
    os.utime(Path(run.data) / "docs.jsonl")  # a new mtime alone (a copy) changes nothing
    second = prepare_data(run, job_dir, MODEL_VOCAB, 32)
    assert (first.reused, second.reused) == (False, True)
    assert second == first.__class__(**{**first.__dict__, "reused": True})
    assert shard.stat().st_mtime_ns == stamp
    assert "reusing prepared shards" in capsys.readouterr().out
    write_jsonl(Path(run.data) / "docs.jsonl", texts[:-1])
    third = prepare_data(run, job_dir, MODEL_VOCAB, 32)
    assert not third.reused and third.fingerprint != first.fingerprint
    assert third.cleaning.num_kept == len(texts) - 1


def test_interrupted_build_leaves_nothing_that_looks_valid(corpus_job, monkeypatch) -> None:
    run, job_dir, _texts = corpus_job
    prepare_data(run, job_dir, MODEL_VOCAB, 32)
    write_jsonl(Path(run.data) / "docs.jsonl", make_documents(600, seed=1))
    calls = {"n": 0}
    real_append = data._ShardWriter.append

    def crash_midway(self, split, arrays):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt  # e.g. Ctrl-C while tokenising
        real_append(self, split, arrays)

    monkeypatch.setattr(data._ShardWriter, "append", crash_midway)
    with pytest.raises(KeyboardInterrupt):
        prepare_data(run, job_dir, MODEL_VOCAB, 32)
    assert read_meta(job_dir / "data") is None  # the old shards no longer claim to be current
    assert not list((job_dir / "data").glob(".*tmp"))
    with pytest.raises(ValueError, match="no prepared data"):
        build_loader(run, job_dir, "train", 32, 2, 0, 1, MODEL_VOCAB)
    monkeypatch.setattr(data._ShardWriter, "append", real_append)
    assert not prepare_data(run, job_dir, MODEL_VOCAB, 32).reused


def test_truncated_shard_is_detected_and_rebuilt(corpus_job) -> None:
    run, job_dir, _ = corpus_job
    prepare_data(run, job_dir, MODEL_VOCAB, 32)
    shard = job_dir / "data" / "val.bin"
    good = shard.read_bytes()
    shard.write_bytes(good[: len(good) // 2])
    assert read_meta(job_dir / "data") is None
    assert not prepare_data(run, job_dir, MODEL_VOCAB, 32).reused
    assert shard.read_bytes() == good


def test_unreachable_inputs_reuse_prepared_shards(corpus_job, capsys) -> None:
    run, job_dir, _ = corpus_job
    first = prepare_data(run, job_dir, MODEL_VOCAB, 32)
    (Path(run.data) / "docs.jsonl").rename(job_dir.parent / "moved.jsonl")
    Path(run.data).rmdir()
    again = prepare_data(run, job_dir, MODEL_VOCAB, 32)
    assert again.reused and again.fingerprint == first.fingerprint
    assert "is not reachable here" in capsys.readouterr().out


# --------------------------------------------------------------------------- tokenizer.json


def _train_tokenizer(path: Path, texts: list[str], special: list[str]) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=["[UNK]", *special]))
    tokenizer.save(str(path))
    return path


def test_tokenizer_json_is_used_and_checked_against_the_model_vocab(tmp_path: Path) -> None:
    texts = make_documents(300)
    write_jsonl(tmp_path / "in.jsonl", texts)
    tok_path = _train_tokenizer(tmp_path / "tokenizer.json", texts, ["<|endoftext|>"])
    from tokenizers import Tokenizer

    reference = Tokenizer.from_file(str(tok_path))
    vocab = reference.get_vocab_size()
    run = RunSettings(data=str(tmp_path / "in.jsonl"), tokenizer=str(tok_path))
    info = prepare_data(run, tmp_path / "job", MODEL_VOCAB, 16)
    assert info.tokenizer_vocab_size == vocab and info.eos_id == reference.token_to_id("<|endoftext|>")
    tokens = np.fromfile(tmp_path / "job" / "data" / "train.bin", dtype=info.dtype)
    first_doc = tokens[: np.flatnonzero(tokens == info.eos_id)[0]]
    assert reference.decode(first_doc.tolist()) in {reference.decode(reference.encode(t).ids) for t in texts}
    assert info.train.num_tokens < sum(len(t) for t in texts) / 2  # words, not bytes
    with pytest.raises(ValueError, match=f"{vocab} tokens do not fit the model's vocab_size {vocab - 1}"):
        prepare_data(run, tmp_path / "job2", vocab - 1, 16)
    no_eos = _train_tokenizer(tmp_path / "no_eos.json", texts, [])
    with pytest.raises(ValueError, match="no end-of-document token"):
        prepare_data(run.model_copy(update={"tokenizer": str(no_eos)}), tmp_path / "job3", MODEL_VOCAB, 16)
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"broken.json: cannot load tokenizer"):
        prepare_data(
            run.model_copy(update={"tokenizer": str(tmp_path / "broken.json")}), tmp_path / "j4", MODEL_VOCAB, 16
        )


def test_changing_the_tokenizer_rebuilds_the_shards(tmp_path: Path) -> None:
    texts = make_documents(200)
    write_jsonl(tmp_path / "in.jsonl", texts)
    run = RunSettings(data=str(tmp_path / "in.jsonl"))
    byte_level = prepare_data(run, tmp_path / "job", MODEL_VOCAB, 16)
    tok = _train_tokenizer(tmp_path / "tokenizer.json", texts, ["</s>"])
    words = prepare_data(run.model_copy(update={"tokenizer": str(tok)}), tmp_path / "job", MODEL_VOCAB, 16)
    assert not words.reused and words.fingerprint != byte_level.fingerprint


# --------------------------------------------------------------------------- loaders


def _epoch_indices(loader) -> list[np.ndarray]:
    return [loader.next_indices() for _ in range(loader.batches_per_epoch)]


def test_rank_slices_are_disjoint_and_cover_the_epoch(corpus_job) -> None:
    run, job_dir, _ = corpus_job
    info = prepare_data(run, job_dir, MODEL_VOCAB, 32)
    num_sequences = info.num_sequences("train", 32)
    dp_size, micro_batch = 3, 4
    per_rank = [
        np.concatenate(_epoch_indices(build_loader(run, job_dir, "train", 32, micro_batch, r, dp_size, MODEL_VOCAB)))
        for r in range(dp_size)
    ]
    usable = num_sequences // dp_size // micro_batch * micro_batch
    assert all(len(indices) == usable for indices in per_rank)
    union = np.concatenate(per_rank)
    assert len(np.unique(union)) == len(union) == usable * dp_size  # disjoint
    assert union.min() >= 0 and union.max() < num_sequences
    assert num_sequences - len(union) < dp_size * micro_batch  # only the remainder is left out
    # A new epoch visits the sequences in a different order.
    loader = build_loader(run, job_dir, "train", 32, micro_batch, 0, dp_size, MODEL_VOCAB)
    first, second = np.concatenate(_epoch_indices(loader)), np.concatenate(_epoch_indices(loader))
    assert loader.epoch == 1 and not np.array_equal(first, second)


def test_batches_are_shifted_windows_of_the_shard(corpus_job) -> None:
    run, job_dir, _ = corpus_job
    prepare_data(run, job_dir, MODEL_VOCAB, 32)
    tokens = np.fromfile(job_dir / "data" / "train.bin", dtype=np.uint16).astype(np.int64)
    loader = build_loader(run, job_dir, "train", 32, 4, 1, 2, MODEL_VOCAB)
    state = dict(loader.state_dict())
    inputs, labels = next(loader)
    assert inputs.shape == labels.shape == (4, 32) and inputs.dtype == labels.dtype == torch.int64
    loader.load_state_dict(state)
    for row, index in enumerate(loader.next_indices()):
        window = tokens[index * 32 : index * 32 + 33]
        assert inputs[row].tolist() == window[:-1].tolist() and labels[row].tolist() == window[1:].tolist()


@pytest.mark.parametrize("synthetic", [False, True])
def test_resume_continues_exactly_like_an_uninterrupted_run(corpus_job, synthetic: bool) -> None:
    run, job_dir, _ = corpus_job
    if synthetic:
        run = RunSettings(seed=7)
    prepare_data(run, job_dir, MODEL_VOCAB, 32)
    make = lambda: build_loader(run, job_dir, "train", 32, 4, 1, 2, MODEL_VOCAB)  # noqa: E731
    reference = make()
    expected = [next(reference) for _ in range(40)]  # crosses epoch boundaries (6 batches per epoch)
    interrupted = make()
    for _ in range(17):
        next(interrupted)
    state = json.loads(json.dumps(interrupted.state_dict()))  # what a checkpoint stores
    resumed = make()
    resumed.load_state_dict(state)
    for want in expected[17:]:
        got = next(resumed)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_resume_with_a_new_batch_shape_keeps_the_global_position(corpus_job, capsys) -> None:
    run, job_dir, _ = corpus_job
    prepare_data(run, job_dir, MODEL_VOCAB, 32)
    before = [build_loader(run, job_dir, "train", 32, 2, r, 2, MODEL_VOCAB) for r in range(2)]
    for loader in before:
        for _ in range(3):
            next(loader)
    after = build_loader(run, job_dir, "train", 32, 4, 0, 1, MODEL_VOCAB)
    after.load_state_dict(before[0].state_dict())
    assert (after.epoch, after.position) == (0, 3)  # 3 x 2 x 2 = 12 sequences = 3 batches of 4
    assert "batch shape changed" in capsys.readouterr().err
    with pytest.raises(ValueError, match="state is for split 'train', not 'val'"):
        build_loader(run, job_dir, "val", 32, 1, 0, 1, MODEL_VOCAB).load_state_dict(after.state_dict())


def test_changed_data_restarts_the_epoch_with_a_warning(corpus_job, capsys) -> None:
    run, job_dir, _ = corpus_job
    prepare_data(run, job_dir, MODEL_VOCAB, 32)
    loader = build_loader(run, job_dir, "train", 32, 2, 0, 1, MODEL_VOCAB)
    for _ in range(5):
        next(loader)
    state = loader.state_dict()
    write_jsonl(Path(run.data) / "docs.jsonl", make_documents(700, seed=3))
    prepare_data(run, job_dir, MODEL_VOCAB, 32)
    fresh = build_loader(run, job_dir, "train", 32, 2, 0, 1, MODEL_VOCAB)
    fresh.load_state_dict(state)
    assert (fresh.epoch, fresh.position) == (0, 0)
    assert "changed since this state was saved" in capsys.readouterr().err


def test_too_small_split_and_bad_shapes_are_refused(corpus_job) -> None:
    run, job_dir, _ = corpus_job
    info = prepare_data(run, job_dir, MODEL_VOCAB, 32)
    num_val = info.num_sequences("val", 32)
    with pytest.raises(ValueError, match=f"the val split has {num_val} sequences of 32 tokens, too few for 4"):
        build_loader(run, job_dir, "val", 32, num_val, 0, 4, MODEL_VOCAB)
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        build_loader(run, job_dir, "dev", 32, 1, 0, 1, MODEL_VOCAB)
    with pytest.raises(ValueError, match="bad loader shape"):
        build_loader(run, job_dir, "train", 32, 1, 2, 2, MODEL_VOCAB)
    with pytest.raises(ValueError, match="more than the model's vocab_size 200"):
        build_loader(run, job_dir, "train", 32, 1, 0, 1, 200)


def test_synthetic_data_is_deterministic_per_seed_rank_and_split(tmp_path: Path) -> None:
    def first_batch(seed: int, rank: int, split: str = "train") -> torch.Tensor:
        return next(build_loader(RunSettings(seed=seed), tmp_path, split, 64, 2, rank, 2, MODEL_VOCAB))[0]

    assert torch.equal(first_batch(1, 0), first_batch(1, 0))
    assert not torch.equal(first_batch(1, 0), first_batch(2, 0))
    assert not torch.equal(first_batch(1, 0), first_batch(1, 1))
    assert not torch.equal(first_batch(1, 0, "train"), first_batch(1, 0, "val"))
    assert not (tmp_path / "data").exists()  # nothing written for synthetic data


def test_synthetic_data_follows_its_rule_and_reports_the_loss_floor(tmp_path: Path) -> None:
    info = prepare_data(RunSettings(seed=3), tmp_path, MODEL_VOCAB, 128)
    assert info.synthetic and info.num_sequences("train", 128) is None
    loader = build_loader(RunSettings(seed=3), tmp_path, "train", 128, 8, 0, 1, MODEL_VOCAB)
    inputs, labels = next(loader)
    assert int(inputs.min()) >= 0 and int(inputs.max()) < MODEL_VOCAB
    step = (labels - inputs) % MODEL_VOCAB
    stride = int(torch.mode(step.flatten()).values)
    follow = float((step == stride).float().mean())
    assert abs(follow - (SYNTHETIC_FOLLOW_PROB + (1 - SYNTHETIC_FOLLOW_PROB) / MODEL_VOCAB)) < 0.03
    # Floor: the entropy of "successor with p, else uniform", far below uniform's log(V).
    assert 0.5 * np.log(MODEL_VOCAB) > info.loss_floor > (1 - SYNTHETIC_FOLLOW_PROB) * np.log(MODEL_VOCAB) * 0.9


def test_an_evaluation_takes_the_same_sequences_on_every_layout_of_the_batch(corpus_job) -> None:
    """Trial s45 L3: the validation and test sets held eval_batches micro-batches per rank, so
    dp1 x mb2 and dp1 x mb1 x accum 2 (pp) tested other sequences. Layouts of one global batch of
    4 sequences now evaluate the same ones, on a prepared corpus and on synthetic data."""
    from trainer.session import eval_micro_batches

    run, job_dir, _ = corpus_job
    prepare_data(run, job_dir, MODEL_VOCAB, 32)
    for data_run in (run, RunSettings()):
        sets = set()
        for dp_size, micro_batch, accum in ((1, 4, 1), (1, 2, 2), (1, 1, 4), (2, 2, 1), (2, 1, 2), (4, 1, 1)):
            loaders = [
                build_loader(data_run, job_dir, "val", 32, micro_batch, r, dp_size, MODEL_VOCAB) for r in range(dp_size)
            ]
            seen = [loader.next_indices() for loader in loaders for _ in range(eval_micro_batches(3, accum))]
            sets.add(tuple(sorted(np.concatenate(seen).tolist())))
        assert len(sets) == 1 and len(next(iter(sets))) == 3 * 4


# --------------------------------------------------------------------------- progress (trial s49 M6)


def test_file_digest_reads_in_chunks_and_is_blake2b_of_the_whole_file(tmp_path: Path) -> None:
    import hashlib

    from trainer.corpus import DIGEST_CHUNK_BYTES, file_digest

    path = tmp_path / "big.bin"
    path.write_bytes(os.urandom(DIGEST_CHUNK_BYTES + 12345))
    chunks: list[int] = []
    with path.open("rb") as handle:
        whole = hashlib.file_digest(handle, "blake2b").hexdigest()[:32]
    assert file_digest(path, chunks.append) == whole == file_digest(path)
    assert chunks == [DIGEST_CHUNK_BYTES, 12345]


def test_byte_progress_says_bytes_rate_and_time_left_once_per_interval(capsys) -> None:
    from trainer.log import setup_logging
    from trainer.progress import ByteProgress

    setup_logging()
    now = [0.0]
    progress = ByteProgress("tokenising", 100_000_000, interval_s=30.0, clock=lambda: now[0])
    now[0] = 10.0
    progress.done(10_000_000)  # before the interval: nothing
    assert capsys.readouterr().out == ""
    now[0] = 40.0
    progress.done(40_000_000)  # 1 MB/s: 60 MB left, a minute
    progress.done(41_000_000)  # said 0 s ago: nothing
    assert capsys.readouterr().out == "data: tokenising: 40 of 100 MB, 1.0 MB/s, about 1.0 minutes left\n"
    big = ByteProgress("hashing the inputs", 200_000_000, interval_s=0.0, clock=lambda: now[0] + 100)
    big.done(300_000_000)  # never past the total; whole MB from 100 MB on
    assert capsys.readouterr().out.startswith("data: hashing the inputs: 200 of 200 MB, ")


def test_preparing_the_data_says_how_far_it_is(corpus_job, monkeypatch, capsys) -> None:
    """Trial s49 M6: a 53 MB corpus tokenised for 7 s with one line (a 100 GB one: ~3.5 h)."""
    from trainer import progress

    monkeypatch.setattr(progress, "HEARTBEAT_S", 0.0)  # every document and chunk says it
    run, job_dir, _texts = corpus_job
    prepare_data(run, job_dir, MODEL_VOCAB, 32)
    out = capsys.readouterr().out
    size_mb = (Path(run.data) / "docs.jsonl").stat().st_size / 1e6
    hashing = [line for line in out.splitlines() if line.startswith("data: hashing the inputs: ")]
    tokenising = [line for line in out.splitlines() if line.startswith("data: tokenising: ")]
    assert hashing and len(tokenising) > 100  # one a document here
    assert tokenising[-1].startswith(f"data: tokenising: {size_mb:,.1f} of {size_mb:,.1f} MB, ")
    assert float(tokenising[len(tokenising) // 2].split()[2]) < size_mb  # it grows
    assert out.index(hashing[0]) < out.index("data: preparing") < out.index(tokenising[0])
