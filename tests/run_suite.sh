#!/usr/bin/env bash
# `make test`: the whole suite, in three steps, each a pytest session of its own.
#
#   1. local      the docs (mkdocs build --strict), then everything but the container-backed files,
#                 with Neo4j found as always
#                 (NEO4J_URI -> testcontainers if an engine answers -> the local `test` instance)
#   2. container  the store, bootstrap and outage tests against a testcontainers-managed Neo4j
#   3. compose    docker/compose.yaml up (Neo4j + service, healthchecked), a real pack, down
#
# Steps 2 and 3 need a Docker engine. GRAPHSVC_DOCKER picks it:
#   auto (default)  an engine that already answers (DOCKER_HOST or the default socket: a laptop's
#                   Docker, official images from Docker Hub); else `own`
#   own             the project's engine (docker/engine.sh: own socket, started here and stopped on
#                   exit when started here) with the images built here (docker/images.sh)
#   off             skip steps 2 and 3 (says so; for a machine that cannot run Docker at all)
# Only steps 2 and 3 see DOCKER_HOST; step 1 runs in the caller's environment. An engine that cannot
# start, an image that cannot be built: a message and a non-zero exit, never a quiet fallback.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
CONTAINER_TESTS=(tests/integration/test_store_*.py tests/integration/test_bootstrap_*.py tests/integration/test_outage.py)
timings=()
status=0

clock() { date +%s; }
note() { timings+=("$(printf '%-34s %5ss' "$1" "$2")"); }
pytest_step() {  # name, args...: exit code 5 (nothing collected) is not a failure
    local name=$1; shift
    local began; began=$(clock)
    "$@"; local rc=$?
    [ $rc = 5 ] && rc=0
    note "$name" $(( $(clock) - began ))
    [ $rc = 0 ] || { echo "== $name: FAILED (pytest exit $rc)" >&2; status=1; }
}

# GRAPHSVC_SUITE_STEPS="2 3" (`make test-docker`) runs only the Docker steps.
steps=" ${GRAPHSVC_SUITE_STEPS:-1 2 3} "
ignores=()
for f in "${CONTAINER_TESTS[@]}"; do ignores+=(--ignore "$f"); done
if [[ $steps == *" 1 "* ]]; then
    # The docs first: a broken link, a missing anchor or a page left out of mkdocs.yml's nav fails here.
    echo "== docs: mkdocs build --strict"
    began=$(clock)
    site=$(mktemp -d)
    .venv/bin/mkdocs build --strict --quiet --site-dir "$site" || { echo "== docs: FAILED (mkdocs build --strict)" >&2; status=1; }
    rm -rf "$site"
    note "docs build" $(( $(clock) - began ))
    echo "== step 1/3: unit, integration (except the container-backed files) and e2e tests"
    pytest_step "local suite" $PY -m pytest -q "${ignores[@]}" --ignore tests/docker "$@"
fi

mode=${GRAPHSVC_DOCKER:-auto}
if [ "$mode" = off ]; then
    echo "== GRAPHSVC_DOCKER=off: the container-backed tests and the compose test did NOT run" >&2
    printf '%s\n' "${timings[@]}"; exit $status
fi
if [ "$mode" = auto ]; then
    if $PY -c 'import sys; from tests.neo4j_containers import docker_answers; sys.exit(0 if docker_answers() else 1)'; then
        mode=existing
    else
        mode=own
    fi
fi

export GRAPHSVC_REQUIRE_DOCKER=1
if [ "$mode" = own ]; then
    # No registry for testcontainers' reaper image here; the fixtures remove their containers themselves.
    export TESTCONTAINERS_RYUK_DISABLED=${TESTCONTAINERS_RYUK_DISABLED:-true}
    began=$(clock)
    owned=$(docker/engine.sh up) || { echo "== the project's Docker engine did not start (see above)" >&2; exit 1; }
    note "engine start ($owned)" $(( $(clock) - began ))
    if [ "$owned" = started ]; then
        trap 'b=$(clock); docker/engine.sh down; echo "engine stop: $(( $(clock) - b ))s"' EXIT
    fi
    eval "$(docker/engine.sh env)"  # DOCKER_HOST for steps 2 and 3 only (this script's own environment)
    began=$(clock)
    images=$(docker/images.sh all) || { echo "== building the local images failed (see above)" >&2; exit 1; }
    eval "$images"
    note "images (base, Neo4j, service)" $(( $(clock) - began ))
    echo "== local images: $GRAPHSVC_BASE_IMAGE, $GRAPHSVC_NEO4J_IMAGE, $GRAPHSVC_SERVICE_IMAGE"
else
    echo "== using the Docker engine at ${DOCKER_HOST:-the default socket} (official images unless GRAPHSVC_NEO4J_IMAGE is set)"
fi

if [[ $steps == *" 2 "* ]]; then
    echo "== step 2/3: store, bootstrap and outage tests against a testcontainers Neo4j"
    pytest_step "container-backed tests" env -u NEO4J_URI $PY -m pytest -q "${CONTAINER_TESTS[@]}" "$@"
fi
if [[ $steps == *" 3 "* ]]; then
    echo "== step 3/3: the compose stack"
    pytest_step "compose test" env -u NEO4J_URI $PY -m pytest -q -s tests/docker "$@"
fi

echo "== timings"
printf '  %s\n' "${timings[@]}"
exit $status
