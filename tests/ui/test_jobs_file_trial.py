"""Jobs files as a user writes them (trial s23): plan's keys, plan's warnings, fleet's answer job by job."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ui.cli import main


def _file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "jobs.toml"
    path.write_text(text)
    return str(path)


def test_a_jobs_file_takes_the_batch_keys_plan_takes(tmp_path, capsys):
    """global_batch_tokens = 4e6 (a TOML float) and batch_tolerance / vary_batch, which the batch
    answer's fix names, were refused as not integers / unknown keys."""
    jobs = '[inventory]\nh100-sxm = 64\n[[jobs]]\nname = "a"\nmodel = "llama3-8b"\ntokens = 1e11\n'
    jobs += "global_batch_tokens = 4e6\nbatch_tolerance = 0.2\nvary_batch = true\n"
    assert main(["portfolio", _file(tmp_path, jobs), "--json"]) == 0
    job = json.loads(capsys.readouterr().out)["assignments"][0]
    # any batch within 20 %: data parallel, not 977 sequences at dp 1
    assert int(re.search(r"dp_shard=(\d+)", job["layout"]).group(1)) >= 32, job["layout"]
    bad = jobs.replace("4e6", "4.5")
    assert main(["portfolio", _file(tmp_path, bad)]) == 2
    assert "global_batch_tokens must be a whole number of tokens" in capsys.readouterr().err


def test_portfolio_says_what_plan_would_warn_of_each_job(tmp_path, capsys):
    jobs = '[inventory]\nh100-sxm = 64\n[[jobs]]\nname = "short"\nmodel = "tiny"\ntokens = 1e9\nseq_len = 8192\n'
    assert main(["portfolio", _file(tmp_path, jobs), "--json"]) == 0
    captured = capsys.readouterr()
    warnings = json.loads(captured.out)["warnings"]
    assert any(w.startswith("short: seq_len 8192 exceeds tiny's") for w in warnings)
    assert any(w.startswith("short: the job trains for") for w in warnings)
    assert all(f"trainplan: warning: {w}" in captured.err for w in warnings)


