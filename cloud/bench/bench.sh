#!/usr/bin/env bash
# Load test of the cloud API through its full middleware stack, on SQLite
# and (when SVC_TEST_POSTGRES_URL or SVC_BENCH_POSTGRES_URL is set) on
# PostgreSQL, beside a bare echo handler measured in the same run: GET and
# POST /teams, POST /visits (each with its own visitor, then all with one),
# and check-in, each request on a visit the POST /visits runs made.
# Prints one line per measurement; docs/performance.md records them.
#
#   DURATION=15s CONNS=32 cloud/bench/bench.sh
#
# BENCH_STORES (sqlite,postgres) and BENCH_TARGETS (teams,visits,checkin,
# onevisitor) narrow a run to the stores and rows named; the bare handler
# is measured in every run.
#
# BENCH_SITES=N (1) spreads the POST /v1/visits rows over N test-mode
# sites, the seed's first and N-1 made through the API, each request at
# the next. Every write at a site takes the site's feed head until its
# commit, so 1 is the most one site's writes contend; N shows what that
# contention costs.
#
# BENCH_PROFILE_DIR=DIR serves with --pprof and saves a CPU profile of
# svc-cloud serve over each measured run in DIR (STORE-TARGET.pprof, for
# go tool pprof); profiling costs CPU, so its figures are not the plain
# run's.
#
# BENCH_AGAINST=DIR, a work tree of another commit (the issue's base, say),
# measures POST /v1/visits against that tree's svc-cloud on each store of
# BENCH_STORES instead of the rows above: BENCH_ROUNDS rounds (10) each
# measure both trees, each run on a new store, in the order AB, BA, AB...,
# so that drift in what else the machine runs falls on both alike. It
# prints each run, then each round's ratio (this tree's requests/s over the
# other's) and their mean with a 95% interval.
#
# Each line ends with cpu_ms_per_req: the CPU time (user and system) the
# server process used over the measured run, divided by the requests wrk
# completed in it. It counts the server's own work whatever else runs on
# the machine, where requests/s falls with the load. Then rss_peak_mib:
# the server's peak resident memory since it started (VmHWM), which
# covers every run of the store so far, so GOGC's cost in memory is
# beside its gain in CPU.
set -euo pipefail
cd "$(dirname "$0")/../.."

DURATION=${DURATION:-15s}
CONNS=${CONNS:-32}
THREADS=${THREADS:-2}
PG_URL=${SVC_BENCH_POSTGRES_URL:-${SVC_TEST_POSTGRES_URL:-}}
BENCH_STORES=${BENCH_STORES:-sqlite,postgres}
BENCH_TARGETS=${BENCH_TARGETS:-teams,visits,checkin,onevisitor}
BENCH_PROFILE_DIR=${BENCH_PROFILE_DIR:-}
BENCH_AGAINST=${BENCH_AGAINST:-}
BENCH_ROUNDS=${BENCH_ROUNDS:-10}
ADMIN=${ADMIN:-}
SERVER_PID= # the process measure charges CPU time to

wanted() { # list item: whether the comma-separated list names item
  case ",$1," in *",$2,"*) return 0 ;; esac
  return 1
}

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
[ -z "$BENCH_AGAINST" ] || go build -C "$BENCH_AGAINST" -o "$tmp/svc-cloud-against" ./cloud/cmd/svc-cloud
go build -o "$tmp/baseline" ./cloud/bench/baseline

# stop_server pid: stops a server this script started, and forgets it, so
# that the cleanup never signals a number the system has given another
# process since.
stop_server() {
  local p keep=()
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  pids=("${keep[@]}")
}

wait_port() {
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "bench: nothing listening on $1" >&2
  exit 1
}

# settle runs between a warm-up and the measured run: on PostgreSQL it
# analyzes the bench schema (see analyze_schema below).
settle() { :; }

