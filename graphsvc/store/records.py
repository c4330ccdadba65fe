"""Neo4j capsule rows → the JSON shape every read and update returns.

One mapping shared by get, list and update so the three can never disagree.
Keys mirror the stored properties (absent properties stay absent, e.g. `status`
on a fact), instants are ISO-8601 UTC strings (graphsvc.core.timefmt), and three
booleans answer the questions a reader actually has: tombstoned, superseded,
expired (valid_to <= now). `seq` is internal (it is the id's number) and not shown.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Mapping

from graphsvc.core.timefmt import iso_utc, native

TIME_PROPERTIES = ("created_at", "updated_at", "valid_to", "tombstoned_at", "lease_until")
#: `seq` is the id's number; the rest are maintained for reads (graphsvc.store.maintain), not data.
HIDDEN_PROPERTIES = frozenset({"seq", "tokens", "superseded", "open_blockers", "ready", "ord", "counted", "census"})


def is_expired(valid_to: datetime | None, now: datetime) -> bool:
    """SPEC §1: a capsule is expired when valid_to <= now."""
    return valid_to is not None and valid_to <= now


#: Which projects the caller may see (graphsvc.access.Principal.covers); None: every project.
Visible = Callable[[str], bool] | None


def capsule_json(props: Mapping[str, Any], *, now: datetime, superseded: bool,
                 outgoing: list[Mapping[str, str]], incoming: list[Mapping[str, str]],
                 visible: Visible = None) -> dict[str, Any]:
    """One capsule as JSON: properties, flags and edges (`out` points at `to`, `in` comes `from`).

    With `visible`, an edge whose other end the caller may not see is not listed (its id would say
    that capsule exists); `edges.hidden` counts them, `{"out": n, "in": n}`, present only when one is.
    """
    capsule: dict[str, Any] = {}
    for key in sorted(props):
        if key in HIDDEN_PROPERTIES:
            continue
        value = props[key]
        capsule[key] = iso_utc(native(value)) if key in TIME_PROPERTIES and value is not None else value
    capsule["tombstoned"] = props.get("tombstoned_at") is not None
    capsule["superseded"] = bool(superseded)
    capsule["expired"] = is_expired(native(props.get("valid_to")), now)
    shown_out = [edge for edge in outgoing if visible is None or visible(edge["project_id"])]
    shown_in = [edge for edge in incoming if visible is None or visible(edge["project_id"])]
    capsule["edges"] = {
        "out": [{"type": edge["type"], "to": edge["id"]} for edge in shown_out],
        "in": [{"type": edge["type"], "from": edge["id"]} for edge in shown_in],
    }
    if len(shown_out) < len(outgoing) or len(shown_in) < len(incoming):
        capsule["edges"]["hidden"] = {"out": len(outgoing) - len(shown_out), "in": len(incoming) - len(shown_in)}
    return capsule


def from_record(record: Mapping[str, Any], now: datetime, visible: Visible = None) -> dict[str, Any]:
    """A row of cypher/capsules/get_many or list (props, outgoing, incoming, superseded)."""
    return capsule_json(record["props"], now=now, superseded=record["superseded"],
                        outgoing=record["outgoing"], incoming=record["incoming"], visible=visible)
