#!/usr/bin/env bash
# A throwaway PostgreSQL server for tests and the local cluster: a fresh cluster in a
# directory, on a free loopback port, trusting local connections.
#
#   scripts/postgres.sh start DIR   # prints the server's URL (postgres://trawl@127.0.0.1:PORT/trawl)
#   scripts/postgres.sh stop DIR    # stops it (DIR can then be removed)
#
# `start` on a DIR whose server was stopped starts it again, on the same port, with its data.
#
# Installs Debian's `postgresql` package when no server is installed. The server runs as the
# `postgres` user when this script runs as root (PostgreSQL refuses to run as root).
set -euo pipefail
command="${1:-}"
dir="${2:-}"
if [ -z "$command" ] || [ -z "$dir" ]; then
  echo "usage: $0 start|stop DIR" >&2
  exit 2
fi

bin_dir() {
  local found
  found="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
  if [ -z "$found" ] || [ ! -x "$found/initdb" ]; then
    return 1
  fi
  echo "$found"
}

as_server_user() {
  if [ "$(id -u)" = "0" ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

case "$command" in
  start)
    if ! bin="$(bin_dir)"; then
      echo "postgres.sh: installing postgresql" >&2
      export DEBIAN_FRONTEND=noninteractive
      { apt-get install -y -q postgresql || { apt-get update -q && apt-get install -y -q postgresql; }; } >/dev/null
      bin="$(bin_dir)"
    fi
    mkdir -p "$dir"
    if [ "$(id -u)" = "0" ]; then
      chown postgres: "$dir"
      if ! runuser -u postgres -- test -w "$dir"; then
        echo "postgres.sh: the postgres user cannot reach $dir (a parent directory is private); use a directory under /tmp" >&2
        exit 1
      fi
    fi
    fresh=0
    if [ ! -f "$dir/port" ]; then
      fresh=1
      python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' >"$dir/port"
      as_server_user "$bin/initdb" -D "$dir/data" -U trawl --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1
    fi
    port="$(cat "$dir/port")"
    as_server_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c fsync=off -c max_connections=200" \
      start >/dev/null
    if [ "$fresh" = "1" ]; then
      as_server_user "$bin/createdb" -h 127.0.0.1 -p "$port" -U trawl trawl
    fi
    echo "postgres://trawl@127.0.0.1:$port/trawl"
    ;;
  stop)
    if bin="$(bin_dir)" && [ -d "$dir/data" ]; then
      as_server_user "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    ;;
  *)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
