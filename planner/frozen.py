"""The configuration of every typed record that flows one way (hardware, model, layout, request,
plan, reports, job): frozen once made, and no key it does not know (a misspelt field in a
hand-edited plan.json or catalog file is an error, not silently dropped)."""

from pydantic import ConfigDict

FROZEN = ConfigDict(frozen=True, extra="forbid")