def test_fleet_names_where_each_job_runs_and_what_it_ignores(tmp_path, capsys):
    jobs = 'horizon_days = 365\nbuy = ["h100-sxm"]\n[inventory]\nh100-sxm = 8\n[[jobs]]\nname = "a"\n'
    jobs += 'model = "llama3-8b"\ntokens = 1e11\nbudget_usd = 1000.0\n'
    assert main(["fleet", _file(tmp_path, jobs)]) == 0
    captured = capsys.readouterr()
    assert "ignores budget_usd (a)" in captured.err and "[inventory]" not in captured.err
    assert "mixed, job by job:" in captured.out and "  a: " in captured.out
    assert main(["fleet", _file(tmp_path, jobs), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    (job,) = answer["mixed"]["assignments"]
    assert job["job"] == "a" and job["num_gpus"] > 0 and job["end_days"] > job["start_days"] >= 0
    assert answer["owned"] == {"h100-sxm": 8} and answer["mixed"]["owned"] == {"h100-sxm": 8}


def test_fleet_sizes_what_to_buy_beside_the_gpus_owned(tmp_path, capsys):
    """Trial s51 H1: fleet ignored [inventory] and bought for jobs the owned GPUs ran. Now the owned
    GPUs run them, nothing is bought, and the text and JSON say the owned pool, its running cost and
    what each option adds; "rent only" is "owned + rent"."""
    head = 'horizon_days = 60\nbuy = ["h100-sxm"]\n[[jobs]]\nname = "a"\nmodel = "llama3-8b"\ntokens = 2e11\n'
    assert main(["fleet", _file(tmp_path, head), "--json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert alone["owned"] == {} and alone["mixed"]["owned_cost_usd"] == 0
    owned = head + "[inventory]\nh100-sxm = 512\n"
    assert main(["fleet", _file(tmp_path, owned), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    for key in ("mixed", "rent_only", "buy_only"):
        option = answer[key]
        assert option["purchased"] == {} and option["purchase_usd"] == 0, key
        assert option["owned"] == {"h100-sxm": 512} and option["owned_cost_usd"] > 0
        assert option["total_cost_usd"] >= option["owned_cost_usd"]
    assert all(a["held"] == "owned" for a in answer["mixed"]["assignments"])
    assert answer["purchase"] is None
    assert main(["fleet", _file(tmp_path, owned)]) == 0
    out = capsys.readouterr().out
    assert "owned + rent" in out and "owned + buy" in out
    assert "already owned, in every option: h100-sxm=512; their price is sunk" in out


def test_a_fleet_deadline_past_the_horizon_names_the_horizon(tmp_path, capsys):
    jobs = 'horizon_days = 100\nbuy = ["l4"]\n[[jobs]]\nname = "a"\nmodel = "llama3-70b"\ntokens = 1e12\n'
    assert main(["fleet", _file(tmp_path, jobs + "deadline_days = 30\n")]) == 0
    out = capsys.readouterr().out
    assert "deadline" in out and "and a horizon_days of at least" in out
    # one figure for both fields, as every duration prints (review s46 L9: the horizon was whole days)
    needs = re.search(r"needs ([0-9.]+) days", out)
    assert needs and f"set deadline_days to {needs[1]} or more and a horizon_days of at least {needs[1]}," in out


def test_a_jobs_file_rents_the_types_it_lists_as_rented(tmp_path, capsys):
    """Trial s27: every inventory type was costed as owned (each catalog GPU has a purchase price),
    a rent quote feeding the budgets only; `rented = [...]` bills a type at its rent while busy."""
    base = '[inventory]\nb200 = 16\n[rent_usd_per_gpu_hour]\nb200 = 6.0\n[[jobs]]\nname = "a"\nmodel = "llama3.2-1b"\n'
    base += "tokens = 1e10\n"
    costs = {}
    for name, extra in (("owned", ""), ("rented", 'rented = ["b200"]\n')):
        assert main(["portfolio", _file(tmp_path, extra + base), "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        (job,) = data["assignments"]
        costs[name] = (job["cost_basis"], job["cost_usd"] / (job["num_gpus"] * job["days"] * 24), data["idle_cost_usd"])
    assert costs["owned"][0] == "owned-GPU rate" and costs["owned"][1] < 3.0  # B200 owned, ~$1.64/GPU-h
    assert (
        costs["rented"][0] == "rent (your price)" and abs(costs["rented"][1] - 6.0) < 0.01 and costs["rented"][2] == 0
    )
    assert main(["portfolio", _file(tmp_path, 'rented = ["h100-sxm"]\n' + base)]) == 2
    assert "rented: h100-sxm is not in [inventory]" in capsys.readouterr().err
    # trial s30: a spot portfolio said "rent", never spot
    assert main(["portfolio", _file(tmp_path, 'price_kind = "spot"\nrented = ["b200"]\n' + base), "--json"]) == 0
    (job,) = json.loads(capsys.readouterr().out)["assignments"]
    assert (job["cost_basis"], job["price_kind"]) == ("rent (your spot price)", "spot")  # the file's own quote


def test_a_portfolio_reads_the_files_wall_power_and_says_it_ignores_utilisation(tmp_path, capsys):
    """Trial s27: 5 kW per H100 at $0.30/kWh cost what the catalog's 1.02 kW did, and utilisation
    was dropped without a word."""
    head = "[inventory]\nh100-sxm = 64\n[ownership]\nelectricity_usd_per_kwh = 0.30\n"
    job = '[[jobs]]\nname = "a"\nmodel = "llama3.2-1b"\ntokens = 1e10\n'
    costs = []
    for power in ("", "wall_power_w = { h100-sxm = 5000.0 }\n"):
        assert main(["portfolio", _file(tmp_path, head + power + job), "--json"]) == 0
        costs.append(json.loads(capsys.readouterr().out)["total_cost_usd"])
    assert costs[1] > 1.5 * costs[0]
    assert main(["portfolio", _file(tmp_path, head + "utilisation = 0.5\n" + job)]) == 0
    assert "ignores [ownership].utilisation" in capsys.readouterr().err


def test_fleet_without_num_slots_uses_its_own_fine_grid(tmp_path, capsys):
    """Trial s27: the file's default of one slot became two, whose coarse grid bought 4 H100 and
    rented $83k where 12 slots run three 8B jobs back to back on 8 bought GPUs for 26 % less."""
    jobs = 'horizon_days = 365\nbuy = ["h100-sxm"]\n' + "".join(
        f'[[jobs]]\nname = "j{i}"\nmodel = "llama3-8b"\ntokens = 5e11\ndeadline_days = {d}\n'
        for i, d in ((1, 120), (2, 240), (3, 365))
    )
    totals = []
    for slots in ("", "num_slots = 12\n"):
        assert main(["fleet", _file(tmp_path, slots + jobs), "--json"]) == 0
        totals.append(json.loads(capsys.readouterr().out)["mixed"]["total_cost_usd"])
    assert totals[0] == totals[1]


def test_a_portfolio_budget_bounds_the_cost_it_reports(tmp_path, capsys):
    """Trial s27: a job the table showed at $25k owned cost was refused a $30k budget as costing
    $89.6k, its rent; trial s51 H2: the budget still bounded that rent. It bounds the cost the
    portfolio reports now (the owned rate on owned GPUs), and a refusal says so and names that figure."""
    jobs = '[inventory]\nh100-sxm = 256\n[[jobs]]\nname = "a"\nmodel = "llama3-8b"\ntokens = 5e11\n'
    jobs += "deadline_days = 20\n"
    assert main(["portfolio", _file(tmp_path, jobs), "--json"]) == 0
    (job,) = json.loads(capsys.readouterr().out)["assignments"]
    cost = job["cost_usd"]
    assert main(["portfolio", _file(tmp_path, jobs + f"budget_usd = {cost * 1.05:.1f}\n"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["assignments"][0]["cost_usd"] <= cost * 1.05
    assert main(["portfolio", _file(tmp_path, jobs + f"budget_usd = {cost * 0.5:.1f}\n")]) == 0
    out = capsys.readouterr().out
    assert "the cost the portfolio reports for it at the job's risk quantile, which a budget bounds" in out
    assert "its GPU-hours at the owned rate on an owned one" in out


def test_a_longer_horizon_never_makes_a_many_job_portfolio_dearer(tmp_path, capsys):
    """Trial s27: five jobs (the slotted model) under a 100-year horizon, or none, cut slots of ~570
    days: every job started in the first, all at once on the H100s, and the answer cost 25 % more
    than under 60 days. The slots now span twice the fastest rows run serially, or the horizon."""
    jobs = "[inventory]\nh100-sxm = 16\na100-80gb-sxm = 8\n" + "".join(
        f'[[jobs]]\nname = "{name}"\nmodel = "{model}"\ntokens = {tokens}\n'
        for name, model, tokens in (
            ("a", "llama3-8b", "1e11"), ("b", "llama3.2-1b", "1e10"), ("c", "llama3.2-3b", "5e10"),
            ("d", "llama2-7b", "5e10"), ("e", "llama-350m", "1e10"),
        )
    )  # fmt: skip
    answers = []
    for head in ("horizon_days = 60\n", "horizon_days = 36500\n", ""):
        assert main(["portfolio", _file(tmp_path, head + jobs), "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["exact"] is False  # the slotted model
        answers.append(data["total_cost_usd"] + data["idle_cost_usd"])
    assert answers[1] == answers[2] == answers[0]


def test_a_portfolio_deadline_fix_gives_the_fields_days(tmp_path, capsys):
    """Trial s27: "allow 79 minutes" for a field the jobs file writes in days."""
    jobs = '[inventory]\nh100-sxm = 64\n[[jobs]]\nname = "s"\nmodel = "llama3.2-1b"\ntokens = 1e10\n'
    assert main(["portfolio", _file(tmp_path, jobs + "deadline_days = 0.01\n")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"set deadline_days to 0\.0\d+ or more", out) and "minutes" not in out, out


def test_jobs_file_keys_a_command_does_not_use_are_said_and_bad_gpus_name_their_field(tmp_path, capsys):
    """Review s27: fleet dropped `rented` without a word; an unknown GPU in wall_power_w named
    neither the file nor the field."""
    fleet = 'horizon_days = 30\nbuy = ["h100-sxm"]\nrented = ["h100-sxm"]\n[[jobs]]\nname = "a"\nmodel = "gpt3-125m"\n'
    assert main(["fleet", _file(tmp_path, fleet + "tokens = 1e9\n")]) == 0
    assert "rented lists h100-sxm, a type to buy: fleet weighs buying it against renting" in capsys.readouterr().err
    bad = '[inventory]\nh100-sxm = 8\n[ownership]\nwall_power_w = { h100x = 900.0 }\n[[jobs]]\nname = "a"\n'
    path = _file(tmp_path, bad + 'model = "gpt3-125m"\ntokens = 1e9\n')
    assert main(["portfolio", path]) == 2
    assert f"{path}: [ownership].wall_power_w: unknown GPU 'h100x'" in capsys.readouterr().err


def test_a_jobs_file_reads_gpu_names_as_plan_does(tmp_path, capsys):
    """Review s27b: `H100-SXM = 256` in [inventory] was a type no job could use (every job ran on
    the A100s) and was still charged idle for the whole horizon ($615k). Names are read as plan's
    --gpus reads them; an unknown one, or two names of one type, are refused in one line."""
    jobs = "horizon_days = 90\n[inventory]\n{h100} = 64\na100-80gb-sxm = 16\n[rent_usd_per_gpu_hour]\n{rent} = 2.0\n"
    jobs += '[[jobs]]\nname = "a"\nmodel = "llama3-8b"\ntokens = 2e11\n'
    answers = []
    for h100, rent in (("h100-sxm", "h100-sxm"), ("H100-SXM", "H100-sxm")):
        assert main(["portfolio", _file(tmp_path, jobs.format(h100=h100, rent=rent)), "--json"]) == 0
        answers.append(json.loads(capsys.readouterr().out))
    assert answers[0] == answers[1]
    assert answers[1]["assignments"][0]["gpu"] == "h100-sxm"
    assert main(["portfolio", _file(tmp_path, jobs.format(h100="H100", rent="h100-sxm"))]) == 2
    assert "[inventory]: unknown GPU 'H100'; did you mean" in capsys.readouterr().err
    twice = jobs.format(h100="H100-SXM", rent="h100-sxm").replace("a100-80gb-sxm = 16", "h100-sxm = 8")
    assert main(["portfolio", _file(tmp_path, twice)]) == 2
    assert "'H100-SXM' and 'h100-sxm' are both h100-sxm; list it once" in capsys.readouterr().err


def test_a_job_name_error_says_what_a_name_may_hold(tmp_path, capsys):
    """Trial s27d: pydantic's message quoted the pattern ('String should match pattern ...')."""
    jobs = '[inventory]\nh100-sxm = 8\n[[jobs]]\nname = "my job"\nmodel = "llama3-8b"\ntokens = 1e10\n'
    assert main(["portfolio", _file(tmp_path, jobs)]) == 2
    err = capsys.readouterr().err
    assert "job 'my job' (the 1st [[jobs]]): name: 'my job' is not a job name: 1-64 letters, digits" in err
    assert "pattern" not in err and "Value error" not in err
    assert main(["portfolio", _file(tmp_path, jobs.replace("my job", "chat\\n"))]) == 2  # review s28b: re.match let it
    assert "is not a job name" in capsys.readouterr().err


def test_a_deadline_past_the_horizon_is_said(tmp_path, capsys):
    """Trial s27d: a deadline of 60 days under a 30-day horizon was capped without a word."""
    jobs = 'horizon_days = 30\n[inventory]\nh100-sxm = 8\n[[jobs]]\nname = "a"\nmodel = "llama3.2-1b"\n'
    jobs += "tokens = 1e10\ndeadline_days = 60\n"
    assert main(["portfolio", _file(tmp_path, jobs)]) == 0
    assert (
        "job 'a': deadline_days 60 is past horizon_days 30; it must end within the horizon" in capsys.readouterr().err
    )
    assert main(["portfolio", _file(tmp_path, jobs), "--json"]) == 0  # trial s28c: in --json too
    assert any("past horizon_days 30" in w for w in json.loads(capsys.readouterr().out)["warnings"])
    assert main(["portfolio", _file(tmp_path, jobs.replace("= 60", "= 20"))]) == 0
    assert "past horizon_days" not in capsys.readouterr().err
    fleet = jobs.replace("[inventory]\nh100-sxm = 8\n", 'buy = ["h100-sxm"]\n[rent_usd_per_gpu_hour]\nH20 = 1.1\n')
    assert main(["fleet", _file(tmp_path, fleet)]) == 0  # trial s28c: fleet said nothing of either
    err = capsys.readouterr().err
    assert "deadline_days 60 is past horizon_days 30" in err and "ignores [rent_usd_per_gpu_hour] of h20" in err


def test_portfolio_emits_its_jobs_with_the_k8s_image_and_claim(tmp_path, capsys):
    """Review s27: only `trainplan emit` took --k8s-image / --k8s-pvc."""
    from trainer.job_spec import JobSpec

    jobs = _file(tmp_path, '[inventory]\nh100-sxm = 8\n[[jobs]]\nname = "a"\nmodel = "llama3.2-1b"\ntokens = 1e10\n')
    k8s = ["--k8s-image", "reg.example/trainplan:2", "--k8s-pvc", "team-jobs"]
    assert main(["portfolio", jobs, "--emit", str(tmp_path / "out"), *k8s]) == 0
    job = JobSpec.load(tmp_path / "out" / "a")
    assert (job.k8s_image, job.k8s_pvc) == ("reg.example/trainplan:2", "team-jobs")
    manifest = (tmp_path / "out" / "a" / "k8s.yaml").read_text()
    assert '"image": "reg.example/trainplan:2"' in manifest and '"claimName": "team-jobs"' in manifest
    capsys.readouterr()
    assert main(["portfolio", jobs, *k8s]) == 2
    assert "give --emit DIR too" in capsys.readouterr().err
    assert main(["portfolio", jobs, "--emit", str(tmp_path / "bad"), "--k8s-pvc", "Team_Jobs"]) == 2
    assert "--k8s-pvc 'Team_Jobs'" in capsys.readouterr().err and not (tmp_path / "bad").exists()


def test_the_portfolio_table_shows_the_rate_behind_each_cost(tmp_path, capsys):
    """Trial s27d: the table said which basis a cost is on (owned rate or rent), not what rate."""
    base = '[inventory]\nb200 = 16\n[rent_usd_per_gpu_hour]\nb200 = 6.0\n[[jobs]]\nname = "a"\nmodel = "llama3.2-1b"\n'
    jobs = _file(tmp_path, 'rented = ["b200"]\n' + base + "tokens = 1e10\n")
    assert main(["portfolio", jobs, "--json"]) == 0
    (job,) = json.loads(capsys.readouterr().out)["assignments"]
    assert abs(job["cost_per_gpu_hour_usd"] - 6.0) < 0.01  # a rented type: its rent
    assert main(["portfolio", jobs]) == 0
    assert "cost / GPU-h" in capsys.readouterr().out


def test_two_jobs_may_not_share_a_kubernetes_name(tmp_path, capsys):
    """Trial s28c: 'Chat_8B' and 'chat-8b' both became the PyTorchJob chat-8b."""
    jobs = "[inventory]\nh100-sxm = 8\n" + "".join(
        f'[[jobs]]\nname = "{name}"\nmodel = "llama3.2-1b"\ntokens = 1e9\n' for name in ("Chat_8B", "chat-8b")
    )
    assert main(["portfolio", _file(tmp_path, jobs), "--emit", str(tmp_path / "out")]) == 2
    assert "jobs 'Chat_8B' and 'chat-8b' share the Kubernetes name chat-8b; rename one" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert main(["portfolio", _file(tmp_path, jobs)]) == 0  # no manifests without --emit


def test_a_jobs_deadline_fix_puts_the_field_beside_the_days_it_names(tmp_path, capsys):
    """Trial s28c: '(deadline_days = 2.583)' came after the batch clause, read as a second answer
    disagreeing with 'allow 3 days'; it is the least that does, beside it."""
    jobs = '[inventory]\nh100-sxm = 512\n[[jobs]]\nname = "a"\nmodel = "llama3-8b"\ntokens = 5e11\n'
    jobs += "deadline_days = 2.0\nglobal_batch_tokens = 524288\n"
    assert main(["portfolio", _file(tmp_path, jobs)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert re.search(r"set deadline_days to 2\.\d+ or more[;,]", out), out


def test_a_jobs_deadline_answer_writes_one_figure_once(tmp_path, capsys):
    """Trial s33: "needs 5.9 days ... allow 6 days (deadline_days = 5.871)": one figure three ways,
    the least below the "needs". Now the needed days and the fix are the same figure."""
    jobs = '[inventory]\nh100-sxm = 64\n[[jobs]]\nname = "c"\nmodel = "llama3-8b"\ntokens = 1e12\n'
    assert main(["portfolio", _file(tmp_path, jobs + "deadline_days = 5\n")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    needs = re.search(r"needs (\d+\.\d+) days", out)
    assert needs and f"set deadline_days to {needs[1]} or more" in out, out
    assert not re.search(r"allow \d", out) and "(deadline_days =" not in out, out


def test_a_jobs_error_names_the_job_and_an_empty_inventory_is_called_empty(tmp_path, capsys):
    """Trial s33: 'jobs.2.tokens' (0-based) where the third job has a name; 'needs an [inventory]
    table' for a file whose [inventory] is there, empty."""
    job = '[[jobs]]\nname = "{name}"\nmodel = "llama3-8b"\ntokens = {tokens}\n'
    jobs = "[inventory]\nh100-sxm = 8\n" + "".join(
        job.format(name=n, tokens=t) for n, t in (("a", "1e9"), ("b", "1e9"), ("code-7b", "-1.0"))
    )
    assert main(["portfolio", _file(tmp_path, jobs)]) == 2
    err = capsys.readouterr().err
    assert "job 'code-7b' (the 3rd [[jobs]]): tokens:" in err and "jobs.2" not in err
    assert main(["portfolio", _file(tmp_path, "jobs = [1]\n[inventory]\nh100-sxm = 8\n")]) == 2
    whole = capsys.readouterr().err  # review s33: an error of the job itself read "[[jobs]]: : Input ..."
    assert "the 1st [[jobs]]: Input should be" in whole and ": :" not in whole
    fixed = jobs.replace("-1.0", "1e9").replace("h100-sxm = 8\n", "")
    assert main(["portfolio", _file(tmp_path, fixed)]) == 2
    assert "needs GPUs in an [inventory] table" in capsys.readouterr().err


def test_a_fleet_money_column_keeps_one_unit(capsys):
    """Trial s33: fleet's "total" column read "$783,875" over "$2.01M"; each money column now takes
    the unit of its largest sum."""
    assert main(["fleet", str(Path(__file__).parents[2] / "examples" / "fleet.toml")]) == 0
    rows = [line.split("│") for line in capsys.readouterr().out.splitlines() if line.startswith("│")]
    totals = [cells[2].strip() for cells in rows if cells[1].strip()]
    assert len(totals) == 3 and any(t.startswith("$2.") for t in totals), totals
    assert all(re.fullmatch(r"\$\d\.\d\dM \(\$\d\.\d\dM-\$\d\.\d\dM\)", t) for t in totals), totals


def test_a_duplicate_job_name_names_the_file(tmp_path, capsys):
    """Trial s34: "jobs: duplicate job name 'a'" was the one jobs-file error without the file."""
    job = '[[jobs]]\nname = "a"\nmodel = "llama3-8b"\ntokens = 1e9\n'
    path = _file(tmp_path, "[inventory]\nh100-sxm = 8\n" + job + job)
    assert main(["portfolio", path]) == 2
    assert f"{path}: jobs: duplicate job name 'a'" in capsys.readouterr().err


def test_portfolio_emit_checks_every_job_before_writing_one(tmp_path, capsys):
    """Review s50: portfolio --emit wrote its jobs one by one, so a refusal of the second (here its
    directory holds files that are not a job) left the first on disk, half a portfolio."""
    jobs = _file(
        tmp_path,
        '[inventory]\nh100-sxm = 16\n[[jobs]]\nname = "a"\nmodel = "llama3.2-1b"\ntokens = 1e10\n'
        '[[jobs]]\nname = "b"\nmodel = "llama3.2-1b"\ntokens = 1e10\n',
    )
    out = tmp_path / "out"
    (out / "b").mkdir(parents=True)
    (out / "b" / "README.md").write_text("my own notes\n")
    assert main(["portfolio", jobs, "--emit", str(out)]) == 2
    assert "b" in capsys.readouterr().err
    assert not (out / "a").exists()
    assert (out / "b" / "README.md").read_text() == "my own notes\n"


def test_a_misspelt_job_key_is_named_beside_the_missing_one(tmp_path, capsys):
    """Buyer trial s50 L3: ``token = 2e12`` got only "tokens: Field required" (pydantic lists the
    missing key before the unknown one); ``deadline = 3`` alone already named the allowed keys."""
    jobs = '[inventory]\nh100-sxm = 8\n[[jobs]]\nname = "a"\nmodel = "llama3.2-1b"\ntoken = 1e10\n'
    assert main(["portfolio", _file(tmp_path, jobs)]) == 2
    err = capsys.readouterr().err
    assert "tokens: Field required; it has 'token', a key it does not take: 'token' misspelt?" in err
    assert main(["portfolio", _file(tmp_path, jobs.replace("token = 1e10", "tokens = 1e10\nfoo = 1"))]) == 2
    err = capsys.readouterr().err
    assert "foo: Extra inputs are not permitted; allowed: name, model, tokens" in err and "misspelt?" not in err


def _late_lines(answer: dict, deadline: float) -> list[str]:
    """The jobs whose start plus the slow end of their band passes ``deadline``, by the JSON's figures."""
    jobs = answer["assignments"] if "assignments" in answer else answer["mixed"]["assignments"]
    return [j["job"] for j in jobs if j["days_band"] and j["start_days"] + j["days_band"][1] > deadline]


@pytest.mark.parametrize("command", ["portfolio", "fleet"])
def test_a_job_past_its_deadline_at_its_bands_slow_end_is_warned_of(tmp_path, capsys, command):
    """Trial s51 M5: pretrain-70b ended by its deadline at p80 and on day 332.3 of 330 at its band's
    slow end, without a word. A deadline between the job's end at p80 and at its band's slow end now
    gets a line, in the text and in --json's warnings; a deadline past both gets none."""
    head = '[inventory]\nh100-sxm = 8\n[[jobs]]\nname = "a"\nmodel = "llama3-8b"\ntokens = 2e11\n'
    if command == "fleet":
        head = 'horizon_days = 365\nbuy = ["h100-sxm"]\n' + head
    assert main([command, _file(tmp_path, head), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    (job,) = answer["assignments"] if command == "portfolio" else answer["mixed"]["assignments"]
    end, slow_end = job["end_days"], job["start_days"] + job["days_band"][1]
    assert slow_end > end
    for deadline, late in (((end + slow_end) / 2, True), (slow_end + 1, False)):
        assert main([command, _file(tmp_path, head + f"deadline_days = {deadline:.3f}\n"), "--json"]) == 0
        answer = json.loads(capsys.readouterr().out)
        lines = [w for w in answer["warnings"] if "at the slow end of its 80 % band" in w]
        assert bool(lines) is late and bool(_late_lines(answer, deadline)) is late, (deadline, answer["warnings"])
        if late:
            assert lines[0].startswith("a: at the slow end of its 80 % band it ends on day ")
            assert lines[0].endswith(f"past its deadline day {float(f'{deadline:.3f}'):,g}")
    assert main([command, _file(tmp_path, head + f"deadline_days = {(end + slow_end) / 2:.3f}\n")]) == 0
    assert "past its deadline day" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("start_after_days = -1.0", "start_after_days: Input should be greater than or equal to 0"),
        ('start_after_days = "ten"', "start_after_days: Input should be a valid number"),
        (
            "start_after_days = 40.0\ndeadline_days = 30",
            "start_after_days 40 is not before deadline_days 30: both count from day 0",
        ),
        (
            "start_after_days = 100",
            "job 'a': start_after_days 100 is not before horizon_days 90: both count from day 0",
        ),
    ],
)
def test_a_bad_release_is_one_line(tmp_path, capsys, line, words):
    """Trial s51 H4: start_after_days, refused in one line naming the job, exit 2."""
    jobs = f'horizon_days = 90\n[inventory]\nh100-sxm = 8\n[[jobs]]\nname = "a"\nmodel = "llama3-8b"\ntokens = 1e11\n{line}\n'
    assert main(["portfolio", _file(tmp_path, jobs)]) == 2
    err = capsys.readouterr().err
    assert words in err and "job 'a'" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("command", ["portfolio", "fleet"])
def test_a_released_job_starts_no_earlier_and_says_so(tmp_path, capsys, command):
    """Trial s51 H4: two jobs on 8 owned H100, the second released on day 3: it starts on day 3 or
    later, in the text and in --json (start_after_days), the first's none."""
    jobs = "horizon_days = 120\n[inventory]\nh100-sxm = 8\n"
    jobs += "".join(
        f'[[jobs]]\nname = "{name}"\nmodel = "llama3-8b"\ntokens = 1e11\n{extra}'
        for name, extra in (("a", ""), ("b", "start_after_days = 3.5\n"))
    )
    if command == "fleet":
        jobs = 'buy = ["h100-sxm"]\n' + jobs
    assert main([command, _file(tmp_path, jobs), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    rows = {j["job"]: j for j in (answer["assignments"] if command == "portfolio" else answer["mixed"]["assignments"])}
    assert rows["b"]["start_after_days"] == 3.5 and rows["b"]["start_days"] >= 3.5
    assert rows["a"]["start_after_days"] is None
    assert main([command, _file(tmp_path, jobs)]) == 0
    assert (
        "released: b on day 3.5 (start_after_days: none starts earlier; deadlines count from day 0)"
        in capsys.readouterr().out
    )
