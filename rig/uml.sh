# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# rig/uml.sh - the "uml" kind of tier: a user-mode Linux kernel built from
# Debian's source with config fragments from rig/, booted as a host process whose
# root is the host's own file system (hostfs).  Sourced by rig/tier.sh.
#
# A kind defines two functions:
#   <kind>_prepare NAME ARG   make sure the kernel exists; set KDIR (what
#                             modules build against), KMAKE (extra make
#                             arguments) and KDESC (a line for the report)
#   <kind>_boot OUT BIN MODE [CONSOLE]
#                             boot it with the modules $OUT/modules lists
#                             and the programs under BIN (bin/tests/*,
#                             bin/tools/*); MODE is check or run; results
#                             go to $OUT/out, the console to CONSOLE
#                             (default $OUT/console.log); return what
#                             timeout(1) returns
# shellcheck disable=SC2034 # KDIR, KMAKE and KDESC are for rig/tier.sh

# uml_prepare NAME FRAGMENTS - FRAGMENTS is a comma-separated list of files
# in rig/.  The kernel is built from $KSRC (Debian 12's 6.12), or from the
# linux-source of Debian sid's series that the tier's fourth field names.
# The build is keyed on the patched source and the fragments, and happens
# once per key.
uml_prepare() {
	local name=$1 f key series
	local -a frags=()

	IFS=, read -ra frags <<<"$2"
	for f in "${!frags[@]}"; do
		frags[f]=$RIG_DIR/${frags[f]}
		[[ -r ${frags[f]} ]] || die "tier $name: no ${frags[f]}"
	done
	UML_SRC=$KSRC
	series=$(tier_field "$name" 4)
	if [[ -n $series ]]; then
		# shellcheck source=rig/suite.sh
		source "$RIG_DIR/suite.sh"
		sid_ksrc "$series"
		UML_SRC=$SID_KSRC
	fi
	key=$(hash_str "$(basename "$UML_SRC")" "$(hash_files "${frags[@]}")")
	UML_DIR=$HTW_CACHE/uml/$name-$key
	[[ -e $UML_DIR/.htw-ready ]] || with_lock "uml-$name" uml_build "$UML_DIR" "${frags[@]}"
	cache_touch "$UML_DIR"
	KDIR=$UML_DIR
	KMAKE=(ARCH=um)
	KBUILD_VIA=
	KDESC="UML $(cat "$UML_DIR/include/config/kernel.release") ($2)"
}

uml_build() {
	local dir=$1 rc=0
	shift
	[[ -e $dir/.htw-ready ]] && return 0	# another checkout built it
	log "building the UML kernel in $dir (a few minutes, once)"
	mkdir -p "$dir"
	# As kunit.py does: the fragments are the whole .config, the rest
	# takes its defaults.
	cat "$@" >"$dir/.config"
	make -C "$UML_SRC" O="$dir" ARCH=um olddefconfig >"$dir/build.log" 2>&1 || rc=$?
	((rc)) || uml_check_config "$dir/.config" "$@" || rc=$?
	((rc)) || make -C "$UML_SRC" O="$dir" ARCH=um -j"$HTW_JOBS" \
		>>"$dir/build.log" 2>&1 || rc=$?
	if ((rc)); then
		tail -n 30 "$dir/build.log" >&2
		die "the UML kernel did not build; see $dir/build.log"
	fi
	touch "$dir/.htw-ready"
}

# uml_check_config CONFIG FRAGMENT... - fail when Kconfig dropped an option
# a fragment asks for (an unmet dependency, a typo): a tier must not run
# silently without what it claims to test.
uml_check_config() {
	local config=$1 line sym bad=0
	shift
	while read -r line; do
		if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)= ]]; then
			grep -qxF -- "$line" "$config" && continue
		elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
			sym=${BASH_REMATCH[1]}
			grep -q "^$sym=" "$config" || continue
		else
			continue
		fi
		log "config fragment asks for '$line', .config disagrees"
		bad=1
	done < <(cat "$@")
	return "$bad"
}

# uml_boot OUT BIN MODE [CONSOLE] - the guest reads and writes the host's
# files directly, so the plan names host paths and results need no copying.
uml_boot() {
	local out=$1 bin=$2 mode=$3 console=${4:-$1/console.log} rc=0
	local -a quiet=()

	# make run wants the demo, not the boot messages.
	[[ $mode == run ]] && quiet=(loglevel=4)

	mkdir -p "$out/out"
	write_plan "$out/plan" "$mode" "$out/out" "$(cat "$out/modules")" \
		"$(list_programs "$bin/tests" "$bin/tests")" "$bin/tools" \
		"$RIG_DIR/demo.sh" ""
	# con0 writes the console to our stdout and reads nothing.  The kernel
	# passes HTW_PLAN to init as an environment variable.  slab_nomerge
	# keeps htw's caches its own, as Debian's kernels do: merged into
	# another cache, a cache that still holds objects at unload says
	# nothing.
	timeout -k 10 "$HTW_TIMEOUT" "$UML_DIR/vmlinux" mem="${HTW_GUEST_MEM:-512}M" \
		rootfstype=hostfs rootflags=/ rw init="$RIG_DIR/guest.sh" \
		con=null con0=null,fd:1 ssl=null log_buf_len=4M slab_nomerge \
		"${quiet[@]}" HTW_PLAN="$out/plan" </dev/null >"$console" 2>&1 || rc=$?
	# On a loaded host, UML itself has aborted (SIGABRT, status 134) after
	# its kernel had powered off, the guest's results whole: the guest's
	# work is over by then, and a crash of the guest's kernel says so on
	# the console before "reboot: Power down".
	if ((rc == 134)) && [[ -e $out/out/done ]] &&
		tail -n 3 "$console" | grep -q 'reboot: Power down$'; then
		log "UML aborted after its kernel powered off (status 134); its results are whole"
		rc=0
	fi
	return "$rc"
}
