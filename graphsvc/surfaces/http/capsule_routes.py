"""SPEC §5 routes under /v1/capsules: thin handlers over GraphService.

Static paths (export, import, get, relate, tombstone) are mounted before
`/v1/capsules/{capsule_id}` so they are never read as an id. OPERATIONS lists
exactly the mounted routes (tests/integration/test_http_capsules.py checks it),
so /openapi.json cannot drift from what the app serves.
"""

from __future__ import annotations

import hashlib
import tempfile
from itertools import islice
from typing import Any, AsyncIterator

from pydantic import TypeAdapter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from graphsvc.errors import BadRequest, InvalidInput, NotFound
from graphsvc.models import CapsuleIdList, CapsuleIn, CapsuleUpdate, IngestBatch, ListRequest, RelateRequest
from graphsvc.service import GraphService, authorize
from graphsvc.store.update import valid_id
from graphsvc.validation import parse
from graphsvc.surfaces.http.common import body_chunks, call, json_body, ok
from graphsvc.surfaces.deadline import run_watched
from graphsvc.surfaces.http.idempotency import REPLAYED_HEADER, key_of, keyed_write
from graphsvc.watch import Watch

#: An export of ~1M capsules; larger stores move with `graphsvc export` / `graphsvc import`.
MAX_IMPORT_BYTES = 1024 * 1024 * 1024
#: Export lines handed from the worker thread to the response at a time.
EXPORT_BATCH = 2000
from graphsvc.surfaces.http.openapi import Operation

_REF = "#/components/schemas/{model}"
_KEY_PARAM = {"name": "Idempotency-Key", "in": "header", "required": False,
              "schema": {"type": "string", "pattern": "^[A-Za-z0-9._~:+/=-]{1,200}$"},
              "description": "Makes a retry safe: the first request with a key stores its answer with the key (in the "
              "write's own transaction); the same key with the same body returns that answer (same ids, same status, "
              "header Idempotent-Replayed: true) and writes nothing; with another body it is a 422. Keys live 24 h "
              "(GRAPHSVC_IDEMPOTENCY_TTL) and are scoped to the bearer token. A malformed key is a 400."}
_ID_PARAM = {"name": "capsule_id", "in": "path", "required": True, "schema": {"type": "string", "pattern": "^cap-[1-9][0-9]*$"},
             "description": "a capsule id such as cap-12"}


def _query_parameters() -> list[dict[str, Any]]:
    schema = ListRequest.model_json_schema(ref_template=_REF)
    return [{"name": name, "in": "query", "required": False, "schema": prop}
            for name, prop in schema["properties"].items()]


