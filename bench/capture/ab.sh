#!/bin/sh
# A/B of the shim's hot path between a git revision and this tree:
#
#   bench/capture/ab.sh [-r ROUNDS] [-n ITERS] REV
#
# Builds the shim of REV (git archive) and of the working tree with the same
# flags as run.sh, the simulated driver (cost 0) and bench.c once, then runs
# bench.c ROUNDS times under each shim and bare, interleaved (old, new,
# bare, ...), and prints per call the minimum and median ns per iteration of
# each. On a shared machine the minimum is the figure to compare: other
# jobs only ever add time.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cc=${CC:-gcc}
rounds=15 iters=1000000
while getopts r:n: o; do
	case $o in
	r) rounds=$OPTARG ;;
	n) iters=$OPTARG ;;
	*) echo "usage: $0 [-r ROUNDS] [-n ITERS] REV" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "usage: $0 [-r ROUNDS] [-n ITERS] REV" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/old" "$work/sim" "$work/rings"
chmod 700 "$work/rings"
git -C "$repo" archive "$1" cudawrap/shim | tar -x -C "$work/old"
shim() { # shim SRC_DIR OUT
	(cd "$1" && $cc -I. -O2 -g -fPIC -shared -fvisibility=hidden -fno-strict-aliasing \
		-Wl,--version-script=shim.map -Wl,-z,now -o "$2" $(ls csrc/*.c | grep -v /calib.c) -ldl -lpthread)
}
shim "$work/old/cudawrap/shim" "$work/old.so"
shim "$repo/cudawrap/shim" "$work/new.so"
$cc -I"$repo/cudawrap/shim" -I"$repo/cudawrap/sim/csrc" -shared -fPIC -O2 -std=gnu11 -pthread -fvisibility=hidden \
	-fno-ipa-icf -Wl,-soname,libcuda.so.1 -o "$work/sim/libcuda.so.1" "$repo/cudawrap/sim/csrc/sim.c" "$repo/cudawrap/sim/csrc/stubs_gen.c"
ln -s libcuda.so.1 "$work/sim/libcuda.so"
$cc -O2 -I"$repo/cudawrap/shim" -o "$work/bench" "$here/bench.c" -L"$work/sim" -lcuda -lpthread
export LD_LIBRARY_PATH="$work/sim" CUPROF_SIM_COST_SCALE=0
i=0
while [ "$i" -lt "$rounds" ]; do
	for v in old new; do
		rm -f "$work/rings"/*
		CUPROF_DIR="$work/rings" CUPROF_BUFFER=8388608 LD_PRELOAD="$work/$v.so" "$work/bench" "$iters" | sed "s/^/$v /"
	done
	"$work/bench" "$iters" | sed "s/^/bare /"
	i=$((i + 1))
done >"$work/all"
awk '
	{ k = $2; v[$1, k, ++n[$1, k]] = $3; if (!(k in seen)) { seen[k] = 1; names[++m] = k } }
	function stat(who, k,   c, i, j, t, a) {
		c = n[who, k]
		for (i = 1; i <= c; i++) a[i] = v[who, k, i]
		for (i = 2; i <= c; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
		return sprintf("%7.1f %7.1f", a[1], (c % 2) ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2)
	}
	END {
		printf "%-28s %15s %15s %15s\n", "call (ns per iteration)", "bare min  med", "REV min  med", "tree min  med"
		for (i = 1; i <= m; i++) printf "%-28s %15s %15s %15s\n", names[i], stat("bare", names[i]), stat("old", names[i]), stat("new", names[i])
	}' "$work/all"
