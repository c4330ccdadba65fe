"""Turn pydantic's errors into one teaching error that names the field and the rule."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from graphsvc.errors import ServiceError

M = TypeVar("M", bound=BaseModel)


def field_path(loc: tuple[Any, ...]) -> str:
    """('items', 3, 'blocks', 0) → 'items[3].blocks[0]'."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part in ("function-after", "function-before") or str(part).startswith(("function-", "list[", "constrained-")):
            continue
        else:
            path += ("." if path else "") + str(part)
    return path


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found: list[type[BaseModel]] = []
    for arg in getattr(annotation, "__args__", ()) or ():
        found += _models_in(arg)
    origin = getattr(annotation, "__origin__", None)
    if origin is not None and not found:
        found += _models_in(origin)
    return found


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel]:
    """The (nested) model that owns the last element of `loc`, for listing its fields."""
    current = model
    for part in loc[:-1]:
        if isinstance(part, str) and part in current.model_fields:
            nested = _models_in(current.model_fields[part].annotation)
            if nested:
                current = nested[0]
    return current


def _rule(error: dict[str, Any], model: type[BaseModel]) -> str:
    message = error.get("msg", "is invalid")
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    if error.get("type") == "extra_forbidden":
        owner = _model_at(model, tuple(error.get("loc", ())))
        accepted = ", ".join(sorted(f.alias or name for name, f in owner.model_fields.items()))
        return f"is not an accepted field (accepted: {accepted})"
    if error.get("type") == "missing":
        return "is required"
    return message


FIELD_NAME_RULE = "is not an accepted field name: field names must be valid Unicode text (no lone surrogates)"


def _value_at(data: Any, loc: tuple[Any, ...]) -> Any:
    """The part of the request body that `loc` points at (None when the path leaves it)."""
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _describe(item: dict[str, Any], data: Any, model: type[BaseModel]) -> dict[str, Any]:
    """One pydantic error as {field, rule}; a bad field NAME is named too, escaped so it can be sent."""
    loc = tuple(item["loc"])
    if item.get("type") == "string_unicode":
        owner, name = _value_at(data, loc), item.get("input")
        if isinstance(owner, dict) and isinstance(name, str) and name in owner:
            escaped = name.encode("utf-8", "backslashreplace").decode("utf-8")  # only the surrogate becomes "\\ud800"
            return {"field": field_path(loc + (escaped,)), "rule": FIELD_NAME_RULE}
    return {"field": field_path(loc) or None, "rule": _rule(item, model)}


def parse(model: type[M], data: Any, error: type[ServiceError]) -> M:
    """Validate `data` as `model`, raising `error` (400 or 422) that names the first bad field."""
    if not isinstance(data, dict):
        raise error(f"the body must be a JSON object with the fields of {model.__name__}", field=None)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        details = [_describe(item, data, model) for item in errors]
        first = details[0]
        where = first["field"]
        message = f"{where}: {first['rule']}" if where else first["rule"]
        if len(details) > 1:
            message += f" (and {len(details) - 1} more problem(s), see details)"
        return_error = error(message, field=where, details=details)
        raise return_error from None
