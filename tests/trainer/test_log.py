"""trainer/log.py: the trainer's lines as print wrote them, rank 0 only unless marked for all ranks."""

from __future__ import annotations

import logging

from trainer.log import ALL_RANKS, ON_STDOUT, ConsoleHandler, setup_logging

log = logging.getLogger("trainer.test_log")


def test_rank_zero_prints_the_bare_message_info_to_stdout_warnings_to_stderr(capsys, monkeypatch):
    monkeypatch.setenv("RANK", "0")
    log.info("\nsaved checkpoint /x (100%)")
    log.warning("data: batch shape changed")
    log.error("\nerror: 5 non-finite steps", extra=ON_STDOUT)
    out, err = capsys.readouterr()
    assert out == "\nsaved checkpoint /x (100%)\n\nerror: 5 non-finite steps\n"
    assert err == "data: batch shape changed\n"


def test_other_ranks_show_only_records_marked_for_all_ranks(capsys, monkeypatch):
    monkeypatch.setenv("RANK", "3")
    log.info("layout: fsdp on 4 cpu processes")
    log.error("error: the plan does not fit")
    log.warning("data: restarting epoch 2 from its beginning", extra=ALL_RANKS)
    out, err = capsys.readouterr()
    assert (out, err) == ("", "data: restarting epoch 2 from its beginning\n")


def test_setup_is_idempotent_and_does_not_propagate():
    logger = setup_logging()
    assert setup_logging() is logger and logger.name == "trainer"
    assert sum(isinstance(handler, ConsoleHandler) for handler in logger.handlers) == 1
    assert not logger.propagate and logger.level == logging.INFO
    log.debug("not shown")  # below INFO


def test_the_run_line_counts_one_process_in_the_singular() -> None:
    """Trainer trial s45 L6: 'layout: fsdp (1 GPU) on 1 cpu processes'."""
    import torch

    from planner.layout import Layout, Precision
    from trainer.pipeline import describe_run

    one = describe_run(Layout(), Precision.BF16, 1, torch.device("cpu"), None, 1)
    two = describe_run(Layout(), Precision.BF16, 2, torch.device("cpu"), None, 1)
    assert " on 1 cpu process, bf16" in one and " on 2 cpu processes, bf16" in two


def test_a_clipped_message_says_it_was_cut() -> None:
    """Trial s47: a peer's gloo error was cut at 160 characters mid-word, "... caused by a rem)"."""
    from trainer.log import clipped

    text = "Connection reset by peer. This is typically caused by a remote worker crashing"
    assert clipped(text, 60) == "Connection reset by peer. This is typically caused by a rem…"
    assert len(clipped(text, 60)) == 60 and clipped(text) == text
