"""Issue #29, data preparation (docs/reliability.md, round 3): shards hashed and checked, token
ids checked against the vocabulary, a full disk, a signal, hostile and huge documents. All in
this process: ``prepare_data`` and ``trainer.launch.main`` are called directly."""

from __future__ import annotations

import json
import os
import random
import signal
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from support.jobs import write_job

from planner.errors import ExitCode
from planner.layout import Layout
from trainer import corpus, data, data_meta, launch
from trainer.data import prepare_data
from trainer.files import file_sha256
from trainer.job_spec import JobSpec, RunSettings
from trainer.loader import build_loader

WORDS = ["river", "stone", "light", "garden", "paper", "window", "morning", "silver", "market", "bridge"]
MODEL_VOCAB = 512


def corpus_file(path: Path, count: int = 80, seed: int = 0) -> Path:
    rng = random.Random(seed)
    docs = [f"Document {i}: " + " ".join(rng.choice(WORDS) for _ in range(30)) + "." for i in range(count)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n<|endoftext|>\n".join(docs) + "\n")
    return path


def prepare(source: Path, job_dir: Path, seq_len: int = 16):
    return prepare_data(RunSettings(data=str(source)), job_dir, MODEL_VOCAB, seq_len)


def data_job(tmp_path: Path, source: Path) -> Path:
    return write_job(tmp_path / "job", Layout(dp_shard=1), 1, data=str(source))


def one_error_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


# --------------------------------------------------------------------------- 2: shards are checked


def test_a_shard_changed_in_place_is_found_by_its_hash_and_prepared_again(tmp_path, capsys):
    source, job = corpus_file(tmp_path / "in" / "c.txt"), tmp_path / "job"
    prepare(source, job)
    train_bin = job / "data" / "train.bin"
    original = train_bin.read_bytes()
    train_bin.write_bytes(bytes(len(original)))  # zero-filled in place: the size still matches
    capsys.readouterr()
    info = prepare(source, job)
    assert not info.reused and train_bin.read_bytes() == original
    assert f"{train_bin} does not match its sha256 in meta.json; preparing the data again" in capsys.readouterr().out
    # Damaged again, and the source is gone: refused, not trained on.
    train_bin.write_bytes(bytes(len(original)))
    source.unlink()
    with pytest.raises(ValueError, match=r"does not match its sha256 in meta\.json, and .* is not reachable"):
        prepare(source, job)


def test_shards_the_launcher_just_checked_are_not_read_again_until_rewritten(tmp_path, monkeypatch, capsys):
    """Trial s45 L9: `trainplan run` hashed the shards and said "data: reusing prepared shards",
    then its rank 0 did both again. With the launcher's stamp rank 0 reuses them unread and silent;
    a shard rewritten since (its mtime) is hashed, found changed and prepared again."""
    source, job = corpus_file(tmp_path / "in" / "c.txt"), tmp_path / "job"
    prepare(source, job)
    stamp = data_meta.shards_stamp(job)
    assert stamp is not None and data_meta.shards_stamp(tmp_path / "nothing") is None
    hashed: list[Path] = []
    monkeypatch.setattr(data_meta, "file_sha256", lambda path: hashed.append(path) or file_sha256(path))
    capsys.readouterr()
    run = RunSettings(data=str(source))
    assert prepare_data(run, job, MODEL_VOCAB, 16, checked_stamp=stamp).reused
    assert hashed == [] and capsys.readouterr().out == ""
    train_bin = job / "data" / "train.bin"
    train_bin.write_bytes(bytes(train_bin.stat().st_size))  # zero-filled in place after the check
    assert not prepare_data(run, job, MODEL_VOCAB, 16, checked_stamp=stamp).reused
    assert train_bin in hashed and "does not match its sha256" in capsys.readouterr().out


def test_trainplan_run_says_and_reads_the_data_once(tmp_path, capfd):
    """The launcher prepares; its one worker (rank 0) says nothing more about the data."""
    job = data_job(tmp_path, corpus_file(tmp_path / "in" / "c.txt"))
    spec = json.loads((job / "job.json").read_text())
    spec["run"].update(steps=1, probe_steps=0, save_checkpoints=False)
    (job / "job.json").write_text(json.dumps(spec))
    assert launch.run_job(job, launch.NodeLaunch(device="cpu")) == ExitCode.OK
    out = capfd.readouterr().out
    assert out.count("data: preparing") == 1 and "data: reusing prepared shards" not in out, out
    meta_path = job / "data" / "meta.json"  # and a newer trainplan's key: one warning, the launcher's
    meta_path.write_text(json.dumps(json.loads(meta_path.read_text()) | {"augmentation": "none"}))
    assert (
        launch.run_job(job, launch.NodeLaunch(device="cpu")) == ExitCode.OK
    )  # a second launch: the launcher's line only
    out = capfd.readouterr().out
    assert out.count("data: reusing prepared shards") == 1 and out.count("does not know") == 1, out


def test_a_meta_json_dtype_that_is_not_the_tokenizers_is_prepared_again(tmp_path, capsys):
    source, job = corpus_file(tmp_path / "c.txt"), tmp_path / "job"
    prepare(source, job)
    meta_path = job / "data" / "meta.json"
    for dtype in ("float16", "uint32"):
        meta = json.loads(meta_path.read_text())
        meta["dtype"] = dtype
        meta_path.write_text(json.dumps(meta))
        assert not prepare(source, job).reused
        assert "; preparing the data again" in capsys.readouterr().out
        assert json.loads(meta_path.read_text())["dtype"] == "uint16"


def test_a_newer_trainplans_meta_json_keys_are_ignored_with_one_warning(tmp_path, capsys):
    """A data folder prepared by a newer trainplan: keys this version does not know are named in one
    warning line and ignored (an unknown cleaning count was a TypeError traceback); the known ones
    are still checked."""
    source, job = corpus_file(tmp_path / "c.txt"), tmp_path / "job"
    before = prepare(source, job)
    meta_path = job / "data" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["augmentation"] = {"kind": "none"}
    meta["cleaning"]["num_filtered"] = 3
    meta["splits"]["train"]["sha512"] = "00"
    meta["splits"]["dev"] = {"num_documents": 0, "num_tokens": 0}
    meta_path.write_text(json.dumps(meta))
    capsys.readouterr()
    info = prepare(source, job)
    warnings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("warning:")]
    assert info.reused and info.cleaning == before.cleaning and info.train == before.train
    assert warnings == [
        f"warning: data: {meta_path} has keys this version does not know, ignored (a newer trainplan's?):"
        " augmentation, cleaning.num_filtered, splits.train.sha512, splits.dev"
    ]
    loader = build_loader(RunSettings(data=str(source)), job, "train", 16, 2, 0, 1, MODEL_VOCAB)
    assert next(iter(loader))[0].shape == (2, 16)
    meta["dtype"] = "float16"  # a known key that is wrong: prepared again, as without the new keys
    meta_path.write_text(json.dumps(meta))
    assert not prepare(source, job).reused
    assert "says dtype 'float16'" in capsys.readouterr().out
    assert "augmentation" not in json.loads(meta_path.read_text())


