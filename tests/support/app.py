"""Helpers of the app tests (tests/ui/test_app*.py): run the page headless with AppTest, read it back."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Widget

from planner.api import PlanRequest, PlanResult, plan
from planner.catalog.hardware import load_catalog
from planner.catalog.models import get_preset
from planner.model.settings import DEFAULT_SETTINGS
from planner.model.spec import ModelSpec
from support import DATA, REPO
from ui.gpu_table import rows_with
from ui.i18n import Labels

APP = str(REPO / "app.py")
HF_CONFIGS = DATA / "hf_configs"
GPUS = ["h100-sxm", "a100-80gb-sxm"]
EN, ZH = Labels("en"), Labels("zh")
CATALOG = load_catalog()
TABS = (
    "tab_breakdowns", "tab_explore", "tab_top", "tab_why_not", "tab_downloads", "tab_explorer", "tab_run", "tab_local",
)  # fmt: skip


def gpu_rows(gpus=GPUS, inventory=None, prices=None, purchases=None):
    """The sidebar's GPU table (``ui.gpu_table``) with these types allowed and these values set."""
    return rows_with(CATALOG, allowed=gpus, inventory=inventory, prices=prices, purchases=purchases)


def run_app(gpus=GPUS, inventory=None, prices=None, purchases=None, **state) -> AppTest:
    """Run the app once with widget values preset through session_state (the app's own defaults path)."""
    at = AppTest.from_file(APP, default_timeout=60)
    state.setdefault("preset", "gpt3-125m")
    state["gpu_rows"] = gpu_rows(gpus, inventory, prices, purchases)
    state.setdefault("seq_len", 2048)  # gpt3-125m's context
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def request_for(model: ModelSpec | None = None, **changes) -> PlanRequest:
    """The request the app builds from its default widget values (and ``changes``)."""
    model = model or get_preset("gpt3-125m")
    fields = dict(
        model=model,
        training_tokens=20 * model.num_params(),
        gpus={g: None for g in GPUS},
        price_overrides={},
        seq_len=2048,
        global_batch_tokens=None,
        deadline_days=None,
        budget_usd=None,
        objective="cost",
        cost_weight=0.5,
        top_k=10,
        max_gpus=4096,
        allow_offload=False,
    )
    fields.update(changes)
    return PlanRequest(**fields)


_PLANNED: dict[str, PlanResult] = {}


def planned(request: PlanRequest) -> PlanResult:
    """``planner.api.plan(request, settings=DEFAULT_SETTINGS)``, the answer the app must show: solved
    once per request in a test process (the planner is deterministic and its results are frozen;
    the app tests ask for the default request's plan about twenty times)."""
    key = request.model_dump_json()
    if key not in _PLANNED:
        _PLANNED[key] = plan(request, settings=DEFAULT_SETTINGS)
    return _PLANNED[key]


def open_tab(at: AppTest, name: str, tr: Labels = EN) -> AppTest:
    """Switch the main tabs (only the open tab's panel runs)."""
    at.session_state["main_tab"] = tr(name)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def card(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def table(at: AppTest, column: str):
    """The first st.dataframe with this column (AppTest sees no key on a non-selectable dataframe)."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


# Three English words in a row, a bracket between them too: trial s44 app L8 found a section
# title ("The efficiency ceiling") and a kernel ("Triton flash (llm-foundry)") left in English,
# which four words joined by spaces did not catch. A hyphen joins one name (llm-foundry,
# pytest-of-root in a path), and names of two words (Hugging Face, Triton flash) pass.
ENGLISH_SENTENCE = re.compile(r"\b[A-Za-z]{2,}(?:[ ,;:()]+[A-Za-z]{2,}){2,}\b")


CODE = re.compile(r"`[^`]*`")  # a command to type (`trainplan run DIR`) is not prose to translate


def english_sentences(text: str) -> list[str]:
    """Runs of three or more English words outside code: what must not be left in 中文 mode."""
    return ENGLISH_SENTENCE.findall(CODE.sub("·", text))


def widgets(at: AppTest) -> list[Widget]:
    return [node for root in (at.sidebar, at.main) for node in root if isinstance(node, Widget)]
