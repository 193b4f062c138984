"""Issue #12, cases 5-10: bad input to every command is one line on stderr and exit 2, never a
traceback, a runaway read, or a silently wrong answer (docs/reliability.md, "Bad input").

In-process (``ui.cli.main``) so the ~40 cases and the generated argv run in seconds; the two
cases about the process's own stdout run ``trainplan`` as a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import REPO
from support.cli import assert_one_line, call
from support.jobs import make_plan, subprocess_env, write_job

import trainer.launch as launch
import ui.cli as cli
from planner.layout import Layout, TrainingConfig

SINGLE = Layout(dp_shard=1)
EST = ["estimate", "--model", "tiny", "--gpu", "h100-sxm", "--num-gpus", "1", "--micro-batch", "2", "--seq-len", "64"]


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bad-input")
    training = TrainingConfig(seq_len=32, micro_batch=2, precision="fp32")
    plan = make_plan(SINGLE, training, 1)
    plan.save(root / "plan.json")
    infeasible = plan.model_copy(
        update={"estimate": plan.estimate.model_copy(update={"feasible": False, "reason": "memory: 7.3 TiB per GPU"})}
    )
    infeasible.save(root / "infeasible.json")
    zero_step = json.loads((root / "plan.json").read_text())
    zero_step["estimate"]["time"]["step_s"] = 0
    (root / "zero-step.json").write_text(json.dumps(zero_step))
    write_job(root / "good", SINGLE, 1, steps=2)
    hot = json.loads((root / "good" / "job.json").read_text())
    (root / "hot").mkdir()
    (root / "hot" / "job.json").write_text(json.dumps(hot).replace('"lr": 0.003', '"lr": 1e400'))
    (root / "future").mkdir()
    (root / "future" / "job.json").write_text(json.dumps({**hot, "schema_version": 99}))
    (root / "lockdir").mkdir()
    (root / "lockdir" / "job.json").write_text((root / "good" / "job.json").read_text())
    (root / "lockdir" / ".lock").mkdir()
    (root / "other").mkdir()
    (root / "other" / "notes.txt").write_text("not a job\n")
    write_job(
        root / "another-job", SINGLE, 1, model=make_plan(SINGLE, training, 1).model.model_copy(update={"num_layers": 2})
    )
    (root / "deep.json").write_text('{"model_type": "llama", "x": ' + _nested(3000) + "}")
    (root / "deep.toml").write_text("x = " + _nested(3000) + "\n")
    llama = json.loads((REPO / "tests" / "data" / "hf_configs" / "llama.json").read_text())
    (root / "odd-head.json").write_text(
        json.dumps({**llama, "hidden_size": 66, "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": None})
    )
    (root / "hostile.json").write_text(json.dumps({**llama, "_name_or_path": "\x1b[2J\x1b]0;pwned\x07evil"}))
    mpt = {
        "model_type": "mpt",
        "d_model": 256,
        "n_layers": 2,
        "n_heads": 4,
        "vocab_size": 512,
        "max_seq_len": 256,
        "attn_config": {"attn_type": ["multihead_attention"]},
    }
    (root / "mpt.json").write_text(json.dumps(mpt))
    (root / "fleet.toml").write_text(
        'horizon_days = 30\n[purchase_usd]\n"h100-sxm" = inf\n[[jobs]]\nname = "a"\nmodel = "tiny"\ntokens = 1e9\n'
    )
    return root


# (argv with {d} for the files dir, what the one error line must name)
CASES = {
    # case 7: numbers past every range, files that are not what they claim
    "global batch 2**63": ([*EST, "--global-batch-tokens", "9223372036854775808"], "--global-batch-tokens"),
    "global batch 2**63-1": ([*EST, "--global-batch-tokens", "9223372036854775807"], "--global-batch-tokens"),
    "config nested 3000 deep": ([*EST[:2], "{d}/deep.json", *EST[3:]], "nested too deeply"),
    "jobs TOML nested 3000 deep": (["portfolio", "{d}/deep.toml"], "nested too deeply"),
    "MPT attn_type a list": ([*EST[:2], "{d}/mpt.json", *EST[3:]], "attn_type must be a string"),
    "fleet purchase_usd inf": (["fleet", "{d}/fleet.toml"], "purchase_usd"),
    "--out is a directory": ([*EST, "--out", "{d}/other"], "other"),
    # "--out /dev/full" is a full disk: exit 4 (test_output_to_dev_full_is_one_line; review s37)
    "--out name of 300 characters": ([*EST, "--out", "{d}/" + "n" * 300], "File name too long"),
    "--out under a missing directory": ([*EST, "--out", "{d}/missing/dir/p.json"], "No such file or directory"),
    "explain a plan with step_s 0": (["explain", "{d}/zero-step.json"], "step_s must be > 0"),
    ".lock is a directory": (["run", "{d}/lockdir", "--device", "cpu"], ".lock: cannot open the job's lock file"),
    # trial s27: both read as "JOB/job.json: cannot read job file (Not a directory)"
    "run a plan file": (["run", "{d}/plan.json", "--device", "cpu"], "is a file, not a job directory: trainplan emit"),
    "run a missing dir": (["run", "{d}/no-such-job", "--device", "cpu"], "no-such-job does not exist: trainplan emit"),
    "--rdzv-endpoint not a host:port": (
        ["run", "{d}/good", "--device", "cpu", "--rdzv-endpoint", "not a host:xx"],
        "--rdzv-endpoint",
    ),
    # case 8: unbounded reads and process counts
    "emit /dev/zero": (["emit", "/dev/zero", "--out", "{d}/z1"], "a character device, not a plan file"),
    "explain /dev/zero": (["explain", "/dev/zero"], "a character device, not a plan file"),
    "portfolio /dev/zero": (["portfolio", "/dev/zero"], "a character device, not a jobs file"),
    "run --nproc 10**20": (["run", "{d}/good", "--device", "cpu", "--nproc", "99999999999999999999"], "--nproc"),
    # case 9: values that were accepted with exit 0
    "--tokens -1": ([*EST, "--tokens", "-1"], "--tokens"),
    "--tokens nan": ([*EST, "--tokens", "nan"], "--tokens"),
    "--tokens inf": ([*EST, "--tokens", "inf"], "--tokens"),
    "--grad-accum 0": ([*EST, "--grad-accum", "0"], "--grad-accum"),
    "--global-batch-tokens 0": ([*EST, "--global-batch-tokens", "0"], "--global-batch-tokens"),
    "--global-batch-tokens -1": ([*EST, "--global-batch-tokens", "-1"], "--global-batch-tokens"),
    "--num-gpus 10**20": ([*EST[:6], "99999999999999999999", *EST[7:]], "--num-gpus must be"),
    "--price 1e308": ([*EST, "--price", "1e308"], "--price"),
    "plan --tokens nan": (["plan", "--model", "tiny", "--tokens", "nan"], "--tokens"),
    # review s49: "--out" alone matched the refusal of the (non-empty) current directory
    "emit --out ''": (["emit", "{d}/plan.json", "--out", ""], "error: --out: give a directory name"),
    "emit --out '  '": (["emit", "{d}/plan.json", "--out", "  "], "error: --out: give a directory name"),
    # review49 L5: "--out .: Is a directory"
    "estimate --out ''": ([*EST, "--out", ""], "error: --out: give a file name"),
    "plan --out ' '": (["plan", "--model", "tiny", "--tokens", "1e9", "--out", " "], "error: --out: give a file name"),
    "emit --seed 10**20": (["emit", "{d}/plan.json", "--out", "{d}/s1", "--seed", "99999999999999999999"], "seed"),
    "lr 1e400 in job.json": (["run", "{d}/hot", "--device", "cpu"], "run.lr"),
    "job.json schema_version 99": (["run", "{d}/future", "--device", "cpu"], "schema_version 99: this trainplan runs"),
    "run --node-rank -1": (["run", "{d}/good", "--device", "cpu", "--node-rank", "-1"], "--node-rank -1"),
    "run --node-rank 5": (["run", "{d}/good", "--device", "cpu", "--node-rank", "5"], "--node-rank 5"),
    # cases 5, 6, 10: emit checks what run would only find later
    "emit an infeasible plan": (["emit", "{d}/infeasible.json", "--out", "{d}/i1"], "the plan is infeasible"),
    "emit into another job's dir": (["emit", "{d}/plan.json", "--out", "{d}/another-job"], "holds another job"),
    "emit into a non-empty dir": (["emit", "{d}/plan.json", "--out", "{d}/other"], "not empty"),
    "odd head_dim for RoPE": ([*EST[:2], "{d}/odd-head.json", *EST[3:]], "RoPE needs an even head dimension"),
    "emit --data missing": (["emit", "{d}/plan.json", "--out", "{d}/m1", "--data", "{d}/no-corpus"], "--data"),
    "emit --tokenizer missing": (
        ["emit", "{d}/plan.json", "--out", "{d}/m2", "--tokenizer", "{d}/no-tok.json"],
        "--tokenizer",
    ),
    "run a dir whose name ends in a newline": (["run", "{d}/good\n", "--device", "cpu"], "control characters"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_one_line_and_exit_2(case, files):
    argv, needle = CASES[case]
    before = sorted(str(p) for p in files.rglob("*"))
    code, _, err = call(*[arg.format(d=files) for arg in argv])
    assert_one_line(code, err.replace(str(files), "D"), needle.replace(str(files), "D"))
    after = sorted(str(p) for p in files.rglob("*"))
    assert after == before  # nothing written: no job dir, no plan, no .lock-node-1 / .lock-node5


def test_emit_into_an_empty_name_writes_nothing_in_an_empty_current_directory(files, tmp_path, monkeypatch):
    """Review s49: ``--out ""`` (``--out "$JOB"``, JOB unset) was Path(""), the current directory, and
    emit wrote the job there wherever that directory was empty; emit's own check never saw the name."""
    monkeypatch.chdir(tmp_path)
    code, _, err = call("emit", str(files / "plan.json"), "--out", "")
    assert_one_line(code, err, "error: --out: give a directory name")
    assert list(tmp_path.iterdir()) == []


