#!/usr/bin/env bash
# The README's first command on a fresh clone: builds cuprof (Go fetches its
# modules on the first run, which takes minutes on a small machine) with a
# progress line from the first second, then runs `cuprof demo` with the
# arguments given. Needs Go 1.26 and a C compiler; with a release wheel or
# tarball, run `cuprof demo` instead.
set -euo pipefail
cd "$(dirname "$0")"
command -v go >/dev/null || { echo "demo.sh: Go is not on PATH: install Go 1.26 (https://go.dev/dl), or use a release wheel (README, Install)" >&2; exit 1; }
mkdir -p bin
echo "cuprof: building ./bin/cuprof (the first run downloads about 28 Go modules and compiles them: minutes on 2 cores)" >&2
if [ -t 2 ]; then
	log=$(mktemp)
	trap 'rm -f "$log"' EXIT
	# go build -v names each package as it compiles: one line, redrawn.
	if ! go build -v -o bin/cuprof ./cmd/cuprof 2>&1 | tee "$log" | {
		n=0
		while IFS= read -r line; do
			n=$((n + 1))
			printf '\r\033[Kcuprof: building: %d packages, now %.60s' "$n" "$line" >&2
		done
		printf '\r\033[K' >&2
	}; then
		cat "$log" >&2
		echo "demo.sh: the build failed (above)" >&2
		exit 1
	fi
else
	go build -o bin/cuprof ./cmd/cuprof
fi
exec ./bin/cuprof demo "$@"
