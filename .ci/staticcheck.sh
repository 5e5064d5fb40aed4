#!/usr/bin/env bash
# staticcheck, a checker beyond go vet, over the whole module, pinned: the
# version supporting the Go of go.mod (2026.2.x supports Go 1.26). Checks
# are staticcheck's defaults; a line with a deliberate exception says why
# in a //lint:ignore comment.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v0.8.2 # staticcheck 2026.2.2
dir=$(go env GOPATH | cut -d: -f1)/bin
bin=$dir/staticcheck
if ! [ -x "$bin" ] || ! "$bin" -version | grep -q "(${version#v})"; then
	GOBIN=$dir go install "honnef.co/go/tools/cmd/staticcheck@$version"
fi
"$bin" -version
"$bin" ./...
