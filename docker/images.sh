#!/usr/bin/env bash
# Images for the container-backed tests, built here from Debian packages and Maven Central jars
# (this machine reaches no image registry), each cached under a tag keyed by a hash of its inputs.
#
#   docker/images.sh base      debootstrap bookworm minbase (+ python3, python3-venv, ca-certificates),
#                              `docker import`ed once as graphsvc-base:<key>
#   docker/images.sh neo4j     graphsvc-neo4j:5.26.30-<key>: the base + Debian's OpenJDK 17 + the same
#                              Neo4j jars `graphsvc neo4j start` runs (copied from ~/.cache/graphsvc)
#   docker/images.sh service   graphsvc:local from docker/Dockerfile with BASE_IMAGE=the local base
#   docker/images.sh all       the three; prints `export GRAPHSVC_*_IMAGE=...` lines on stdout
#
# Needs DOCKER_HOST pointing at the project's engine (docker/engine.sh). A laptop with Docker Hub
# needs none of this: the official neo4j:5.26-community and python:3.11-slim are used there.
# Every build runs with --network host (the engine has no bridge). Any failure exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE=bookworm
MIRROR=${GRAPHSVC_DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE_INCLUDE=python3,python3-venv,ca-certificates
WORK=${XDG_CACHE_HOME:-$HOME/.cache}/graphsvc/docker-build
export DOCKER_BUILDKIT=0  # the classic builder: Debian's dockerd 20.10, no buildx plugin here

die() { echo "docker/images.sh: $*" >&2; exit 1; }
say() { echo "[images] $*" >&2; }
have() { docker image inspect "$1" >/dev/null 2>&1; }
key() { sha256sum | cut -c1-12; }

drop_older() {  # repository, tag to keep: untag superseded builds (their inputs changed), then dangling layers
    docker image ls --format '{{.Repository}}:{{.Tag}}' "$1" | grep -vxF "$2" | xargs -r docker image rm >/dev/null 2>&1 || true
    docker image prune -f >/dev/null 2>&1 || true
}

base() {
    local k tag
    k=$( { printf '%s\n' "$SUITE" "$MIRROR" "$BASE_INCLUDE" minbase; sed -n '/^base()/,/^}/p' "$0";
           cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true; } | key)
    tag=graphsvc-base:$SUITE-$k
    if have "$tag"; then say "base image $tag reused"; echo "$tag"; return; fi
    command -v debootstrap >/dev/null || die "debootstrap is missing (docker/engine.sh up installs it)"
    local began=$SECONDS rootfs=$WORK/rootfs-$k
    rm -rf "$rootfs"; mkdir -p "$rootfs"
    say "debootstrap $SUITE minbase into $rootfs (cold: a few minutes)"
    debootstrap --variant=minbase --include="$BASE_INCLUDE" "$SUITE" "$rootfs" "$MIRROR" \
        >"$WORK/debootstrap-$k.log" 2>&1 || { tail -n 20 "$WORK/debootstrap-$k.log" >&2; die "debootstrap failed"; }
    # Same apt sources as this machine (main + updates + security), and a lean apt.
    cat >"$rootfs/etc/apt/sources.list" <<SRC
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb ${MIRROR%/debian}/debian-security $SUITE-security main
SRC
    # This machine's own extra CAs (a TLS-inspecting egress proxy here, none on most laptops): the
    # image trusts what the host trusts, and pip uses the system bundle (not its own certifi copy).
    if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
        cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
        chroot "$rootfs" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates failed in the rootfs"
        printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$rootfs/etc/pip.conf"
    fi
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' >"$rootfs/etc/apt/apt.conf.d/90graphsvc"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | docker import \
        -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
        -c 'CMD ["bash"]' -m "debootstrap $SUITE minbase +$BASE_INCLUDE" - "$tag" >/dev/null \
        || die "docker import of the base rootfs failed"
    rm -rf "$rootfs"
    drop_older graphsvc-base "$tag"
    say "base image $tag built in $((SECONDS - began)) s"
    echo "$tag"
}

neo4j() {
    local base_tag=$1 version lib k tag
    version=$(.venv/bin/python -c 'from graphsvc.neo4j_local import NEO4J_VERSION; print(NEO4J_VERSION)')
    # The jars `graphsvc neo4j start` runs: fetched once into ~/.cache/graphsvc (mvn), reused here.
    lib=$(.venv/bin/python -c 'from graphsvc.neo4j_local import LocalNeo4j; print(LocalNeo4j().install())') \
        || die "the Neo4j jars could not be fetched (graphsvc.neo4j_local)"
    k=$( { docker image inspect -f '{{.Id}}' "$base_tag"; (cd "$lib" && ls -l --time-style=+ . | awk '{print $5, $NF}');
           cat docker/neo4j/*; } | key)
    tag=graphsvc-neo4j:$version-$k
    if have "$tag"; then say "Neo4j image $tag reused"; echo "$tag"; return; fi
    local began=$SECONDS ctx=$WORK/neo4j-context
    rm -rf "$ctx"; mkdir -p "$ctx"
    cp docker/neo4j/* "$ctx/"
    cp -rl "$lib" "$ctx/lib" 2>/dev/null || cp -r "$lib" "$ctx/lib"  # hard links when on one file system
    say "building $tag (OpenJDK 17 from Debian + $(ls "$lib" | wc -l) jars)"
    docker build --network host --force-rm --build-arg BASE_IMAGE="$base_tag" -t "$tag" "$ctx" >"$WORK/build-neo4j.log" 2>&1 \
        || { tail -n 30 "$WORK/build-neo4j.log" >&2; die "the Neo4j image build failed (log above, $WORK/build-neo4j.log)"; }
    rm -rf "$ctx"
    drop_older graphsvc-neo4j "$tag"
    say "Neo4j image $tag built in $((SECONDS - began)) s"
    echo "$tag"
}

service() {
    local base_tag=$1 tag=graphsvc:local began=$SECONDS
    # docker's own layer cache makes the warm build fast (the dependency layer is keyed by pyproject.toml).
    docker build --network host --force-rm --build-arg BASE_IMAGE="$base_tag" -f docker/Dockerfile -t "$tag" . \
        >"$WORK/build-service.log" 2>&1 \
        || { tail -n 30 "$WORK/build-service.log" >&2; die "the service image build failed (log above, $WORK/build-service.log)"; }
    docker image prune -f >/dev/null 2>&1 || true  # the previous graphsvc:local, now untagged
    say "service image $tag built in $((SECONDS - began)) s (from $base_tag)"
    echo "$tag"
}

docker version --format '{{.Server.Version}}' >/dev/null 2>&1 \
    || die "no Docker engine answers at ${DOCKER_HOST:-the default socket} (start it: make docker-up)"
mkdir -p "$WORK"
case "${1:-all}" in
    base) base ;;
    neo4j) neo4j "$(base)" ;;
    service) service "$(base)" ;;
    all)
        b=$(base); n=$(neo4j "$b"); s=$(service "$b")
        echo "export GRAPHSVC_BASE_IMAGE=$b GRAPHSVC_NEO4J_IMAGE=$n GRAPHSVC_SERVICE_IMAGE=$s" ;;
    *) die "usage: $0 base|neo4j|service|all" ;;
esac