# cpu_ticks pid: the process's user and system time so far, in clock ticks.
cpu_ticks() {
  local stat
  stat=$(cat "/proc/$1/stat")
  stat=${stat##*) } # past the command's name, which may hold spaces
  set -- $stat
  echo $((${12} + ${13})) # utime and stime, fields 14 and 15 of the whole line
}

# cpu_per_req ticks-before out: the RESULT line out with the server's CPU
# milliseconds per request since ticks-before appended.
cpu_per_req() {
  local before=$1 out=$2 n
  n=$(sed -n 's/.* requests=\([0-9]*\).*/\1/p' <<<"$out")
  awk -v t=$(($(cpu_ticks "$SERVER_PID") - before)) -v hz="$(getconf CLK_TCK)" -v n="$n" -v out="$out" \
    'BEGIN { printf "%s cpu_ms_per_req=%.3f", out, (n > 0 ? t * 1000 / hz / n : 0) }'
  awk '/^VmHWM:/ { printf " rss_peak_mib=%.1f\n", $2 / 1024 }' "/proc/$SERVER_PID/status"
}

measure() { # label url script
  local label=$1 url=$2 script=$3
  wrk -t"$THREADS" -c"$CONNS" -d2s -s "cloud/bench/$script" "$url" >/dev/null # warm-up
  settle
  local out prof="" ticks
  if [ -n "$BENCH_PROFILE_DIR" ] && [ -n "$ADMIN" ]; then
    local name=${label//[^A-Za-z0-9]/-}
    curl -sf -o "$BENCH_PROFILE_DIR/$name.pprof" "http://$ADMIN/debug/pprof/profile?seconds=$(( $(seconds "$DURATION") - 1 ))" & prof=$!
  fi
  ticks=$(cpu_ticks "$SERVER_PID")
  out=$(wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency -s "cloud/bench/$script" "$url" | grep '^RESULT')
  out=$(cpu_per_req "$ticks" "$out")
  [ -z "$prof" ] || wait "$prof"
  printf '%-40s %s\n' "$label" "${out#RESULT }"
}

seconds() { # a wrk duration (15, 15s, 2m) in seconds
  case $1 in
    *m) echo $((${1%m} * 60)) ;;
    *s) echo "${1%s}" ;;
    *) echo "$1" ;;
  esac
}

# make_visits url ids-dir seconds: POST /visits for that long, unmeasured,
# appending the new visits' IDs to ids-dir.
make_visits() {
  IDS_DIR=$2 wrk -t"$THREADS" -c"$CONNS" -d"$3s" -s cloud/bench/visits.lua "$1" >/dev/null
}

# measure_checkin label url ids-dir: like measure, for check-in. A visit
# checks in once, so each run (the warm-up, then the measured one) walks its
# own slice of the IDs made so far, and every ID is handed out at most once.
# checkin.lua stops a thread that runs out and says ran_out=1, which would
# understate the rate: then more visits are made and the measurement is
# repeated.
measure_checkin() {
  local label=$1 url=$2 ids=$3 dur total n warm out attempt ticks
  dur=$(seconds "$DURATION")
  total=$((dur + 2))
  # The POST /visits runs made as many visits as a check-in run of the same
  # length needs if check-in is no faster; as many again leaves room for a
  # check-in up to twice as fast.
  make_visits "$url" "$ids" "$total"
  for attempt in 1 2 3; do
    cat "$ids"/*.ids >"$tmp/pool"
    rm -f "$ids"/*.ids
    n=$(wc -l <"$tmp/pool")
    warm=$((n * 2 / total)) # the warm-up's share of the time
    head -n "$warm" "$tmp/pool" >"$tmp/pool.warm"
    tail -n +"$((warm + 1))" "$tmp/pool" >"$tmp/pool.run"
    IDS=$tmp/pool.warm THREADS=$THREADS wrk -t"$THREADS" -c"$CONNS" -d2s -s cloud/bench/checkin.lua "$url" >/dev/null
    settle
    ticks=$(cpu_ticks "$SERVER_PID")
    out=$(IDS=$tmp/pool.run THREADS=$THREADS wrk -t"$THREADS" -c"$CONNS" -d"$DURATION" --latency -s cloud/bench/checkin.lua "$url" | grep '^RESULT')
    out=$(cpu_per_req "$ticks" "$out")
    case $out in *ran_out=0*) break ;; esac
    [ "$attempt" = 3 ] && break
    echo "bench: $label ran out of its $((n - warm)) visits; making more" >&2
    make_visits "$url" "$ids" $((total * 3 * attempt))
  done
  printf '%-40s %s\n' "$label" "${out#RESULT }"
}

# The yardstick: a bare echo handler with a fixed body.
"$tmp/baseline" --addr 127.0.0.1:18099 & pids+=($!)
SERVER_PID=$!
wait_port 18099
KEY="" measure "baseline GET /v1/teams" http://127.0.0.1:18099 get.lua
KEY="none" measure "baseline POST /v1/teams" http://127.0.0.1:18099 post.lua
stop_server "$SERVER_PID"

json_field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }

# start_store bin port store-flags...: seeds a store with the svc-cloud at
# bin and serves it on port; sets SERVER_PID, and SEED to the seed's JSON.
start_store() {
  local bin=$1 port=$2
  shift 2
  SEED=$("$bin" seed "$@" --plan enterprise --json)
  local admin=(--metrics-listen "127.0.0.1:$((port + 100))")
  if [ -n "$BENCH_PROFILE_DIR" ]; then
    mkdir -p "$BENCH_PROFILE_DIR"
    admin+=(--pprof)
    ADMIN=127.0.0.1:$((port + 100))
  fi
  SVC_LOG_LEVEL=warn "$bin" serve "$@" "${admin[@]}" --addr "127.0.0.1:$port" --mqtt-listen 127.0.0.1:0 --mqtt-tls-listen 127.0.0.1:0 --rate-limits enterprise=1000000000 & pids+=($!)
  SERVER_PID=$!
  wait_port "$port"
}

# seed_people: the seed's first three test-mode people, space-separated.
seed_people() {
  echo "$SEED" | sed -n 's/.*"test":{.*"people":\["\([^"]*\)","\([^"]*\)","\([^"]*\)".*/\1 \2 \3/p'
}

