#!/usr/bin/env bash
# Load test of the cloud API through its full middleware stack, on SQLite
# and (when SVC_TEST_POSTGRES_URL or SVC_BENCH_POSTGRES_URL is set) on
# PostgreSQL, beside a bare echo handler measured in the same run.
# Prints one line per measurement; docs/performance.md records them.
#
#   DURATION=15s CONNS=32 cloud/bench/bench.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

DURATION=${DURATION:-15s}
CONNS=${CONNS:-32}
THREADS=${THREADS:-2}
PG_URL=${SVC_BENCH_POSTGRES_URL:-${SVC_TEST_POSTGRES_URL:-}}

command -v wrk >/dev/null || { echo "bench: wrk is needed (apt-get install wrk)" >&2; exit 1; }

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

go build -o "$tmp/svc-cloud" ./cloud/cmd/svc-cloud
go build -o "$tmp/baseline" ./cloud/bench/baseline

wait_port() {
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "bench: nothing listening on $1" >&2
  exit 1
}

measure() { # label url script
  local label=$1 url=$2 script=$3
  wrk -t"$THREADS" -c"$CONNS" -d2s -s "cloud/bench/$script" "$url" >/dev/null # warm-up
  local out
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency -s "cloud/bench/$script" "$url" | grep '^RESULT')
  printf '%-34s %s\n' "$label" "${out#RESULT }"
}

# The yardstick: a bare echo handler with a fixed body.
"$tmp/baseline" --addr 127.0.0.1:18099 & pids+=($!)
wait_port 18099
KEY="" measure "baseline GET /v1/teams" http://127.0.0.1:18099 get.lua
KEY="none" measure "baseline POST /v1/teams" http://127.0.0.1:18099 post.lua
kill "${pids[0]}"

json_field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }

bench_store() { # name port store-flags...
  local name=$1 port=$2
  shift 2
  local seed key
  seed=$("$tmp/svc-cloud" seed "$@" --plan enterprise --json)
  key=$(echo "$seed" | json_field secret_test)
  local people
  people=$(echo "$seed" | sed -n 's/.*"test":{.*"people":\["\([^"]*\)","\([^"]*\)","\([^"]*\)".*/\1 \2 \3/p')
  set -- $people
  SVC_LOG_LEVEL=warn "$tmp/svc-cloud" serve "${store_flags[@]}" --addr "127.0.0.1:$port" --rate-limits enterprise=1000000000 & pids+=($!)
  wait_port "$port"
  # 30 unarchived teams with three members each, so a page of 25 is full.
  for i in $(seq 1 30); do
    curl -sf -o /dev/null -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
      -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" \
      -d "{\"name\":\"Load team $i\",\"member_ids\":[\"$1\",\"$2\",\"$3\"]}" "http://127.0.0.1:$port/v1/teams"
  done
  KEY=$key BENCH_PATH="/v1/teams?limit=25" measure "$name GET /v1/teams (25 + members)" "http://127.0.0.1:$port" get.lua
  KEY=$key measure "$name POST /v1/teams" "http://127.0.0.1:$port" post.lua
}

store_flags=(--data "$tmp/sqlite")
bench_store sqlite 18100 --data "$tmp/sqlite"

if [ -n "$PG_URL" ]; then
  schema="bench_$$"
  psql -q "$PG_URL" -c "CREATE SCHEMA $schema" >/dev/null
  trap 'psql -q "$PG_URL" -c "DROP SCHEMA IF EXISTS '"$schema"' CASCADE" >/dev/null 2>&1; cleanup' EXIT
  sep='?'; case "$PG_URL" in *\?*) sep='&';; esac
  url="$PG_URL${sep}search_path=$schema"
  store_flags=(--database-url "$url")
  bench_store postgres 18101 --database-url "$url"
else
  echo "postgres: skipped (set SVC_TEST_POSTGRES_URL)"
fi
