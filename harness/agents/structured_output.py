"""A framework agent's final output as the text graded: what the model answered in text as
it is, a structured output (a pydantic model, a dataclass, a TypedDict, a list of them) as
its JSON, so `response_json` and the text checks read what reports show. Imported only by
the framework adapters, whose frameworks bring pydantic."""

from __future__ import annotations

from typing import Any


def output_text(output: Any) -> str:
    """`output` as the turn's final response: a string as it is, `None` as "", anything
    else as compact JSON (pydantic's `model_dump(mode="json")`, written out; a value JSON
    cannot hold as its `str()`)."""
    if isinstance(output, str):
        return output
    if output is None:
        return ""
    from pydantic_core import to_json

    return to_json(output, fallback=str).decode()