def test_portfolio_emit_into_an_empty_name_writes_nothing(tmp_path, monkeypatch):
    """Review s49: ``portfolio --emit ""`` wrote every job's directory into an empty current
    directory, as emit's ``--out ""`` did."""
    monkeypatch.chdir(tmp_path)
    code, _, err = call("portfolio", str(Path(__file__).parents[2] / "examples" / "portfolio.toml"), "--emit", "")
    assert_one_line(code, err, "error: --emit: give a directory name")
    assert list(tmp_path.iterdir()) == []


def test_force_writes_what_emit_refuses(files, tmp_path):
    assert call("emit", str(files / "infeasible.json"), "--out", str(tmp_path / "i"), "--force")[0] == 0
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    assert call("emit", str(files / "plan.json"), "--out", str(other), "--force")[0] == 0
    # Emitting the same plan again (e.g. other --steps) into its own job dir needs no --force.
    assert call("emit", str(files / "plan.json"), "--out", str(other), "--steps", "9")[0] == 0


def test_hostile_model_names_are_printed_without_control_characters(files):
    code, out, err = call(*EST[:2], str(files / "hostile.json"), *EST[3:])
    assert code == 0, err
    assert "evil" in out and "\x1b" not in out + err and "\x07" not in out + err


@pytest.mark.parametrize("target", ["stdout", "--out"])
def test_output_to_dev_full_is_one_line(target, tmp_path):
    argv = [str(Path(sys.executable).with_name("trainplan")), *EST]
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            argv + (["--out", "/dev/full"] if target == "--out" else []),
            stdout=full if target == "stdout" else subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env(),
            cwd=tmp_path,
            timeout=60,
        )
    if target == "--out":  # a file it writes: ENOSPC is exit 4, naming it (review s37)
        assert proc.returncode == 4 and proc.stderr.strip() == (
            "trainplan: error: /dev/full: disk full (No space left on device); free space there and run the command again"
        )
        return
    assert_one_line(proc.returncode, proc.stderr, "No space left on device")


