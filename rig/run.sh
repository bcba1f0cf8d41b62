#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rig/run.sh - "make run": boot a real kernel (Debian's 6.12 under QEMU by
# default; HTW_RUN_TIER picks another tier of rig/tiers) with htw loaded,
# run rig/demo.sh inside it, and power off.  The console is ours to watch.
# shellcheck source=rig/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=rig/tier.sh
source "$RIG_DIR/tier.sh"

: "${HTW_RUN_TIER:=deb6.12}"
RUN=$HTW_BUILD/run

main() {
	"$RIG_DIR/deps.sh"
	ksrc_prepare
	rm -rf "$RUN"
	mkdir -p "$RUN"
	build_user_binaries "$RUN/bin"
	run_tier "$RUN" "$HTW_RUN_TIER" run /dev/stdout | plain_text
}

# plain_text - the firmware resets and clears the terminal as it boots;
# keep what is on the screen, and drop the carriage returns of the serial
# line.
plain_text() {
	sed -u -e 's/\x1bc/\n/g' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\r$//'
}

main "$@"
