"""`harness.live.chat_completions`: the key's mask over the encodings it knows (the escapings and
their mixtures are in test_live_backend.py, with the key echoed end to end), and where it stops:
forms too short to be told from chance, and transformations no mask can recognise."""

from __future__ import annotations

import base64
import json

import pytest

from harness.live.chat_completions import SecretMask

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
