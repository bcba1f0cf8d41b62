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

# UML runs the kernel's code at the host's speed; QEMU's TCG emulates it.
: "${HTW_BENCH_TIERS:=uml deb6.12}"
RUN=$HTW_BUILD/bench
export HTW_MODPARAMS=$RIG_DIR/bench.modparams
# The largest measures take minutes under emulation.
HTW_TIMEOUT=$((HTW_TIMEOUT > 1200 ? HTW_TIMEOUT : 1200))

main() {
	local tier
	local -a dirs=()
	"$RIG_DIR/deps.sh"
	ksrc_prepare
	rm -rf "$RUN"
	mkdir -p "$RUN"
	build_user_binaries "$RUN/bin" htw_bench
	for tier in $HTW_BENCH_TIERS; do
		log "bench: $tier"
		(run_tier "$RUN" "$tier" bench) || log "bench: $tier failed; see $RUN/$tier"
		dirs+=("$RUN/$tier")
	done
	"$RIG_DIR/bench.py" "${dirs[@]}" | tee "$RUN/table.md"
}

main "$@"
