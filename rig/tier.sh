# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# rig/tier.sh - run htw in one tier's kernel.  Sourced by rig/check.sh and
# rig/run.sh after rig/lib.sh.
#
# A run directory RUN holds bin/ (the static programs, shared by every
# tier of the run) and one directory per tier:
#   kernel        what the tier ran on, for the report
#   steps         "prepare|build|boot RC" from the host
#   src/          the module sources and objects, modules: what to load
#   console.log   the guest's console
#   out/          what rig/guest.sh recorded: steps, tests/*.tap,
#                 dmesg.txt, done
#   result.json   rig/report.py's verdict

# run_tier RUN NAME MODE [CONSOLE] - prepare, build, boot.  Each step's
# status lands in RUN/NAME/steps, so that a failed step is a failed test in
# the report and not the end of "make check"; run it in a subshell, since
# a failure exits.
run_tier() {
	local run=$1 name=$2 mode=$3 console=${4:-} kind arg out t0 rc=0
	out=$run/$name
	rm -rf "$out"
	mkdir -p "$out"
	kind=$(tier_field "$name" 2)
	arg=$(tier_field "$name" 3)
	# shellcheck source=/dev/null
	source "$RIG_DIR/$kind.sh"

	echo "prepare 1" >"$out/steps"
	"${kind}_prepare" "$name" "$arg"
	echo "$KDESC" >"$out/kernel"
	echo "prepare 0" >"$out/steps"

	# W=1: the module must build without a warning on every kernel.
	build_modules "$out" "$KDIR" "${KMAKE[@]}" W=1 || rc=$?
	echo "build $rc" >>"$out/steps"
	((rc == 0)) || return "$rc"

	log "$name: booting $KDESC"
	t0=$SECONDS
	"${kind}_boot" "$out" "$run/bin" "$mode" ${console:+"$console"} || rc=$?
	echo "boot $rc" >>"$out/steps"
	log "$name: guest exited with $rc after $((SECONDS - t0))s"
	return "$rc"
}
