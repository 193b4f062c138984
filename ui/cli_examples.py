"""Each command's usage examples, shown under its ``--help`` (trial s35: no command had one), and
checked by tests/ui/test_cli_help.py to parse as the command reads them."""

from __future__ import annotations

EXAMPLES: dict[str, tuple[str, ...]] = {
    "estimate": (
        "trainplan estimate --model llama3-8b --gpu h100-sxm --num-gpus 8 --micro-batch 1 --seq-len 8192",
        "trainplan estimate --model llama3-70b --gpu h100-sxm --num-gpus 64 --tp 8 --pp 2 --grad-accum 8 --ac full"
        " --stack megatron-core --out plan.json",
        "trainplan estimate --model path/to/config.json --gpu a100-80gb-sxm --num-gpus 16 --json",
    ),
    "plan": (
        "trainplan plan --model llama3-8b --tokens 1e12 --deadline-days 30",
        "trainplan plan --model llama3-70b --tokens 2e12 --gpus h100-sxm=512,a100-80gb-sxm=256"
        " --budget-usd 3.5e6 --risk p90 --out plan.json",
        "trainplan plan --model llama3-8b --tokens 1e12 --deadline-days 30 --per-gpu",
    ),
    "explain": ("trainplan explain plan.json", "trainplan explain plan.json --stack torchtitan"),
    "catalog": ("trainplan catalog", "trainplan catalog --json"),
    "models": ("trainplan models", "trainplan models llama3-8b path/to/config.json"),
    "portfolio": (
        "trainplan portfolio examples/portfolio.toml",
        "trainplan portfolio examples/portfolio.toml --emit jobs/",
    ),
    "fleet": ("trainplan fleet examples/fleet.toml",),
    "calibrate": ("trainplan calibrate --quick", "trainplan calibrate --calibrate-from job/"),
    "detect": ("trainplan detect",),
    "emit": ("trainplan emit plan.json --out job/ --steps 200",),
    "run": ("trainplan run job/", "trainplan run job/ --device cpu"),
    "app": ("trainplan app",),
}


def epilog(command: str) -> str:
    """The ``Examples:`` paragraph of a command's help (typer keeps blank-line paragraphs apart)."""
    return "\n\n".join(("Examples:", *EXAMPLES[command]))
