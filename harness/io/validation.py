"""Checking decoded JSON or TOML data against a msgspec schema, before converting it.

The walk follows the schema's own type information (`msgspec.inspect`), so every fault is
found with the exact path of its field, unknown keys get a did-you-mean, and a msgspec
release that rewords its error messages changes nothing here. The wording follows
msgspec's (`Expected \\`str | null\\`, got \\`int\\``), which users already know.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import msgspec
import msgspec.inspect as mi

from harness.io.json_paths import child_path

T = TypeVar("T")


class Fault(msgspec.Struct, frozen=True):
    """One place where the data does not fit the schema."""

    path: str
    message: str


def faults(data: Any, schema: Any, root: str = "$") -> list[Fault]:
    """Every fault of `data` against `schema` (a type msgspec understands), in document
    order; an empty list means `msgspec.convert(data, schema, strict=True)` will succeed."""
    return list(_check(data, _info(schema), root))


class SchemaFaults(Exception):
    """The data does not fit the schema; `faults` says everywhere it does not."""

    def __init__(self, found: list[Fault]) -> None:
        super().__init__("; ".join(f"{f.path}: {f.message}" for f in found))
        self.faults = found


def convert(data: Any, schema: type[T], root: str = "$") -> T:
    """`msgspec.convert(data, schema, strict=True)`, or `SchemaFaults` with every fault.

    Valid data is converted once; the walk runs only for data msgspec refuses (it accepts
    exactly what msgspec accepts), so admitting a suite costs one conversion a fixture."""
    try:
        return msgspec.convert(data, schema, strict=True)
    except msgspec.ValidationError as exc:
        found = faults(data, schema, root)
        # A rule the walk does not know yet still gets a clear message, never a traceback.
        raise SchemaFaults(found or [Fault(root, f"does not fit the schema: {exc}")]) from None


def known_keys(struct: type[msgspec.Struct]) -> list[str]:
    return [f.encode_name for f in _info(struct).fields]


def closest(name: str, known: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The one of `known` that `name` is most likely a misspelling of (difflib's ratio at
    least `cutoff`), or None: what every did-you-mean of a refusal names."""
    import difflib  # a refusal's: an admitted suite has no use for it

    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=cutoff)
    return close[0] if close else None


def did_you_mean(name: str, known: Iterable[str], cutoff: float = 0.6) -> str:
    """` (did you mean X?)` for the closest of `known` to `name`, or "" when none is close."""
    found = closest(name, known, cutoff)
    return f" (did you mean {found}?)" if found is not None else ""


def unknown_key_message(key: str, known: list[str]) -> str:
    hint = closest(key, known)
    suffix = f" (did you mean {hint}?)" if hint else f" (known keys: {', '.join(known)})"
    return f"unknown key{suffix}"


@functools.cache
def _info(schema: Any) -> Any:
    return mi.type_info(schema)


# The JSON names msgspec uses, and the order in which it lists a union's members.
_ORDER = ("bool", "int", "float", "str", "object", "array", "null")


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__  # e.g. a TOML date


def _accepts(info: Any) -> set[str]:
    """The JSON kinds a schema node accepts (before its constraints)."""
    if isinstance(info, mi.AnyType):
        return set(_ORDER)
    if isinstance(info, mi.NoneType):
        return {"null"}
    if isinstance(info, mi.BoolType):
        return {"bool"}
    if isinstance(info, mi.IntType):
        return {"int"}
    if isinstance(info, mi.FloatType):
        return {"int", "float"}
    if isinstance(info, mi.StrType):
        return {"str"}
    if isinstance(info, mi.LiteralType):
        return {_json_kind(v) for v in info.values}
    if isinstance(info, (mi.ListType, mi.VarTupleType, mi.TupleType, mi.SetType)):
        return {"array"}
    if isinstance(info, (mi.DictType, mi.StructType, mi.TypedDictType, mi.DataclassType)):
        return {"object"}
    if isinstance(info, mi.UnionType):
        return set().union(*(_accepts(t) for t in info.types))
    return set()


