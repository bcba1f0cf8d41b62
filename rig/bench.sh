#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rig/bench.sh - "make bench": boot each benchmark tier, load htw and the
# kernel benchmark (bench/htw_kbench.c, which runs as it loads), run the
# user-space benchmark (tools/htw_bench.c), and print one table of what
# both measured; build/bench/table.md keeps it.  Benchmarks never gate
# anything: "make check" loads the same programs in a smoke run.
# shellcheck source=rig/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=rig/tier.sh
source "$RIG_DIR/tier.sh"

# UML runs the kernel's code at the host's speed, but every system call is
# a round trip through ptrace: it measures the kernel benchmark, and of the
# user-space one only the close of a file, one system call that frees up to
# 10M timers.  QEMU's TCG emulates every instruction, at a fraction of the
# speed, but whole: there the ratios of both benchmarks hold.
: "${HTW_BENCH_TIERS:=uml deb6.12}"
RUN=$HTW_BUILD/bench
export HTW_MODPARAMS=$RIG_DIR/bench.modparams
# 10M timers take over a GiB of the guest's memory.
export HTW_GUEST_MEM=3072
# The largest measures take minutes under emulation.
HTW_TIMEOUT=$((HTW_TIMEOUT > 1200 ? HTW_TIMEOUT : 1200))

main() {
	local tier
	local -a dirs=()
	"$RIG_DIR/deps.sh"
	ksrc_prepare
	rm -rf "$RUN"
	mkdir -p "$RUN"
	for tier in $HTW_BENCH_TIERS; do
		log "bench: $tier"
		mkdir -p "$RUN/$tier.run"
		build_user_binaries "$RUN/$tier.run/bin" htw_bench
		HTW_BENCH_ARGS=
		[[ $(tier_field "$tier" 2) == uml ]] && HTW_BENCH_ARGS=--close-only
		(export HTW_BENCH_ARGS; run_tier "$RUN/$tier.run" "$tier" bench) ||
			log "bench: $tier failed; see $RUN/$tier.run/$tier"
		dirs+=("$RUN/$tier.run/$tier")
	done
	"$RIG_DIR/bench.py" "${dirs[@]}" | tee "$RUN/table.md"
}

main "$@"
