#!/usr/bin/env bash
# The full test run: installs what the tests need (Chromium from Debian
# packages; the Codex and Claude Code CLIs from npm at pinned versions, into
# a cache folder outside the checkout), then checks formatting, vets,
# runs staticcheck and runs every test with the race detector. No test is
# skipped for a missing tool.
#   scripts/test.sh            # everything
#   scripts/test.sh ./hub/...  # just some packages
set -euo pipefail
cd "$(dirname "$0")/.."

eval "$(scripts/test-tools.sh)"

echo "== gofmt" >&2
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2; echo "$unformatted" >&2; exit 1
fi
echo "== go vet" >&2
go vet ./...
echo "== staticcheck" >&2
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
echo "== go test -race ${pkgs[*]}" >&2
go test -race -count=1 -timeout 20m "${pkgs[@]}"
