#!/usr/bin/env bash
# Runs the cluster of docker-compose.yml on this machine, without Docker:
# three nats-server nodes configured by deploy/nats.conf (used unchanged)
# and two wheelhouse hubs as their auth callout, all on loopback. It prints
# the hubs' URLs and the setup token, and stops everything on Ctrl-C.
#
#   scripts/local-cluster.sh [DIR]   # state and logs in DIR (default: a new
#                                    # folder in /tmp); reuse DIR to keep the data
#
# Environment:
#   WH_BIN        a wheelhouse binary (default: built from this checkout)
#   NATS_SERVER   a nats-server binary (default: built from the version go.mod pins)
#   WH_HUB_PORTS  the hubs' HTTP ports (default "0 0": any free ports)
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$(mktemp -d "${TMPDIR:-/tmp}/wheelhouse-cluster.XXXXXX")}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
read -r -a hub_ports <<<"${WH_HUB_PORTS:-0 0}"

log() { printf 'local-cluster: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

pids=()
cleanup() {
  trap - EXIT INT TERM
  if [ ${#pids[@]} -gt 0 ]; then
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
  log "stopped (state and logs kept in $dir)"
}
trap cleanup EXIT
trap 'exit 0' INT TERM

if [ -z "${WH_BIN:-}" ]; then
  WH_BIN="$dir/bin/wheelhouse"
  log "building wheelhouse into $WH_BIN"
  (cd "$repo" && go build -o "$WH_BIN" ./cmd/wheelhouse)
fi
if [ -z "${NATS_SERVER:-}" ]; then
  NATS_SERVER="$dir/bin/nats-server"
  log "building nats-server into $NATS_SERVER"
  (cd "$repo" && go build -o "$NATS_SERVER" github.com/nats-io/nats-server/v2)
fi

# The secrets the nodes and hubs share; deploy/nats.conf includes
# secrets/nats-auth.conf from its own folder, so it is linked beside them.
"$WH_BIN" nats-secrets "$dir/secrets" >&2
ln -sf "$repo/deploy/nats.conf" "$dir/nats.conf"
export WH_NATS_WEBSOCKET=127.0.0.1:-1

# json_first KEY FILE: the first URL under KEY in a nats-server ports file.
json_first() { sed -n "s/.*\"$1\":\[\"\([^\"]*\)\".*/\1/p" "$2"; }

# start_node N CLUSTER_URL ROUTES: starts node N; its pid is in $pid.
start_node() {
  local n=$1 d="$dir/nats-$1"
  mkdir -p "$d"
  rm -f "$d"/*.ports
  "$NATS_SERVER" -c "$dir/nats.conf" --name "nats-$n" -a 127.0.0.1 -p -1 -sd "$d" \
    --cluster "$2" --routes "$3" --ports_file_dir "$d" -l "$d/nats.log" </dev/null >/dev/null 2>&1 &
  pid=$!
}

# wait_ports N PID: waits for node N's ports file; fails if the node exits.
wait_ports() {
  local f="$dir/nats-$1/$(basename "$NATS_SERVER")_$2.ports"
  for _ in $(seq 200); do
    [ -s "$f" ] && { echo "$f"; return 0; }
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# Node 1 listens for routes on a random port (another is tried if it is
# taken) and routes to itself, as JetStream wants; nodes 2 and 3 route to
# node 1 and learn each other from it.
for attempt in 1 2 3 4 5; do
  route_port=$((20000 + RANDOM % 40000))
  start_node 1 "nats://127.0.0.1:$route_port" "nats://127.0.0.1:$route_port"
  if ports=$(wait_ports 1 "$pid"); then pids+=("$pid"); break; fi
  wait "$pid" 2>/dev/null || true
  [ "$attempt" = 5 ] && die "nats-1 did not start: see $dir/nats-1/nats.log"
done
client_urls=("$(json_first nats "$ports")")
ws_urls=("$(json_first websocket "$ports")")
for n in 2 3; do
  start_node "$n" "nats://127.0.0.1:-1" "nats://127.0.0.1:$route_port"
  pids+=("$pid")
  ports=$(wait_ports "$n" "$pid") || die "nats-$n did not start: see $dir/nats-$n/nats.log"
  client_urls+=("$(json_first nats "$ports")")
  ws_urls+=("$(json_first websocket "$ports")")
done

# Two hubs, each starting with its own node (and falling over to the others).
join() { local IFS=,; echo "$*"; }
hub_urls=()
for h in 1 2; do
  d="$dir/hub-$h"
  mkdir -p "$d"
  i=$((h - 1))
  nats=$(join "${client_urls[@]:$i}" "${client_urls[@]:0:$i}")
  ws=$(join "${ws_urls[@]:$i}" "${ws_urls[@]:0:$i}")
  "$WH_BIN" hub --data "$d/data" --http "127.0.0.1:${hub_ports[$i]:-0}" --replicas 3 \
    --nats-url "$nats" --nats-websocket "$ws" --nats-secrets "$dir/secrets/hub-auth.json" \
    </dev/null >"$d/out" 2>"$d/hub.log" &
  pids+=($!)
done
for h in 1 2; do
  d="$dir/hub-$h"
  url=
  for _ in $(seq 1200); do # JetStream needs a few seconds to elect a leader
    url=$(sed -n 's/^Wheelhouse hub at \([^ ]*\) .*/\1/p' "$d/out")
    [ -n "$url" ] && break
    kill -0 "${pids[$((h + 2))]}" 2>/dev/null || die "hub $h stopped: see $d/hub.log"
    sleep 0.05
  done
  [ -n "$url" ] || die "hub $h did not start within a minute: see $d/hub.log"
  hub_urls+=("$url")
done
token=$(sed -n 's/^First start: create the admin at [^ ]* with setup token \([^ ]*\)$/\1/p' "$dir/hub-1/out")

echo "Wheelhouse cluster running; state and logs in $dir"
echo "hub 1: ${hub_urls[0]}"
echo "hub 2: ${hub_urls[1]}"
echo "NATS: $(join "${client_urls[@]}") (websocket $(join "${ws_urls[@]}"))"
if [ -n "$token" ]; then
  echo "setup token: $token (create the admin on hub 1: open ${hub_urls[0]})"
else
  echo "already set up: log in on either hub"
fi
echo "Pair bridges with either hub's URL; each sees the other's messages and bridges. Stop with Ctrl-C."

# Run until stopped, or until one of the processes exits.
set +e
wait -n
die "a process of the cluster stopped: see the logs in $dir"
