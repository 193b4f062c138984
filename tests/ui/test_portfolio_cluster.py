"""portfolio --emit's cluster flags per GPU type (fleet51 H3: --slurm-gpu-type h100 pinned the
portfolio's A100 jobs to H100 nodes, and without it slurm.sbatch named no type, unsaid)."""

from __future__ import annotations

import json

import pytest
from support import REPO

from trainer.job_spec import JobSpec
from ui.cli import main
from ui.cluster_flags import portfolio_cluster

TYPES = ["h100-sxm", "a100-80gb-sxm"]


def test_one_pinning_value_for_several_types_is_refused_and_one_per_type_is_taken():
    with pytest.raises(
        ValueError, match=r"^--slurm-gpu-type 'h100': the portfolio runs jobs on a100-80gb-sxm, h100-sxm"
    ):
        portfolio_cluster({"slurm_gpu_type": "h100"}).check_types(TYPES)
    portfolio_cluster({"slurm_gpu_type": "h100"}).check_types(["h100-sxm", "h100-sxm"])  # one type: taken
    portfolio_cluster({"slurm_partition": "gpu"}).check_types(TYPES)  # a partition may hold both
    both = portfolio_cluster({"slurm_gpu_type": "h100-sxm=h100,a100-80gb-sxm=a100", "slurm_time": "48:00:00"})
    both.check_types(TYPES)
    assert (both.for_gpu("a100-80gb-sxm").slurm_gpu_type, both.for_gpu("h100-sxm").slurm_gpu_type) == ("a100", "h100")
    assert both.for_gpu("a100-80gb-sxm").slurm_time == "48:00:00" and both.names_types
    with pytest.raises(ValueError, match=r"^--slurm-gpu-type: no value for a100-80gb-sxm"):
        portfolio_cluster({"slurm_gpu_type": "h100-sxm=h100"}).check_types(TYPES)
    wider = portfolio_cluster({"slurm_gpu_type": "h100-sxm=h100,a100-80gb-sxm=a100,b200=b200"})  # review51 L3
    assert wider.unused_types(TYPES) == ("--slurm-gpu-type: no job runs on b200, so its value there is not used",)
    assert both.unused_types(TYPES) == ()


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"slurm_gpu_type": "h100-sxm=h100,=a100"}, "give one value, or GPU=VALUE for each GPU type"),
        ({"slurm_gpu_type": "h100-sxm=h 100"}, "--slurm-gpu-type 'h 100': give a GRES type name"),
        ({"k8s_gpu_product": "h100-sxmm=NVIDIA-H100-80GB-HBM3"}, "--k8s-gpu-product: "),
    ],
)
def test_a_bad_per_type_value_is_one_line_naming_its_flag(given, words):
    with pytest.raises(ValueError) as info:
        portfolio_cluster(given)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_portfolio_emit_pins_each_jobs_type_and_warns_where_nothing_does(tmp_path, capsys):
    jobs_file = str(REPO / "examples" / "portfolio.toml")
    assert main(["portfolio", jobs_file, "--emit", str(tmp_path / "any"), "--json"]) == 0
    captured = capsys.readouterr()
    assert "their slurm.sbatch name no GPU type" in captured.err
    assert any("their slurm.sbatch name no GPU type" in w for w in json.loads(captured.out)["warnings"])  # review51 M1
    per = "h100-sxm=h100,a100-80gb-sxm=a100"
    assert main(["portfolio", jobs_file, "--emit", str(tmp_path / "pinned"), "--json", "--slurm-gpu-type", per]) == 0
    captured = capsys.readouterr()
    assert "name no GPU type" not in captured.err
    for job in json.loads(captured.out)["job_dirs"]:
        spec = JobSpec.load(tmp_path / "pinned" / job)
        gres = {"h100-sxm": "h100", "a100-80gb-sxm": "a100"}[spec.plan.gpu]
        assert spec.cluster.slurm_gpu_type == gres
        assert f"--gpus-per-node={gres}:" in (tmp_path / "pinned" / job / "slurm.sbatch").read_text()
    assert main(["portfolio", jobs_file, "--emit", str(tmp_path / "one"), "--slurm-gpu-type", "h100"]) == 2
    assert "give one per type" in capsys.readouterr().err and not (tmp_path / "one").exists()