OPERATIONS = [
    Operation(
        "POST", "/v1/capsules", "Ingest one capsule or a batch (all-or-nothing)",
        description="Body: one capsule, or {\"items\": [...]} with at most 1000 capsules. "
        "A bad item rejects the whole batch with 422 naming items[i].field; nothing is written.",
        request_schema=TypeAdapter(CapsuleIn | IngestBatch).json_schema(ref_template=_REF),
        parameters=(_KEY_PARAM,), success_status=201,
    ),
    Operation(
        "GET", "/v1/capsules", "List capsules: fenced, filtered, paginated",
        description="Query parameters: project_id (exact) and/or project_prefix (subtree: 'nott' covers 'nott' and "
        "'nott/x', never 'nottx'), kind, tier, status, limit (1-500, default 50), "
        "cursor (next_cursor of the previous page). Tombstoned capsules are never listed (GET them by id). "
        "Ordered by id number; pages are stable under writes. "
        "Answer: {capsules: [...], next_cursor: string|null}.",
        parameters=tuple(_query_parameters()), error_statuses=(400, 401, 403, 503),
    ),
    Operation(
        "GET", "/v1/capsules/export", "Export every capsule and edge as JSON Lines (application/x-ndjson)",
        description="Streams {\"capsule\": {...}} lines (by id number) then {\"edge\": {type, from, to}} lines; "
        "instants are UTC with nanoseconds, so export -> import -> export is byte-identical. Tombstoned "
        "capsules are included: an export is a backup.",
        error_statuses=(401, 403, 503), response_media_type="application/x-ndjson",
    ),
    Operation(
        "POST", "/v1/capsules/import", "Import a JSON Lines export (resumable: send it again to complete it)",
        description="Body: the export's lines (application/x-ndjson, at most 1 GiB; spooled to disk, never held "
        "in memory). Every line is validated first (422 naming line[n]); the id counter is raised past the "
        "largest imported id; capsules already stored with the same exported fields are already present, one "
        "stored with other fields is a 409 naming its line, and nothing is written until both checks pass. "
        "Then what is not stored yet is written in chunks of 5000 rows, one transaction per chunk, each bounded "
        "by the request timeout. An import that stops part way (503, a lost connection) keeps what it wrote: "
        "sending the same file again completes it. Answer: {capsules: n, edges: n, already_present: "
        "{capsules: n, edges: n}} (written, and found already stored).",
        request_schema={"type": "string", "description": "JSON Lines, one object per line"},
        request_media_type="application/x-ndjson", parameters=(_KEY_PARAM,),
        success_status=201, error_statuses=(400, 401, 403, 409, 422, 503),
    ),
    Operation(
        "POST", "/v1/capsules/get", "Read one or many capsules by id (memory_get)",
        description="Body: {\"ids\": [...]} (1-1000). Full capsules in request order with edges in and out and "
        "tombstoned/superseded/expired flags; tombstoned capsules are shown (flagged). Unknown id -> 404 naming it.",
        request_model=CapsuleIdList, error_statuses=(401, 403, 404, 422, 503),
    ),
    Operation(
        "POST", "/v1/capsules/relate", "Add and/or remove BLOCKS / SUPERSEDES edges (one transaction)",
        description="Body: {\"add\": [{type, from, to}], \"remove\": [...]}. Unknown ids, self-loops and BLOCKS "
        "touching a non-task/epic capsule are 422 naming add[i].from/to; nothing is written. Answer: {added, "
        "already_present, removed, not_present}.",
        request_model=RelateRequest, parameters=(_KEY_PARAM,), error_statuses=(401, 403, 422, 503),
    ),
    Operation(
        "POST", "/v1/capsules/tombstone", "Tombstone capsules (never deleted; idempotent)",
        description="Body: {\"ids\": [...]}. The first tombstoned_at is kept. Unknown id -> 404 naming it, nothing "
        "marked. Answer: {tombstoned: [...], already_tombstoned: [...]}.",
        request_model=CapsuleIdList, parameters=(_KEY_PARAM,), error_statuses=(401, 403, 404, 422, 503),
    ),
    Operation(
        "GET", "/v1/capsules/{capsule_id}", "Read one capsule (memory_get for a single id)",
        parameters=(_ID_PARAM,), error_statuses=(401, 403, 404, 422, 503),
    ),
    Operation(
        "PATCH", "/v1/capsules/{capsule_id}", "Update status, tier, valid_to, headline or content",
        description="Bumps updated_at. status is for task/epic only (422 otherwise); clear_valid_to: true removes "
        "the expiry; content without headline re-derives a derived headline but keeps a chosen one. Unknown id "
        "-> 404; a tombstoned capsule -> 409. Answer: the full capsule.",
        request_model=CapsuleUpdate, parameters=(_ID_PARAM, _KEY_PARAM), error_statuses=(401, 403, 404, 409, 422, 503),
    ),
]


def _query(request: Request) -> dict[str, str]:
    """Query parameters as a dict; a repeated parameter is ambiguous, so it is a 400."""
    data: dict[str, str] = {}
    for key, value in request.query_params.multi_items():
        if key in data:
            raise BadRequest(f"{key}: send it once (it appears more than once)", field=key)
        data[key] = value
    return data


