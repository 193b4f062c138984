"""The reader of user files (planner/limits.py) refuses with a rule code and figures, and its
English sentences are byte for byte the ones it printed before the codes (the CLI's words;
docs/reliability.md quotes them)."""

from __future__ import annotations

import os
import socket
import stat

import pytest

from planner.catalog.calibration import read_calibration_bytes
from planner.errors import CatalogViolation, RuleCode, RuleViolation
from planner.limits import check_input, read_input, read_input_text
from planner.rule_codes import TEMPLATES, render


def refused(call, *args, **kwargs) -> RuleViolation:
    with pytest.raises(RuleViolation) as caught:
        call(*args, **kwargs)
    assert isinstance(caught.value, ValueError)  # every caller's ``except ValueError`` still holds
    return caught.value


def test_a_missing_file_is_unreadable_with_the_oss_words(tmp_path):
    error = refused(read_input, tmp_path / "nope.json", "plan file")
    assert error.code is RuleCode.INPUT_UNREADABLE
    assert error.figures == {"where": f"{tmp_path}/nope.json", "what": "plan file", "error": os.strerror(2)}
    assert str(error) == f"{tmp_path}/nope.json: cannot read the plan file (No such file or directory)"


def test_each_kind_of_file_that_is_not_regular_has_its_code(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        cases = [
            (tmp_path, RuleCode.INPUT_DIRECTORY, f"{tmp_path}: a directory, not a plan file (give a regular file)"),
            (fifo, RuleCode.INPUT_FIFO, f"{fifo}: a FIFO, not a plan file (give a regular file)"),
            ("/dev/null", RuleCode.INPUT_CHAR_DEVICE, "/dev/null: a character device, not a plan file (give a regular file)"),
            (tmp_path / "sock", RuleCode.INPUT_UNREADABLE, f"{tmp_path}/sock: cannot read the plan file (No such device or address)"),
        ]  # fmt: skip
        for path, code, sentence in cases:
            error = refused(read_input, path, "plan file")
            assert (error.code, str(error)) == (code, sentence)
            assert error.figures["where"] == str(path) and error.figures["what"] == "plan file"
        assert refused(check_input, fifo, "tokenizer").code is RuleCode.INPUT_FIFO  # the same rule


def test_the_templates_of_kinds_no_test_can_make_read_as_before():
    """A block device needs a disk, a socket that ``open`` accepts another OS, an unknown kind none:
    the templates, pinned as the old f-strings wrote them."""
    old = {
        RuleCode.INPUT_BLOCK_DEVICE: "/dev/sda: a block device, not a tokenizer (give a regular file)",
        RuleCode.INPUT_SOCKET: "/dev/sda: a socket, not a tokenizer (give a regular file)",
        RuleCode.INPUT_NOT_REGULAR: "/dev/sda: not a regular file, not a tokenizer (give a regular file)",
    }
    for code, sentence in old.items():
        assert render(code, {"where": "/dev/sda", "what": "tokenizer"}) == sentence


def test_a_file_over_the_limit_cites_its_size_and_the_limit(tmp_path):
    path = tmp_path / "big.toml"
    path.write_bytes(b"x" * 11)
    error = refused(read_input, path, "calibration file", 10)
    assert error.code is RuleCode.INPUT_TOO_LARGE
    assert error.figures == {"where": str(path), "what": "calibration file", "size_bytes": 11, "limit_bytes": 10}
    assert str(error) == f"{path}: 11 bytes, over 10 bytes: not a calibration file"


def test_a_file_that_grows_while_read_is_refused_at_the_limit(tmp_path, monkeypatch):
    path = tmp_path / "growing.json"
    path.write_bytes(b"x" * 11)
    real = os.fstat
    small = lambda fd: os.stat_result((stat.S_IFREG | 0o644, *real(fd)[1:6], 5, *real(fd)[7:]))  # noqa: E731
    monkeypatch.setattr("planner.limits.os.fstat", small)  # 5 bytes when opened, 11 when read
    error = refused(read_input, path, "plan file", 10)
    assert (error.code, error.figures["limit_bytes"]) == (RuleCode.INPUT_GREW, 10)
    assert str(error) == f"{path}: over 10 bytes: not a plan file"


def test_text_that_is_not_utf8_cites_the_first_bad_byte(tmp_path):
    path = tmp_path / "u16.json"
    path.write_bytes("{}".encode("utf-16"))
    error = refused(read_input_text, path, "plan file")
    assert (error.code, error.figures["byte"]) == (RuleCode.INPUT_NOT_UTF8, 0)
    assert str(error) == f"{path}: not UTF-8 text (byte 0): not a plan file"


def test_the_calibration_reader_keeps_the_code(tmp_path):
    """The catalog's reader raises its own type (a CatalogError) and keeps the code and figures."""
    error = refused(read_calibration_bytes, tmp_path)
    assert isinstance(error, CatalogViolation) and error.code is RuleCode.INPUT_DIRECTORY
    assert str(error) == f"{tmp_path}: a directory, not a calibration file (give a regular file)"


def test_every_input_code_has_a_template():
    codes = [code for code in RuleCode if code.value.startswith("input_")]
    assert len(codes) == 10 and all(code in TEMPLATES for code in codes)
