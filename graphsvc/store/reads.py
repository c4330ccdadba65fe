"""SPEC §5 reads: memory_get (one or many ids) and the fenced, paginated list.

get: ONE query for all ids; returned in request order (duplicates once); any
unknown id is a 404 naming it, because a caller asking for a specific id wants
to know it is not there rather than get a shorter list. Tombstoned capsules ARE
returned by get (flagged), as SPEC §1 says get is the one read that shows them.

list: keyset pagination on `seq` (the id's number). The cursor is opaque to
callers (base64url of "seq:<n>") and means "after capsule n", so a page never
repeats or skips a capsule when others are added or tombstoned meanwhile.
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Any, Callable

from graphsvc.store.db import Database
from graphsvc.errors import BadRequest, InvalidInput, NotFound
from graphsvc.models import CapsuleIdList, ListRequest
from graphsvc.validation import parse
from graphsvc.store.records import Visible, from_record

_CURSOR_PREFIX = "seq:"


def encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{seq}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    """The seq a cursor points after; anything we did not issue is a 400."""
    bad = BadRequest("cursor is not one this service issued; pass next_cursor from the previous page "
                     "unchanged, or omit it to start from the first page", field="cursor")
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise bad from None
    number = text[len(_CURSOR_PREFIX):]
    if not text.startswith(_CURSOR_PREFIX) or not number.isdigit() or len(number) > 18:
        raise bad
    return int(number)


def parse_ids(capsule_ids: Any) -> list[str]:
    """Validated ids in request order, duplicates dropped (422 names `ids[i]`)."""
    ids = parse(CapsuleIdList, {"ids": capsule_ids}, InvalidInput).ids
    return list(dict.fromkeys(ids))


def missing_error(wanted: list[str], found: set[str], original: list[str]) -> NotFound | None:
    missing = [capsule_id for capsule_id in wanted if capsule_id not in found]
    if not missing:
        return None
    first = missing[0]
    listed = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
    return NotFound(f"no capsule with id {listed}", field=f"ids[{original.index(first)}]")


def get_capsules(db: Database, capsule_ids: Any, now: datetime, visible: Visible = None) -> dict[str, Any]:
    """Full capsules (edges in and out, flags) for one or many ids, in request order.

    `visible` (a scoped key): a capsule of a project outside it is answered exactly like an unknown
    id, and edges to such capsules are counted, not listed (graphsvc.store.records.capsule_json)."""
    ids = parse_ids(capsule_ids)
    records = db.query("capsules/get_many", ids=ids)
    by_id = {record["props"]["id"]: from_record(record, now, visible) for record in records
             if visible is None or visible(record["props"]["project_id"])}
    error = missing_error(ids, set(by_id), list(capsule_ids))
    if error:
        raise error
    return {"capsules": [by_id[capsule_id] for capsule_id in ids]}


def list_capsules(db: Database, data: Any, now: datetime, fence: Callable[..., tuple[str, ...] | None] | None = None,
                  visible: Visible = None) -> dict[str, Any]:
    """One page of fenced, filtered capsules in id order, with `next_cursor` (null on the last page).

    `fence` (graphsvc.access.Principal.fence) gives a scoped key's prefixes for a request without a
    fence of its own (or refuses a fence outside the scope); `visible` hides edges to what it cannot see."""
    request = parse(ListRequest, data if data is not None else {}, BadRequest)
    scope = fence(request.project_id, request.project_prefix) if fence is not None else None
    after = decode_cursor(request.cursor) if request.cursor is not None else 0
    records = db.query(
        "capsules/list",
        after=after,
        limit=request.limit + 1,
        project_id=request.project_id,
        project_prefix=request.project_prefix,
        scope=list(scope) if scope is not None else None,
        kind=request.kind,
        tier=request.tier,
        status=request.status,
    )
    page = records[: request.limit]
    more = len(records) > request.limit
    return {
        "capsules": [from_record(record, now, visible) for record in page],
        "next_cursor": encode_cursor(page[-1]["props"]["seq"]) if more else None,
    }