def test_app_forwards_sigterm_to_streamlit(monkeypatch):
    """``trainplan app`` waits on streamlit and passes SIGTERM on (subprocess.call left it running)."""
    import signal
    import time

    started = []

    class Recorder(subprocess.Popen):
        def __init__(self, argv, **kwargs):
            started.append(argv)
            # A stand-in for streamlit that exits with 128+N on signal N, as a server does.
            super().__init__([sys.executable, "-c", "import time; time.sleep(60)"], **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Recorder)
    import threading

    original = signal.getsignal(signal.SIGTERM)

    def send_sigterm():
        # Once the CLI forwards SIGTERM (a loaded machine may take longer than any fixed sleep to
        # import it, and the signal would then end the test process itself).
        deadline = time.monotonic() + 30
        while signal.getsignal(signal.SIGTERM) is original and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=send_sigterm, daemon=True).start()
    began = time.monotonic()
    code = cli.main(["app"])
    assert code == -signal.SIGTERM and time.monotonic() - began < 30  # the child died of the forwarded signal
    assert "--server.address" in started[0] and started[0][started[0].index("--server.address") + 1] == "localhost"


# --------------------------------------------------------------------------- generated argv

HOSTILE = st.sampled_from(
    ["0", "-1", "nan", "inf", "-inf", "1e400", "1e308", "99999999999999999999", "9223372036854775808", "",
     " ", "x", "\x1b[2J", "a\nb", "/dev/zero", "/dev/full", "n" * 300, "h100-sxm", "tiny", "2", "64", "1e9"]
)  # fmt: skip
FLAGS = {
    "estimate": ["--model", "--gpu", "--num-gpus", "--nodes", "--tp", "--pp", "--cp", "--vpp", "--dp-shard",
                 "--micro-batch", "--seq-len", "--global-batch-tokens", "--grad-accum", "--tokens", "--price",
                 "--precision", "--ac", "--sharding", "--failure-rate-x", "--checkpoint-write-gb-per-s",
                 "--restart-minutes", "--data-stall-pct", "--eval-pct", "--startup-minutes"],
    "emit": ["--out", "--steps", "--checkpoint-every", "--seed", "--data", "--tokenizer", "--name",
             "--loss-chunk-tokens"],
    "run": ["--nproc", "--steps", "--max-restarts", "--nnodes", "--node-rank", "--rdzv-endpoint", "--rdzv-id",
            "--device"],
    "explain": ["--failure-rate-x", "--checkpoint-write-gb-per-s", "--data-stall-pct", "--startup-minutes"],
    "portfolio": [],
    "fleet": [],
}  # fmt: skip


