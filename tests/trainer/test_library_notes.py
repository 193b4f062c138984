"""torch's (and torchao's) notes to their own developers do not reach a job's user (trial s45 L4).

Each test makes the library say its note through its own code, as a run does, and checks what the
logger lets through; a record that is not such a note still passes.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import types

import pytest

from trainer.log import DropRecords, drop_records


class _Seen(logging.Handler):
    """Records that passed the logger's filters (a handler on the logger itself runs after them)."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def seen():
    """A handler on each logger a test names, removed afterwards."""
    handlers: list[tuple[logging.Logger, _Seen]] = []

    def on(name: str) -> _Seen:
        handler = _Seen()
        logging.getLogger(name).addHandler(handler)
        handlers.append((logging.getLogger(name), handler))
        return handler

    yield on
    for logger, handler in handlers:
        logger.removeHandler(handler)


def test_importing_torchao_prints_nothing_in_a_trainer_process() -> None:
    """transformers imports torchao (--impl hf), and so does fp8: torchao 0.18 on torch 2.13 said
    "... is an Enum subclass ... register_constant() is deprecated" twice per rank, and "Failed to
    load ..._C_mxfp8...so" for kernels the trainer does not use."""
    pytest.importorskip("torchao")
    script = "from trainer.log import setup_logging; setup_logging(); import torchao.float8; print('imported')"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    assert done.stdout == "imported\n"
    assert "register_constant" not in done.stderr and "Failed to load" not in done.stderr, done.stderr


def test_the_library_notes_are_dropped_and_other_records_pass(seen) -> None:
    from trainer.log import setup_logging

    setup_logging()
    pytree = seen("torch.utils._pytree")
    note = "%s is an Enum subclass and is now natively supported by torch.compile as an opaque value type."
    logging.getLogger("torch.utils._pytree").warning(note, "<enum 'KernelPreference'>")
    logging.getLogger("torch.utils._pytree").warning("something else about pytrees")
    assert pytree.messages == ["something else about pytrees"]


def test_the_filter_drops_once_when_asked_and_counts() -> None:
    record = logging.LogRecord(
        "x", logging.WARNING, __file__, 1, "Unable to %s, forcefully exiting via %s", ("a", 9), None
    )
    other = logging.LogRecord("x", logging.WARNING, __file__, 1, "something else", None, None)
    every = DropRecords("forcefully exiting via")
    assert every.filter(other) and not every.filter(record) and not every.filter(record) and every.dropped == 2
    once = DropRecords("forcefully exiting via", once=True)
    assert not once.filter(record) and once.filter(record)


def test_a_second_setup_replaces_the_filter_rather_than_adding_one() -> None:
    name = "trainer.test_library_notes.replaced"
    first = drop_records(name, "note")
    second = drop_records(name, "note")
    filters = logging.getLogger(name).filters
    assert second in filters and first not in filters and len(filters) == 1


def test_a_node_after_node_0_says_nothing_at_the_normal_end_of_a_multi_node_run(monkeypatch, capsys, seen) -> None:
    """Trial s45 L4: node 1's agent closes the rendezvous in the store node 0's agent hosted, after
    node 0 exited: torch said "has failed to shutdown the rendezvous ... RendezvousConnectionError".
    Trial s47: and "node_rank is only used for static rdzv_backend" at every start of node 1."""
    import torch.distributed.run as torch_run
    from torch.distributed.elastic.rendezvous.api import RendezvousConnectionError
    from torch.distributed.elastic.rendezvous.dynamic_rendezvous import DynamicRendezvousHandler

    from trainer.torchrun import main

    rendezvous = seen("torch.distributed.elastic.rendezvous.dynamic_rendezvous")
    launcher = seen("torch.distributed.run")

    def store_gone() -> None:
        raise RendezvousConnectionError("The connection to the C10d store has failed.")

    node = types.SimpleNamespace(
        _this_node="host_1_0",
        _settings=types.SimpleNamespace(run_id="jn"),
        _stop_heartbeats=lambda: None,
        _close=store_gone,
        _record=lambda **_: None,
    )

    def run(args):
        torch_run.config_from_args(args)  # where torch warns about --node-rank
        assert DynamicRendezvousHandler.shutdown(node) is False  # torch's own shutdown, its own note

    monkeypatch.setattr(torch_run, "run", run)
    argv = ["--nnodes", "2", "--node-rank", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", "localhost:29511"]
    assert main([*argv, "--rdzv-id", "jn", "--nproc-per-node", "1", "train.py"]) == 0
    assert rendezvous.messages == [] and launcher.messages == [], (rendezvous.messages, launcher.messages)
    assert capsys.readouterr().err == ""
    logging.getLogger("torch.distributed.elastic.rendezvous.dynamic_rendezvous").warning("another note")
    assert rendezvous.messages == ["another note"]