# seed_site: the seed's first test-mode site.
seed_site() { echo "$SEED" | sed -n 's/.*"test":{"sites":\[{"id":"\([^"]*\)".*/\1/p'; }

bench_store() { # name port store-flags...
  local name=$1 port=$2
  shift 2
  start_store "$tmp/svc-cloud" "$port" "$@"
  local key
  key=$(echo "$SEED" | json_field secret_test)
  set -- $(seed_people)
  # 30 unarchived teams with three members each, so a page of 25 is full.
  wanted "$BENCH_TARGETS" teams && for i in $(seq 1 30); do
    curl -sf -o /dev/null -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
      -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" \
      -d "{\"name\":\"Load team $i\",\"member_ids\":[\"$1\",\"$2\",\"$3\"]}" "http://127.0.0.1:$port/v1/teams"
  done
  if wanted "$BENCH_TARGETS" teams; then
    KEY=$key BENCH_PATH="/v1/teams?limit=25" measure "$name GET /v1/teams (25 + members)" "http://127.0.0.1:$port" get.lua
    KEY=$key measure "$name POST /v1/teams" "http://127.0.0.1:$port" post.lua
  fi

  # Visits: meetings at the first test-mode site (and BENCH_SITES-1 more),
  # hosted by the first person (the seed's seventh, and every seventh after,
  # is inactive).
  local site ids=$tmp/ids.$name
  site=$(seed_site)
  for i in $(seq 2 "${BENCH_SITES:-1}"); do
    site=$site,$(curl -sf -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
      -H "Idempotency-Key: $(cat /proc/sys/kernel/random/uuid)" \
      -d "{\"name\":\"Load site $i\",\"timezone\":\"Europe/London\"}" "http://127.0.0.1:$port/v1/sites" | grep -o '"id":"site_[^"]*"' | head -1 | cut -d'"' -f4)
  done
  mkdir -p "$ids"
  export KEY=$key SITE=$site HOST=$1
  wanted "$BENCH_TARGETS" visits && IDS_DIR=$ids measure "$name POST /v1/visits" "http://127.0.0.1:$port" visits.lua
  wanted "$BENCH_TARGETS" checkin && measure_checkin "$name POST /v1/visits/{id}/check-in" "http://127.0.0.1:$port" "$ids"
  wanted "$BENCH_TARGETS" onevisitor && EMAIL=fixed measure "$name POST /v1/visits (one visitor)" "http://127.0.0.1:$port" visits.lua
  unset KEY SITE HOST
}

# The PostgreSQL runs each use a schema of their own (new_schema), which
# the cleanup drops once the servers have stopped: requests still in
# flight would find it gone.
schemas=()
trap 'cleanup; for s in "${schemas[@]}"; do psql -q "$PG_URL" -c "DROP SCHEMA IF EXISTS $s CASCADE" >/dev/null 2>&1; done' EXIT

# new_schema name: creates the schema and sets schema, and url to PG_URL
# with it as the search path.
new_schema() {
  schema=$1
  psql -q "$PG_URL" -c "CREATE SCHEMA $schema" >/dev/null
  schemas+=("$schema")
  local sep='?'
  case "$PG_URL" in *\?*) sep='&' ;; esac
  url="$PG_URL${sep}search_path=$schema"
}

