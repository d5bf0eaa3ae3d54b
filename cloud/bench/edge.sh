#!/usr/bin/env bash
# Load test of the edge–cloud sync and the appliance (issue 4): the
# cross-built svc-edge's size, the gate decision benchmark, change
# propagation cloud → edge, svc-edge's memory and cold start with a cache of
# N visits, and the drain of N queued facts after an outage. SQLite always;
# PostgreSQL when SVC_TEST_POSTGRES_URL (or SVC_BENCH_POSTGRES_URL) is set;
# the embedded broker always, and an external one (Mosquitto) when
# SVC_TEST_MQTT_URL (or SVC_BENCH_MQTT_URL) is set, which the drain then
# goes through. Prints RESULT lines; docs/performance.md records them.
#
#   N=100000 SCENARIOS="size gate propagation memory drain" cloud/bench/edge.sh
#
# PRELOAD=100000 runs the propagation with that many visits in the edge's
# cache already.
set -euo pipefail
cd "$(dirname "$0")/../.."

N=${N:-100000}
RATE=${RATE:-50}
DURATION=${DURATION:-20s}
PRELOAD=${PRELOAD:-0}
RUNS=${RUNS:-3}
SCENARIOS=${SCENARIOS:-size gate propagation memory drain}
PG_URL=${SVC_BENCH_POSTGRES_URL:-${SVC_TEST_POSTGRES_URL:-}}
MQTT_URL=${SVC_BENCH_MQTT_URL:-${SVC_TEST_MQTT_URL:-}}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/edgesync" ./cloud/bench/edgesync
go build -o "$tmp/svc-edge" ./edge/cmd/svc-edge

stores=(sqlite)
if [ -n "$PG_URL" ]; then stores+=("$PG_URL"); else echo "postgres: skipped (set SVC_TEST_POSTGRES_URL)" >&2; fi
brokers=(embedded)
if [ -n "$MQTT_URL" ]; then brokers+=("$MQTT_URL"); else echo "mosquitto: skipped (set SVC_TEST_MQTT_URL)" >&2; fi
drain_broker=${MQTT_URL:-embedded}

for s in $SCENARIOS; do
  case $s in
  size)
    CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -o "$tmp/svc-edge-arm64" ./edge/cmd/svc-edge
    CGO_ENABLED=0 GOOS=linux GOARCH=arm GOARM=7 go build -o "$tmp/svc-edge-armv7" ./edge/cmd/svc-edge
    for a in arm64 armv7; do
      echo "RESULT scenario=size target=linux/$a bytes=$(stat -c %s "$tmp/svc-edge-$a")"
    done
    ;;
  gate)
    go test -run '^$' -bench . -benchtime 3s -count 3 ./gate/
    ;;
  propagation)
    for st in "${stores[@]}"; do
      for br in "${brokers[@]}"; do
        "$tmp/edgesync" -scenario propagation -store "$st" -broker "$br" -rate "$RATE" -duration "$DURATION" -preload "$PRELOAD"
      done
    done
    ;;
  memory)
    "$tmp/edgesync" -scenario memory -n "$N" -runs "$RUNS" -edge-bin "$tmp/svc-edge"
    ;;
  drain)
    for st in "${stores[@]}"; do
      "$tmp/edgesync" -scenario drain -n "$N" -store "$st" -broker "$drain_broker"
    done
    ;;
  *)
    echo "edge.sh: unknown scenario $s (want size, gate, propagation, memory or drain)" >&2
    exit 2
    ;;
  esac
done