def _one(service: GraphService, capsule_id: str) -> dict[str, Any]:
    valid_id(capsule_id)
    try:
        return service.get([capsule_id])["capsules"][0]
    except NotFound as exc:
        exc.field = "id"
        raise


def routes(service: GraphService) -> list[Route]:
    async def ingest(request: Request) -> JSONResponse:
        return await keyed_write(request, service.ingest, await json_body(request), status=201)

    async def list_capsules(request: Request) -> JSONResponse:
        return ok(await call(service.list, _query(request)))

    async def export(request: Request) -> Response:
        # Each batch of lines runs in a thread bounded per transaction (run_watched); the first one
        # before answering, so an unreachable Neo4j is a 503, not a broken 200 stream.
        watch = Watch()
        lines = service.export_lines(watch)
        head = await run_watched(lambda: list(islice(lines, 1)), watch, request.receive)

        async def stream() -> AsyncIterator[str]:
            try:
                for line in head:
                    yield line
                while True:
                    # Starlette cancels this on a disconnect: run_watched then stops the watch,
                    # so the export starts no further page.
                    batch = await run_watched(lambda: list(islice(lines, EXPORT_BATCH)), watch)
                    if not batch:
                        return
                    yield "".join(batch)
            finally:
                watch.stop("the export's response ended")

        return StreamingResponse(stream(), media_type="application/x-ndjson",
                                 headers={"Content-Disposition": 'attachment; filename="graphsvc-export.jsonl"'})

    async def import_(request: Request) -> JSONResponse:
        authorize("import_file")  # before the upload: a key that may not import sends nothing to disk
        key = key_of(request)
        with tempfile.TemporaryFile(prefix="graphsvc-import-") as spool:
            # The body goes to disk as it arrives (the import reads it in passes), hashed on the way
            # for the idempotency key: never whole in memory.
            digest = hashlib.sha256()
            text = False
            async for chunk in body_chunks(request, limit=MAX_IMPORT_BYTES):
                digest.update(chunk)
                spool.write(chunk)
                text = text or bool(chunk.strip())
            if not text:
                raise BadRequest("the body is empty; send the JSON Lines of an export")
            spool.flush()
            watch = Watch()
            body = await run_watched(lambda: service.import_file(spool, digest.hexdigest(), idempotency=key,
                                                                 watch=watch), watch, request.receive)
        if key is not None and key.replayed:
            return JSONResponse(body, status_code=key.status or 201, headers={REPLAYED_HEADER: "true"})
        return JSONResponse(body, status_code=201)

    async def get_many(request: Request) -> JSONResponse:
        ids = parse(CapsuleIdList, await json_body(request), InvalidInput).ids
        return ok(await call(service.get, ids))

    async def relate(request: Request) -> JSONResponse:
        return await keyed_write(request, service.relate, await json_body(request), status=200)

    async def tombstone(request: Request) -> JSONResponse:
        ids = parse(CapsuleIdList, await json_body(request), InvalidInput).ids
        return await keyed_write(request, service.tombstone, ids, status=200)

    async def get_one(request: Request) -> JSONResponse:
        return ok(await call(_one, service, request.path_params["capsule_id"]))

    async def update(request: Request) -> JSONResponse:
        return await keyed_write(request, service.update, request.path_params["capsule_id"], await json_body(request),
                                 status=200)

    return [
        Route("/v1/capsules", ingest, methods=["POST"]),
        Route("/v1/capsules", list_capsules, methods=["GET"]),
        Route("/v1/capsules/export", export, methods=["GET"]),
        Route("/v1/capsules/import", import_, methods=["POST"]),
        Route("/v1/capsules/get", get_many, methods=["POST"]),
        Route("/v1/capsules/relate", relate, methods=["POST"]),
        Route("/v1/capsules/tombstone", tombstone, methods=["POST"]),
        Route("/v1/capsules/{capsule_id}", get_one, methods=["GET"]),
        Route("/v1/capsules/{capsule_id}", update, methods=["PATCH"]),
    ]
