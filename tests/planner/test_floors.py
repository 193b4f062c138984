"""The floors between the packages: the planner plans without torch, streamlit, plotly, trainer or ui.

The base install (pyproject's dependencies) has none of the train or app extras; ``trainplan plan``
must work there. The run-time checks import in a fresh interpreter in which those packages cannot
be imported at all; the static check reads every planner file, imports inside functions included.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from support import REPO
from support.imports import HEAVY, heavy_imports

# A meta-path finder ahead of all others: importing a HEAVY package (or anything in it) fails as if
# it were not installed.
BLOCKER = textwrap.dedent(
    f"""
    import importlib.abc, sys

    BLOCKED = {sorted(HEAVY)!r}

    class Blocker(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by test_floors)", name=name)
            return None

    sys.meta_path.insert(0, Blocker())
    """
)


def run_blocked(code: str, *extra_path: str) -> dict:
    """Run ``code`` (which prints one JSON object last) with the HEAVY packages blocked."""
    path = [str(REPO), *extra_path]
    script = BLOCKER + f"sys.path[:0] = {path!r}\n" + textwrap.dedent(code)
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_planner_plans_a_preset_without_torch_or_the_app():
    out = run_blocked(
        """
        import json
        from planner.api import PlanRequest, plan
        from planner.catalog.models import get_preset

        result = plan(PlanRequest(model=get_preset("llama3-8b"), training_tokens=1e11, deadline_days=30))
        estimate = result.plan.estimate
        print(json.dumps(dict(
            feasible=estimate.feasible,
            gpu=result.plan.gpu,
            num_gpus=result.plan.num_gpus,
            days=estimate.time_to_train_h / 24,
            loaded=sorted({m.partition(".")[0] for m in sys.modules} & set(BLOCKED)),
        )))
        """
    )
    assert out["feasible"], out
    assert out["num_gpus"] >= 1 and 0 < out["days"] <= 30, out
    assert out["loaded"] == [], out


def test_the_blocker_blocks():
    """The check above means something: with the blocker in place, torch cannot be imported."""
    out = run_blocked(
        """
        import json
        try:
            import torch
            print(json.dumps({"imported": True}))
        except ModuleNotFoundError as error:
            print(json.dumps({"imported": False, "error": str(error)}))
        """
    )
    assert out == {"imported": False, "error": "No module named 'torch' (blocked by test_floors)"}


def test_planner_test_modules_import_without_torch_or_the_app():
    """What tests/planner/conftest.py checks statically, at run time and through every helper:
    each test module here imports (or skips, for a missing optional package) with the HEAVY ones blocked."""
    here = REPO / "tests" / "planner"
    modules = sorted(str(p) for p in here.glob("test_*.py"))
    out = run_blocked(
        f"""
        import importlib.util, json
        import pytest

        outcome = {{}}
        for path in {modules!r}:
            name = path.rsplit("/", 1)[1][:-3]
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
                outcome[name] = "imported"
            except pytest.skip.Exception as skip:
                outcome[name] = f"skipped: {{skip}}"
        outcome["loaded"] = sorted({{m.partition(".")[0] for m in sys.modules}} & set(BLOCKED))
        print(json.dumps(outcome))
        """,
        str(REPO / "tests"),
        str(here),
    )
    assert out.pop("loaded") == [], out
    assert set(out) == {p.rsplit("/", 1)[1][:-3] for p in modules}
    assert out["test_floors"] == "imported" and out["test_plan"] == "imported", out


@pytest.mark.parametrize("path", sorted((REPO / "planner").rglob("*.py")), ids=lambda p: str(p.relative_to(REPO)))
def test_no_planner_file_imports_torch_or_the_app(path):
    assert heavy_imports(path) == []