def _describe(info: Any) -> str:
    """The schema node as msgspec names it: a float accepts ints but is called `float`."""
    members = info.types if isinstance(info, mi.UnionType) else (info,)
    kinds: set[str] = set()
    for member in members:
        kinds |= {"float"} if isinstance(member, mi.FloatType) else _accepts(member)
    return " | ".join(k for k in _ORDER if k in kinds)


def _check(value: Any, info: Any, path: str) -> Iterator[Fault]:
    kind = _json_kind(value)
    if kind not in _accepts(info):
        yield Fault(path, f"Expected `{_describe(info)}`, got `{kind}`")
        return
    if isinstance(info, mi.UnionType):
        yield from _check_union(value, info, kind, path)
        return
    yield from _check_member(value, info, path)


def _check_union(value: Any, info: Any, kind: str, path: str) -> Iterator[Fault]:
    members = [t for t in info.types if kind in _accepts(t)]
    structs = [t for t in members if isinstance(t, mi.StructType)]
    if len(structs) > 1:
        yield from _check_tagged(value, structs, path)
        return
    # A JSON int may be an int or a float member; the int member decides first, as msgspec.
    members.sort(key=lambda t: not isinstance(t, mi.IntType))
    yield from _check_member(value, members[0], path)


def _check_tagged(value: dict[str, Any], structs: list[Any], path: str) -> Iterator[Fault]:
    field = structs[0].tag_field
    tag_path = child_path(path, field)
    if field not in value:
        yield Fault(tag_path, "missing required key")
        return
    tag = value[field]
    tags = [s.tag for s in structs]
    for struct in structs:
        if struct.tag == tag:
            yield from _check_struct(value, struct, path)
            return
    owner = _LAST_KEY.search(path)
    whose = f"a {owner.group(1)}'s {field}" if owner else repr(field)
    wrong = (
        f"Invalid value {tag!r}"
        if isinstance(tag, str)
        else (f"Expected `str`, got `{_json_kind(tag)}`")
    )
    yield Fault(tag_path, f"{wrong}; {whose} is {_or(tags)}")


_LAST_KEY = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)$")


def _or(values: list[Any]) -> str:
    shown = [repr(v) for v in values]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"


def _check_member(value: Any, info: Any, path: str) -> Iterator[Fault]:
    if isinstance(info, (mi.IntType, mi.FloatType)):
        problem = _bound_problem(value, info)
        if problem is not None:
            yield Fault(path, problem)
    elif isinstance(info, mi.LiteralType):
        if not any(type(v) is type(value) and v == value for v in info.values):
            yield Fault(path, f"Invalid enum value {value!r}")
    elif isinstance(info, (mi.ListType, mi.VarTupleType, mi.SetType)):
        for i, item in enumerate(value):
            yield from _check(item, info.item_type, f"{path}[{i}]")
    elif isinstance(info, mi.DictType):
        for key, item in value.items():
            if not isinstance(key, str):
                yield Fault(path, f"Expected `str` keys, got `{_json_kind(key)}`")
                continue
            yield from _check(item, info.value_type, child_path(path, key))
    elif isinstance(info, mi.StructType):
        field = info.tag_field
        if field is not None and field in value and value[field] != info.tag:
            yield Fault(child_path(path, field), f"Invalid value {value[field]!r}")
            return
        yield from _check_struct(value, info, path)


def _check_struct(value: dict[str, Any], info: Any, path: str) -> Iterator[Fault]:
    fields = {f.encode_name: f for f in info.fields}
    for key, item in value.items():
        if key == info.tag_field:
            continue
        field = fields.get(key)
        if field is None:
            if info.forbid_unknown_fields:
                yield Fault(child_path(path, key), unknown_key_message(key, list(fields)))
            continue
        yield from _check(item, field.type, child_path(path, key))
    for name, field in fields.items():
        if field.required and name not in value:
            yield Fault(child_path(path, name), "missing required key")


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
}


def _bound_problem(value: float, info: Any) -> str | None:
    name = "int" if isinstance(info, mi.IntType) else "float"
    number = float(value) if name == "float" else value
    for op, bound in ((">=", info.ge), (">", info.gt), ("<=", info.le), ("<", info.lt)):
        if bound is not None and not _OPERATORS[op](number, bound):
            shown = float(bound) if name == "float" else bound
            return f"Expected `{name}` {op} {shown!r}"
    return None
