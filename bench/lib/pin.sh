# Sourced by bench/suite/run.sh and bench/python/run.sh: CPU pinning of the
# measured processes, so every tool's run lands on the same CPUs.
#
# On the H200 VM an unpinned process landed fast or slow at random (the same
# bare cp.empty(10) took 1.78 us in one process and 3.36 us in the next,
# 2026-12-01 diagnostic run), which made per-round ratios straddle every goal.
#
# BENCH_PIN (default auto):
#   off          no pinning
#   auto         with taskset and at least 8 CPUs: the program on CPUs 2,3, the
#                tools' own processes (cuprof record's recorder, nsys) on 4,5
#                (CPU 0 and 1 are left to interrupts and the shell)
#   PROG[/TOOL]  taskset CPU lists, e.g. 6,7/8,9
# pin_setup sets PIN_PROG and PIN_TOOL (taskset prefixes, empty when off) and
# PIN_DESC (what was chosen, for env.json and the log).

pin_setup() {
	local want=${BENCH_PIN:-auto} prog tool
	PIN_PROG=() PIN_TOOL=() PIN_DESC=off
	[ "$want" = off ] && return 0
	if ! command -v taskset >/dev/null 2>&1; then
		[ "$want" = auto ] || echo "bench: BENCH_PIN=$want but taskset is missing; not pinning" >&2
		PIN_DESC="off (no taskset)"
		return 0
	fi
	if [ "$want" = auto ]; then
		local n
		n=$(nproc 2>/dev/null || echo 1)
		if [ "$n" -lt 8 ]; then
			PIN_DESC="off (auto: $n CPUs, fewer than 8)"
			return 0
		fi
		prog=2,3 tool=4,5
	else
		prog=${want%%/*}
		tool=
		[ "$want" != "$prog" ] && tool=${want#*/}
	fi
	if ! taskset -c "$prog" true 2>/dev/null || { [ -n "$tool" ] && ! taskset -c "$tool" true 2>/dev/null; }; then
		echo "bench: BENCH_PIN=$want names CPUs this machine cannot run on; not pinning" >&2
		PIN_DESC="off (bad CPU list $want)"
		return 0
	fi
	PIN_PROG=(taskset -c "$prog")
	[ -n "$tool" ] && PIN_TOOL=(taskset -c "$tool")
	PIN_DESC="program on CPUs $prog${tool:+, tools on $tool}"
}