@st.composite
def argv_for(draw, files: Path, out: Path) -> list[str]:
    command = draw(st.sampled_from(sorted(FLAGS)))
    base = {
        "estimate": EST[1:],
        "emit": [str(files / "plan.json"), "--out", str(out / "job")],
        "run": [str(files / "good"), "--device", "cpu"],
        "explain": [draw(st.sampled_from([str(files / "plan.json"), str(files / "zero-step.json"), "/dev/zero"]))],
        "portfolio": [draw(st.sampled_from([str(files / "deep.toml"), str(files / "fleet.toml"), "/dev/zero"]))],
        "fleet": [draw(st.sampled_from([str(files / "fleet.toml"), str(files / "deep.toml"), "/dev/null"]))],
    }[command]
    changes = draw(st.lists(st.tuples(st.sampled_from(FLAGS[command] or ["--json"]), HOSTILE), max_size=3))
    extra = [item for flag, value in changes for item in ((flag,) if flag == "--json" else (flag, value))]
    return [command, *base, *extra]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_generated_argv_is_an_answer_or_one_line(data, files, tmp_path, monkeypatch):
    """Any mix of hostile values for every command's flags: exit 0 with an answer, or exit 2 with one
    line; never a traceback. ``run`` stops short of torchrun (its start is tested elsewhere)."""
    started = []
    monkeypatch.setattr(launch, "run_child", lambda command, **kw: started.append(command) or 0)
    monkeypatch.chdir(tmp_path)  # a relative --out (e.g. "x") lands here, not in the repository
    out = Path(os.path.realpath(tmp_path)) / f"o{len(list(tmp_path.iterdir()))}"
    out.mkdir()
    argv = data.draw(argv_for(files, out))
    code, _, err = call(*argv)
    if code != 0:
        assert_one_line(code, err, "")
    assert not list(files.glob("good/.lock-node*"))
