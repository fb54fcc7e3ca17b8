#!/usr/bin/env bash
# Installs what the full test run needs, into a cache folder outside the checkout,
# and prints the environment that points the tests at it. Later runs reuse the cache.
#   eval "$(scripts/test-tools.sh)"
set -euo pipefail

CODEX_VERSION=0.171.0
CLAUDE_VERSION=2.1.332
CACHE="${WHEELHOUSE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/wheelhouse-test-tools}"
mkdir -p "$CACHE"

log() { printf 'test-tools: %s\n' "$*" >&2; }

# Chromium from Debian packages (headless browser tests).
if ! command -v chromium >/dev/null 2>&1; then
  log "installing chromium from Debian packages"
  if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o Dpkg::Use-Pty=0 chromium >/dev/null
fi

npm_pkg() { # dir package version
  local dir="$CACHE/$1" pkg="$2" ver="$3"
  if [ ! -f "$dir/.installed-$ver" ]; then
    log "installing $pkg@$ver into $dir"
    rm -rf "$dir"; mkdir -p "$dir"
    (cd "$dir" && npm init -y >/dev/null && npm install --no-audit --no-fund --loglevel=error "$pkg@$ver" >&2)
    touch "$dir/.installed-$ver"
  fi
}
npm_pkg codex @openai/codex "$CODEX_VERSION"
npm_pkg claude @anthropic-ai/claude-code "$CLAUDE_VERSION"

# nats-server for the cluster tests and scripts/local-cluster.sh: built from the
# nats-server module go.mod already pins (no download beyond the module cache).
NATS_VERSION=$(cd "$(dirname "$0")/.." && go list -m -f '{{.Version}}' github.com/nats-io/nats-server/v2)
nats_bin="$CACHE/nats-server-$NATS_VERSION/nats-server"
if [ ! -x "$nats_bin" ]; then
  log "building nats-server $NATS_VERSION into $(dirname "$nats_bin")"
  (cd "$(dirname "$0")/.." && go build -o "$nats_bin" github.com/nats-io/nats-server/v2)
fi

codex_bin=$(find "$CACHE/codex/node_modules/@openai" -type f -path '*/bin/codex' 2>/dev/null | head -n1)
claude_bin="$CACHE/claude/node_modules/.bin/claude"
[ -x "$codex_bin" ] || { log "codex binary not found under $CACHE/codex"; exit 1; }
[ -x "$claude_bin" ] || { log "claude binary not found under $CACHE/claude"; exit 1; }

echo "export WHEELHOUSE_TEST_CODEX='$codex_bin'"
echo "export WHEELHOUSE_TEST_CLAUDE='$claude_bin'"
echo "export WHEELHOUSE_TEST_CHROMIUM='$(command -v chromium)'"
echo "export WHEELHOUSE_TEST_NATS_SERVER='$nats_bin'"