def test_token_ids_outside_the_vocabulary_are_one_line_not_an_index_error(tmp_path):
    """0xFF bytes written into a shard after it was hashed (meta.json re-hashed to match)."""
    source, job = corpus_file(tmp_path / "c.txt"), tmp_path / "job"
    prepare(source, job)
    train_bin, meta_path = job / "data" / "train.bin", job / "data" / "meta.json"
    train_bin.write_bytes(b"\xff" * train_bin.stat().st_size)
    meta = json.loads(meta_path.read_text())
    meta["splits"]["train"]["sha256"] = file_sha256(train_bin)
    meta_path.write_text(json.dumps(meta))
    assert prepare(source, job).reused  # it verifies: only the loader can tell
    loader = build_loader(RunSettings(data=str(source)), job, "train", 16, 2, 0, 1, MODEL_VOCAB)
    with pytest.raises(ValueError, match=rf"{train_bin}: token id 65535 is outside the vocabulary of 257"):
        next(loader)


# --------------------------------------------------------------------------- 5: a full disk


def test_a_full_disk_while_preparing_exits_4_naming_the_data_dir(tmp_path, capsys):
    """The train shard is written to /dev/full (the kernel's ENOSPC), through ``trainer.launch``
    (as ``--prepare-only``) and ``trainplan run``, which prepares before torchrun starts."""
    job = data_job(tmp_path, corpus_file(tmp_path / "c.txt"))
    (job / "data").mkdir()
    (job / "data" / ".train.bin.tmp").symlink_to("/dev/full")
    assert launch.main([str(job), "--prepare-only"]) == ExitCode.DISK_FULL
    line = one_error_line(capsys.readouterr().err)
    assert f"disk full while preparing the data in {job / 'data'}" in line
    assert sorted(p.name for p in (job / "data").iterdir()) == []  # no .tmp left (nor the link)
    (job / "data" / ".train.bin.tmp").symlink_to("/dev/full")
    from ui.cli import main as trainplan

    assert trainplan(["run", str(job), "--device", "cpu"]) == ExitCode.DISK_FULL
    assert f"disk full while preparing the data in {job / 'data'}" in one_error_line(capsys.readouterr().err)


