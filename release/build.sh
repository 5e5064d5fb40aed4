#!/usr/bin/env bash
# Builds cuprof's release artifacts into dist/, reproducibly (the same
# commit, Go and gcc give the same bytes: -trimpath, no build ids, C debug
# paths mapped, archives with fixed times and owners, SOURCE_DATE_EPOCH):
#
#   for linux/amd64 and linux/arm64 (or the platforms named: amd64, arm64),
#   - the cuprof program with its C parts (the interposer shim, its
#     calibrator, the simulated driver) compiled in advance and embedded, so
#     nothing is compiled at run time (internal/prebuilt; where the machine's
#     glibc is older than they need, cuprof compiles them from the embedded
#     sources as a build from source does);
#   - cuprof-VERSION-linux-ARCH.tar.gz: the program, README and docs;
#   - cuprof-VERSION-py3-none-manylinux_2_N_MACHINE.whl: the program on PATH,
#     the cuprof Python module and IPython extension (hatchling,
#     python/hatch_build.py), tagged with the glibc the files need;
#   - SHA256SUMS.
#
# Needs Go, gcc, and for arm64 the cross compiler (Debian: gcc-aarch64-linux-gnu);
# pip fetches hatchling (pinned in python/pyproject.toml).
# The version is python/cuprof/__init__.py's __version__ (one home for it).
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' python/cuprof/__init__.py)
[ -n "$version" ] || { echo "release: no __version__ in python/cuprof/__init__.py" >&2; exit 1; }
arches=${*:-amd64 arm64}
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
out=$PWD/dist
mkdir -p "$out"
parts=internal/prebuilt/parts
trap 'rm -rf "$parts"' EXIT

for arch in $arches; do
	case $arch in
	amd64) cc=${CC_AMD64:-gcc} machine=x86_64 ;;
	arm64) cc=${CC_ARM64:-aarch64-linux-gnu-gcc} machine=aarch64 ;;
	*) echo "release: unknown platform $arch (amd64 or arm64)" >&2; exit 2 ;;
	esac
	command -v "$cc" >/dev/null || { echo "release: no C compiler $cc for $arch (Debian: apt-get install gcc-aarch64-linux-gnu)" >&2; exit 1; }
	echo "== linux/$arch ($cc)"
	CC=$cc go run ./internal/prebuilt/gen -o "$parts"
	bin=$out/linux-$arch/cuprof
	mkdir -p "$(dirname "$bin")"
	CGO_ENABLED=1 GOOS=linux GOARCH=$arch CC=$cc go build -trimpath -buildvcs=false -tags cuprof_prebuilt \
		-ldflags "-s -w -buildid= -X main.version=$version" -o "$bin" ./cmd/cuprof
	glibc=$(go run ./internal/prebuilt/gen -needs "$bin" "$parts"/*/*.so* "$parts"/*/cuprof-calib)
	plat=manylinux_${glibc/./_}_$machine
	echo "   needs glibc $glibc: $plat"

	name=cuprof-$version-linux-$arch
	stage=$(mktemp -d)
	mkdir -p "$stage/$name"
	cp "$bin" "$stage/$name/cuprof"
	cp README.md "$stage/$name/"
	cp -r docs "$stage/$name/docs"
	tar -C "$stage" --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
		--mode='u+rwX,go+rX,go-w' -cf - "$name" | gzip -n -9 >"$out/$name.tar.gz"
	rm -rf "$stage"

	rm -f "$out"/cuprof-"$version"-*"$machine".whl
	CUPROF_WHEEL_BINARY=$bin CUPROF_WHEEL_PLATFORM=$plat \
		python3 -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$out" ./python
done
(cd "$out" && sha256sum -- *.tar.gz *.whl >SHA256SUMS)
ls -l "$out"
