#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rig/bench.sh - "make bench": boot each benchmark tier, load htw and the
# kernel benchmark (bench/htw_kbench.c, which runs as it loads), run the
# user-space benchmarks (tools/htw_bench.c, and under QEMU
# tools/htw_ringbench.c, ring timers against timerfd, libevent and
# io_uring, tools/htw_purgatory.c, libhtw's request timeouts against the
# same, and tools/htw_server.c, a TCP server whose timers run on each of
# them in turn), and print one table of what they measured;
# build/bench/table.md keeps it, and build/bench/<tier>-extend.svg and
# <tier>-purgatory.svg and <tier>-server.svg chart htw_ringbench's
# extensions, htw_purgatory's CPU per request and htw_server's requests
# per CPU second (rig/plot.sh).  Benchmarks never gate
# anything: "make check" loads the same programs in a smoke run.
# shellcheck source=rig/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=rig/tier.sh
source "$RIG_DIR/tier.sh"

# UML runs the kernel's code at the host's speed, but every system call is
# a round trip through ptrace: it measures the kernel benchmark, and of the
# user-space ones only the close of a file, one system call that frees up
# to 10M timers (htw_ringbench, all system calls against stores, is not
# even built there).  QEMU's TCG emulates every instruction, at a fraction
# of the speed, but whole: there the ratios of all the benchmarks hold.
: "${HTW_BENCH_TIERS:=uml deb6.12}"
# htw_ringbench's arguments, e.g. "--rounds 3" (see tools/htw_ringbench.c).
: "${HTW_RINGBENCH_ARGS:=}"
# htw_purgatory's, e.g. "--max 100000" (see tools/htw_purgatory.c).
: "${HTW_PURGATORY_ARGS:=}"
# htw_server's, e.g. "--max 10000" (see tools/htw_server.c).
: "${HTW_SERVER_ARGS:=}"
RUN=$HTW_BUILD/bench
export HTW_MODPARAMS=$RIG_DIR/bench.modparams
# 10M timers take over a GiB of the guest's memory.
export HTW_GUEST_MEM=3072
# The largest measures take minutes under emulation: htw_bench about five,
# htw_ringbench a few more, htw_purgatory (a million requests started and
# let go five times each way) ten to twenty, htw_server (each way's server
# under load for 20 s at 10,000 connections and 70 s at 100,000, in three
# rounds) thirty more.
HTW_TIMEOUT=$((HTW_TIMEOUT > 5400 ? HTW_TIMEOUT : 5400))

# charts DIR... - rig/plot.sh's charts of each tier that ran htw_ringbench
# or htw_purgatory
charts() {
	local dir
	for dir in "$@"; do
		grep -qs '^plot ' "$dir/out/bench-user.txt" || continue
		"$RIG_DIR/plot.sh" "$dir" "$RUN" ||
			log "bench: no chart for $(basename "$dir")"
	done
}

main() {
	local tier
	local -a dirs=() programs
	"$RIG_DIR/deps.sh"
	ksrc_prepare
	rm -rf "$RUN"
	mkdir -p "$RUN"
	for tier in $HTW_BENCH_TIERS; do
		log "bench: $tier"
		mkdir -p "$RUN/$tier.run"
		programs=(htw_bench htw_ringbench htw_purgatory htw_server)
		HTW_BENCH_ARGS=
		if [[ $(tier_field "$tier" 2) == uml ]]; then
			HTW_BENCH_ARGS=--close-only
			programs=(htw_bench)
		fi
		build_user_binaries "$RUN/$tier.run/bin" "${programs[@]}"
		(export HTW_BENCH_ARGS HTW_RINGBENCH_ARGS HTW_PURGATORY_ARGS HTW_SERVER_ARGS
		 run_tier "$RUN/$tier.run" "$tier" bench) ||
			log "bench: $tier failed; see $RUN/$tier.run/$tier"
		dirs+=("$RUN/$tier.run/$tier")
	done
	"$RIG_DIR/bench.py" "${dirs[@]}" | tee "$RUN/table.md"
	charts "${dirs[@]}"
}

main "$@"