# --------------------------------------------------------------------------- 8, 22: hostile documents


def test_a_line_nested_100000_deep_names_its_file(tmp_path, capsys):
    source = tmp_path / "deep.jsonl"
    source.write_text(json.dumps({"text": "fine"}) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    job = data_job(tmp_path, source)
    assert launch.main([str(job), "--prepare-only"]) == ExitCode.INVALID
    assert f"{source}:2: JSON nested too deeply" in one_error_line(capsys.readouterr().err)


def test_a_lone_surrogate_is_counted_garbled_not_a_stop(tmp_path):
    source = tmp_path / "s.jsonl"
    rng = random.Random(1)
    docs = [f"Document {i}: " + " ".join(rng.choice(WORDS) for _ in range(30)) for i in range(40)]
    lines = [json.dumps({"text": d}) for d in docs]
    lines.insert(7, '{"text": "a river of stone \\ud800 and light"}')  # JSON's escape for a lone surrogate
    source.write_text("\n".join(lines) + "\n")
    info = prepare(source, tmp_path / "job")
    assert info.cleaning is not None
    assert (info.cleaning.num_garbled, info.cleaning.num_kept) == (1, 40)


# --------------------------------------------------------------------------- 24: a signal


def test_sigterm_while_preparing_leaves_no_tmp_files(tmp_path, monkeypatch, capsys):
    job = data_job(tmp_path, corpus_file(tmp_path / "c.txt", count=600))
    real_encode = corpus.Tokenizer.encode_documents

    def encode_then_sigterm(self, texts, dtype):
        os.kill(os.getpid(), signal.SIGTERM)  # a real signal, mid-way through the shards
        return real_encode(self, texts, dtype)

    monkeypatch.setattr(corpus.Tokenizer, "encode_documents", encode_then_sigterm)
    assert launch.prepare_or_exit_code(job, JobSpec.load(job)) == ExitCode.PREEMPTED
    assert "stopped by SIGTERM while preparing the data" in capsys.readouterr().err
    assert not [p.name for p in (job / "data").iterdir() if p.name.endswith(".tmp")]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored


# --------------------------------------------------------------------------- 15: one huge document


def test_one_huge_document_is_prepared_in_bounded_memory(tmp_path, monkeypatch):
    """A 1 MB one-document corpus read in pieces of 8 K characters: the peak is a fraction of the
    file (the whole-string path held ~14 copies of it), and the tokens are the document's bytes."""
    monkeypatch.setattr(corpus, "LONG_DOCUMENT_CHARS", 1 << 13)
    monkeypatch.setattr(data, "_COPY_CHUNK", 1 << 14)
    rng = random.Random(2)
    block = "\n".join(" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(1000))
    text = "\n".join([block] * 12)
    source = tmp_path / "one.txt"
    source.write_text(text)
    assert source.stat().st_size > 900_000
    tracemalloc.start()
    try:
        info = prepare(source, tmp_path / "job")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < source.stat().st_size / 3, peak
    split = next(s for s in ("train", "val", "test") if getattr(info, s).num_documents == 1)
    tokens = np.fromfile(tmp_path / "job" / "data" / f"{split}.bin", dtype=np.uint16)
    assert bytes(tokens[:-1].astype(np.uint8)) == text.encode() and tokens[-1] == corpus.BYTE_VOCAB_SIZE - 1


def test_long_documents_split_and_count_as_whole_ones(tmp_path, monkeypatch):
    """The streamed reader finds the same documents as the whole-file one: long ones among short
    ones, separators, an empty last document, and a long garbled one."""
    rng = random.Random(3)
    short = [" ".join(rng.choice(WORDS) for _ in range(20)) for _ in range(30)]
    long = " \n\t" * 3000 + "\n".join(" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(400)) + "\n "
    garbled = "\x01\x02" * 20_000
    docs = [*short[:10], long, *short[10:20], garbled, *short[20:], long, ""]
    source = tmp_path / "mixed.txt"
    source.write_text("\n<|endoftext|>\n".join(docs))
    whole = prepare(source, tmp_path / "whole")
    monkeypatch.setattr(corpus, "LONG_DOCUMENT_CHARS", 4096)
    streamed = prepare(source, tmp_path / "streamed")
    assert streamed.cleaning == whole.cleaning
    assert whole.cleaning is not None and (whole.cleaning.num_garbled, whole.cleaning.num_duplicates) == (1, 1)
    assert whole.cleaning.num_empty == 1
    for split in ("train", "val", "test"):
        assert getattr(streamed, split) == getattr(whole, split)


def test_a_damaged_parquet_row_group_names_its_file(tmp_path):
    """The footer is intact, so the file opens; the damage shows only when the rows are read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = tmp_path / "p.parquet"
    pq.write_table(
        pa.table({"text": [f"document {i} river stone " * 20 for i in range(5000)]}), source, compression="NONE"
    )
    damaged = bytearray(source.read_bytes())
    damaged[200:20_000] = b"\xff" * (20_000 - 200)
    source.write_bytes(bytes(damaged))
    with pytest.raises(ValueError, match=rf"^{source}: cannot read parquet file \("):
        prepare(source, tmp_path / "job")


def test_a_full_disk_while_the_trainer_prepares_exits_4(tmp_path, in_process, capsys):
    """launch.sh, SLURM and k8s start the trainer directly: its rank 0 prepares, and every rank
    stops with disk full (the failure is broadcast), one line, exit 4."""
    from trainer.train import main

    job = data_job(tmp_path, corpus_file(tmp_path / "c.txt"))
    (job / "data").mkdir()
    (job / "data" / ".train.bin.tmp").symlink_to("/dev/full")
    assert main([str(job), "--device", "cpu"]) == ExitCode.DISK_FULL
    captured = capsys.readouterr()
    assert f"error: disk full while preparing the data in {job / 'data'}" in captured.out + captured.err
    assert "Traceback" not in captured.out + captured.err
    assert json.loads((job / "exit_status.json").read_text())["code"] == ExitCode.DISK_FULL


def test_prepare_only_on_synthetic_data_says_there_is_nothing_to_prepare(tmp_path, capsys):
    """Trial s49 L5: ``--prepare-only`` on a synthetic job printed nothing at all."""
    job = write_job(tmp_path / "job", Layout(dp_shard=1), 1, data="synthetic")
    assert launch.main([str(job), "--prepare-only"]) == ExitCode.OK
    assert capsys.readouterr().out == "data: synthetic, generated by each rank as it trains: nothing to prepare\n"
    assert not (job / "data").exists()
