"""The planner tests run without the train and app extras: no module here imports torch, trainer,
streamlit, plotly or ui when it is imported (inside a test function, behind an importorskip, is fine).

Checked statically as each module is collected, so a stray import fails the collection of that file
even when the full suite has torch loaded already; tests/planner/test_floors.py checks it at run time.
"""

from __future__ import annotations

import pytest
from support.imports import heavy_imports


class TorchFreeModule(pytest.Module):
    def collect(self):
        if found := heavy_imports(self.path, module_level=True):
            raise self.CollectError(
                "planner tests must not import these at module level (import inside the test):\n" + "\n".join(found)
            )
        return super().collect()


def pytest_pycollect_makemodule(module_path, parent):
    return TorchFreeModule.from_parent(parent, path=module_path)
