"""`harness.live.chat_completions`: the key's mask over the encodings it knows (the escapings and
their mixtures are in test_live_backend.py, with the key echoed end to end), and where it stops:
forms too short to be told from chance, and transformations no mask can recognise; the
structured answer a request asks for, as the request body's response format; the model
settings that map to the body's fields."""

from __future__ import annotations

import base64
import json

import pytest

from harness.live.chat_completions import SecretMask, request_body
from harness.model_boundary import Message, ModelRequest, OutputSchema, ToolSchema

KEY = "sk-proj-Hex9SECRET-e2e"


@pytest.mark.parametrize(
    "form",
    [
        KEY.encode().hex(),
        KEY.encode().hex().upper(),
        (b"Bearer " + KEY.encode()).hex(),  # inside a longer encoded text
        json.dumps({"k": KEY.encode().hex()}),
        "".join(f"\\u{ord(c):04x}" for c in KEY.encode().hex()),  # hex, then escaped
    ],
    ids=["lower", "upper", "inside", "in-json", "escaped"],
)
def test_the_key_hex_encoded_is_masked(form: str) -> None:
    mask = SecretMask(KEY)
    masked = mask(f"the key: {form}.")
    assert mask.found_in(form)
    assert KEY.encode().hex() not in masked.lower() and "***" in masked, masked
    assert masked.startswith("the key: ") and masked.endswith("."), masked


def test_a_non_ascii_key_is_masked_in_the_hex_of_its_utf8_bytes() -> None:
    key = "sk-clé-Ünïcode-42"
    assert SecretMask(key)(f"[{key.encode().hex()}]") == "[***]"


def test_what_the_mask_does_not_cover() -> None:
    """Documented limits (docs/live.md): an encoded form under 16 characters could occur by
    chance, and a transformation other than the known encodings cannot be recognised."""
    short = "sk-1234"  # 14 hex digits, 12 base64 ones
    mask = SecretMask(short)
    assert mask(short) == "***"  # the key itself, however short
    for form in (short.encode().hex(), base64.b64encode(short.encode()).decode()):
        assert mask(form) == form
    mask = SecretMask(KEY)
    hexed = KEY.encode().hex()
    for form in (KEY[::-1], " ".join(KEY), hexed[:20] + "-" + hexed[20:]):
        assert mask(form) == form
    # Mixed-case hex is not one of the forms: a server writes hex in one case.
    upper = KEY.encode().hex().upper()
    mixed = upper.replace("B", "b", 1)
    assert mixed != upper and mask(upper) == "***"
    assert mask(mixed) == mixed


SEAT = {"type": "object", "properties": {"seat": {"type": "string"}}, "required": ["seat"]}


def test_a_native_output_schema_is_the_bodys_response_format() -> None:
    request = ModelRequest(
        messages=(Message(role="user", content="A seat"),),
        output_schema=OutputSchema(name="final_output", schema=SEAT, strict=True),
    )
    assert request_body("m", request)["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "final_output", "schema": SEAT, "strict": True},
    }


def test_a_prompted_schema_and_output_tools_ask_for_no_response_format() -> None:
    # The prompted schema is in the instructions; an output tool is offered as a function.
    prompted = ModelRequest(
        messages=(Message(role="system", content="Answer with JSON: ..."),),
        output_schema=OutputSchema(name="Seat", schema=SEAT, mode="prompted"),
    )
    assert "response_format" not in request_body("m", prompted)
    tool = ModelRequest(
        messages=(Message(role="user", content="A seat"),),
        tools=(ToolSchema("final_result", "The final response", SEAT, output=True),),
    )
    body = request_body("m", tool)
    assert "response_format" not in body
    assert body["tools"][0]["function"]["name"] == "final_result"


def test_the_model_settings_that_map_to_chat_completions_are_sent() -> None:
    settings = {
        "temperature": 0.2,
        "top_p": 0.9,
        "max_tokens": 300,
        "tool_choice": "lookup_order",
        "parallel_tool_calls": False,
        "reasoning": {"effort": "low"},  # no one Chat Completions field: not sent
    }
    asking = Message(role="user", content="Where is order 7?")
    lookup = ToolSchema("lookup_order", "Look an order up.", {"type": "object"})
    body = request_body("m", ModelRequest(messages=(asking,), tools=(lookup,), settings=settings))
    assert {k: v for k, v in body.items() if k not in ("model", "messages", "tools")} == {
        "temperature": 0.2,
        "top_p": 0.9,
        "max_tokens": 300,
        # The SDK names the tool; the API wants it as a function.
        "tool_choice": {"type": "function", "function": {"name": "lookup_order"}},
        "parallel_tool_calls": False,
    }
    # Without tools the API refuses a tool choice: only the sampling settings go.
    bare = request_body("m", ModelRequest(messages=(asking,), settings=settings))
    assert set(bare) == {"model", "messages", "temperature", "top_p", "max_tokens"}
    assert set(request_body("m", ModelRequest(messages=(asking,)))) == {"model", "messages"}
