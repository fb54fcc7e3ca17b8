#!/usr/bin/env bash
# Times `go run ./cmd/wheelhouse up` from a clean module cache and a clean
# build cache to the printed URL, then `wheelhouse up` from the built
# binary. Nothing is downloaded: the modules come from this machine's
# module cache, served as a file proxy, so the figure is unpacking and
# building (a first run on the internet adds the download, about 95 MB of module zips).
#
#   scripts/cold-start.sh
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wheelhouse-cold.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do pkill -INT -P "$p" 2>/dev/null || true; kill -INT "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  chmod -R u+w "$tmp" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

log() { printf 'cold-start: %s\n' "$*" >&2; }

proxy="file://$(go env GOMODCACHE)/cache/download"
export HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config" XDG_STATE_HOME="$tmp/state" XDG_RUNTIME_DIR="$tmp/run"
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
export GOMODCACHE="$tmp/mod" GOCACHE="$tmp/gocache" GOPROXY="$proxy" GOSUMDB=off GOFLAGS=-mod=mod GOTOOLCHAIN=local

# run_up OUT CMD...: starts CMD, waits for its URL; prints the seconds taken.
run_up() {
  local out=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  "$@" >"$out" 2>"$out.err" &
  pids+=($!)
  local pid=$!
  for _ in $(seq 6000); do
    if grep -q 'Wheelhouse is running: ' "$out" 2>/dev/null; then
      t1=$(date +%s.%N)
      # go run waits for the program it started and leaves signals to the
      # terminal's process group: stop the program itself.
      pkill -INT -P "$pid" 2>/dev/null || true
      kill -INT "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }'
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { log "it stopped: $(tail -3 "$out.err")"; return 1; }
    sleep 0.05
  done
  log "no URL after five minutes"; return 1
}

log "$(go version), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
cd "$repo"
first=$(run_up "$tmp/run1" go run ./cmd/wheelhouse up --data "$tmp/data1" --http 127.0.0.1:0 --nats 127.0.0.1:0)
echo "go run, clean module and build caches: ${first} s"
again=$(run_up "$tmp/run2" go run ./cmd/wheelhouse up --data "$tmp/data1" --http 127.0.0.1:0 --nats 127.0.0.1:0)
echo "go run again (caches warm, same data): ${again} s"
go build -o "$tmp/wheelhouse" ./cmd/wheelhouse
bin=$(run_up "$tmp/run3" "$tmp/wheelhouse" up --data "$tmp/data2" --http 127.0.0.1:0 --nats 127.0.0.1:0)
echo "built binary, fresh data: ${bin} s"
log "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