# The tables start empty and grow by thousands of rows a run. Where
# autovacuum is off (as on the development machine) nothing would ever
# analyze them, and the planner, still believing them empty, reads the
# visit's visitor by scanning the tenant's whole visitors index: about
# 4 ms per read at 8,500 visitors, and slower as the run adds more.
# Analyzing after each warm-up stands in for autovacuum; it touches only
# the run's schema. SVC_BENCH_ANALYZE=0 leaves it out.
analyze_schema() {
  psql -q "$PG_URL" -c "DO \$\$DECLARE t text; BEGIN
    FOR t IN SELECT format('%I.%I', schemaname, tablename) FROM pg_tables WHERE schemaname = '$schema' LOOP
      EXECUTE 'ANALYZE ' || t;
    END LOOP; END\$\$" >/dev/null
}
postgres_settle() { if [ "${SVC_BENCH_ANALYZE:-1}" != 0 ]; then settle() { analyze_schema; }; fi; }

# versus store: BENCH_AGAINST's rounds on store (sqlite or postgres; see
# the top). Each run is on a store of its own, seeded and served just
# before it: the faster tree's would otherwise grow faster, and its
# inserts slow with it.
versus() {
  local store=$1 r side order out flags ratios=()
  local -A got
  for r in $(seq 1 "$BENCH_ROUNDS"); do
    if ((r % 2)); then order="this against"; else order="against this"; fi
    for side in $order; do
      if [ "$store" = postgres ]; then
        new_schema "bench_$$_${side}_$r"
        flags=(--database-url "$url")
      else
        flags=(--data "$tmp/sqlite-$side-$r")
      fi
      start_store "$tmp/svc-cloud$([ $side = this ] || echo -against)" 18100 "${flags[@]}"
      mkdir -p "$tmp/ids.$side"
      out=$(KEY=$(echo "$SEED" | json_field secret_test) SITE=$(seed_site) HOST=$(seed_people | cut -d' ' -f1) IDS_DIR=$tmp/ids.$side \
        measure "$store round $r $side POST /v1/visits" http://127.0.0.1:18100 visits.lua)
      echo "$out"
      got[$side]=$(sed -n 's/.* rps=\([0-9]*\).*/\1/p' <<<"$out")
      stop_server "$SERVER_PID"
      rm -rf "$tmp/sqlite-$side-$r" "$tmp/ids.$side"
      [ "$store" != postgres ] || psql -q "$PG_URL" -c "SET client_min_messages = warning; DROP SCHEMA $schema CASCADE" >/dev/null
    done
    ratios+=("$(awk -v a="${got[this]}" -v b="${got[against]}" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')")
    echo "$store round $r ratio=${ratios[-1]}"
  done
  # The mean of the rounds' ratios, and its 95% interval by Student's t
  # (two-sided, n-1 degrees of freedom; past 30, 2.0).
  printf '%s\n' "${ratios[@]}" | awk -v store="$store" '
    { x[NR] = $1; s += $1 }
    END {
      n = NR; m = s / n
      for (i = 1; i <= n; i++) v += (x[i] - m) ^ 2
      split("12.71 4.30 3.18 2.78 2.57 2.45 2.36 2.31 2.26 2.23 2.20 2.18 2.16 2.14 2.13 2.12 2.11 2.10 2.09 2.09 2.08 2.07 2.07 2.06 2.06 2.06 2.05 2.05 2.05", t, " ")
      h = n > 1 ? (n - 1 <= 29 ? t[n - 1] : 2.0) * sqrt(v / (n - 1) / n) : 0
      printf "%s versus rounds=%d ratio_mean=%.3f ci95_low=%.3f ci95_high=%.3f\n", store, n, m, m - h, m + h
    }'
}

if wanted "$BENCH_STORES" sqlite; then
  if [ -n "$BENCH_AGAINST" ]; then versus sqlite; else bench_store sqlite 18100 --data "$tmp/sqlite"; fi
fi

if ! wanted "$BENCH_STORES" postgres; then
  :
elif [ -n "$PG_URL" ]; then
  postgres_settle
  if [ -n "$BENCH_AGAINST" ]; then
    versus postgres
  else
    new_schema "bench_$$"
    bench_store postgres 18101 --database-url "$url"
  fi
else
  echo "postgres: skipped (set SVC_TEST_POSTGRES_URL)"
fi
