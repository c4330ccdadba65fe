"""Helpers for the API key tests: act as a principal, make keys."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from graphsvc.access import Principal, current_principal, normal_prefixes
from graphsvc.service import GraphService


@contextmanager
def acting_as(principal: Principal) -> Iterator[None]:
    """Service calls in this block are made by `principal` (what the auth middleware sets)."""
    reset = current_principal.set(principal)
    try:
        yield
    finally:
        current_principal.reset(reset)


def scoped(right: str, *prefixes: str) -> Principal:
    return Principal(key_id="00000000000a", label="test", right=right,
                     prefixes=normal_prefixes(prefixes) if prefixes else None, caller="key:00000000000a")


def make_key(service: GraphService, rights: str, *prefixes: str, label: str = "agent") -> dict[str, Any]:
    body: dict[str, Any] = {"label": label, "rights": rights}
    if prefixes:
        body["prefixes"] = list(prefixes)
    return service.keys_create(body)


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
