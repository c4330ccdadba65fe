#!/usr/bin/env bash
# The project's own Docker engine, on its own socket (never /var/run/docker.sock).
#
#   docker/engine.sh up      install docker.io (+ debootstrap, docker-compose) when missing, start dockerd
#   docker/engine.sh down    stop the dockerd this project started (its pid file), nothing else
#   docker/engine.sh status  say whether it answers
#   docker/engine.sh env     print `export DOCKER_HOST=...` for a shell
#
# Why its own socket: tests/conftest.py takes a testcontainers Neo4j whenever a Docker engine answers
# on the default socket, so a daemon there would switch every other checkout on this machine to
# containers. Ours answers only to whoever is given DOCKER_HOST=unix://$GRAPHSVC_DOCKER_RUN/docker.sock.
#
# The daemon: no bridge, no iptables, overlay2, data root under ~/.cache/graphsvc/docker. Containers
# run with --network host only. `up` prints "started" or "reused" on its last line so callers know
# whether they own it (the test target stops it only when it started it).
set -euo pipefail

RUN_DIR=${GRAPHSVC_DOCKER_RUN:-/run/graphsvc-docker}
DATA_ROOT=${GRAPHSVC_DOCKER_DATA:-${XDG_CACHE_HOME:-$HOME/.cache}/graphsvc/docker}
SOCK=$RUN_DIR/docker.sock
PIDFILE=$RUN_DIR/dockerd.pid
LOG=$RUN_DIR/dockerd.log
export DOCKER_HOST=unix://$SOCK

die() { echo "docker/engine.sh: $*" >&2; exit 1; }

answers() { docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

install_missing() {
    local missing=()
    command -v dockerd >/dev/null || missing+=(docker.io)
    command -v docker >/dev/null || missing+=(docker.io)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || missing+=(docker-compose)
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" = 0 ] || die "missing ${missing[*]}; install them (apt-get install ${missing[*]}) or run as root"
    echo "installing ${missing[*]} (apt-get)" >&2
    # Never let the package start a system dockerd on the default socket: a policy-rc.d that refuses
    # service starts (only when none is there already; removed again afterwards).
    local own_policy=no
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && own_policy=yes
    fi
    local rc=0
    { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        -o DPkg::Lock::Timeout=600 "${missing[@]}"; } >"$RUN_DIR/apt.log" 2>&1 || rc=$?
    [ $own_policy = yes ] && rm -f /usr/sbin/policy-rc.d
    [ $rc = 0 ] || { tail -n 20 "$RUN_DIR/apt.log" >&2; die "apt-get install ${missing[*]} failed (exit $rc)"; }
}

our_pid() {
    [ -f "$PIDFILE" ] || return 1
    local pid; pid=$(cat "$PIDFILE")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = dockerd ] || return 1
    echo "$pid"
}

up() {
    mkdir -p "$RUN_DIR" "$DATA_ROOT"
    if our_pid >/dev/null && answers; then
        echo "dockerd (pid $(our_pid)) already answers on $SOCK" >&2
        echo reused; return 0
    fi
    install_missing
    [ "$(id -u)" = 0 ] || die "dockerd needs root"
    local began=$SECONDS
    # Everything of this daemon lives under RUN_DIR / DATA_ROOT: socket, pid file, exec root
    # (its supervised containerd too), images and containers.
    setsid dockerd \
        --host "unix://$SOCK" --pidfile "$PIDFILE" \
        --exec-root "$RUN_DIR/exec" --data-root "$DATA_ROOT" \
        --storage-driver=overlay2 --iptables=false --ip6tables=false --bridge=none \
        >"$LOG" 2>&1 </dev/null &
    local pid=$!
    for _ in $(seq 1 120); do
        if answers; then
            echo "dockerd (pid $pid) answers on $SOCK after $((SECONDS - began)) s (data root $DATA_ROOT, log $LOG)" >&2
            echo started; return 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    tail -n 30 "$LOG" >&2 || true
    kill "$pid" 2>/dev/null || true
    die "dockerd did not answer on $SOCK within 60 s (log above, $LOG)"
}

down() {
    local pid
    if ! pid=$(our_pid); then
        echo "no dockerd of this project is running (pid file $PIDFILE)" >&2; return 0
    fi
    # Containers first (host networking: a container left behind would keep its ports).
    local ids; ids=$(docker ps -q 2>/dev/null || true)
    [ -n "$ids" ] && docker stop -t 10 $ids >/dev/null 2>&1 || true
    kill -TERM "$pid"
    for _ in $(seq 1 60); do
        kill -0 "$pid" 2>/dev/null || { echo "dockerd (pid $pid) stopped" >&2; return 0; }
        sleep 0.5
    done
    echo "dockerd (pid $pid) still running after 30 s; sending SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    status) if our_pid >/dev/null && answers; then echo "running (pid $(our_pid), $SOCK)"; else echo "not running"; exit 1; fi ;;
    env) echo "export DOCKER_HOST=$DOCKER_HOST" ;;
    *) echo "usage: $0 up|down|status|env" >&2; exit 2 ;;
esac
