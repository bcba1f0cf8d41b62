# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# rig/lib.sh - what every rig script shares.  Sourced, never run.
#
# Everything the rig makes goes to one of two places:
#   $HTW_CACHE  kernels, their sources and Debian's packages: slow to make,
#               shared by every checkout on the machine, keyed by content
#   $HTW_BUILD  one checkout's modules, binaries and results: cheap, thrown
#               away freely
set -euo pipefail

RIG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HTW_TOP=$(cd "$RIG_DIR/.." && pwd)

: "${HTW_CACHE:=${XDG_CACHE_HOME:-$HOME/.cache}/htw}"
: "${HTW_BUILD:=$HTW_TOP/build}"
: "${HTW_JOBS:=2}"
# Seconds a guest may take from power-on to power-off.
: "${HTW_TIMEOUT:=300}"
# kunit, user or warn: compile in a deliberate failure (see tests/inject*).
: "${HTW_INJECT:=}"

# The kernel source every tier shares: the UML kernel, checkpatch.pl,
# kunit.py and the kselftest harness all come from it.
KSRC_PKG=linux-source-6.12
KSRC_TARBALL=/usr/src/linux-source-6.12.tar.xz

log() { printf 'rig: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# hash_files FILE... - a short content hash, for cache keys
hash_files() { cat "$@" | sha256sum | cut -c1-16; }

# hash_str STRING... - the same for a string
hash_str() { printf '%s\n' "$@" | sha256sum | cut -c1-16; }

# with_lock NAME CMD... - run CMD holding a machine-wide lock on NAME, so
# that two checkouts running the rig at once fill the cache only once.
with_lock() {
	local name=$1
	shift
	mkdir -p "$HTW_CACHE"
	(
		flock 9
		"$@"
	) 9>"$HTW_CACHE/.$name.lock"
}

# The tiers: rig/tiers has one line per tier, "name kind argument".
tier_names() { awk '!/^#/ && NF { print $1 }' "$RIG_DIR/tiers"; }
tier_field() {
	awk -v t="$1" -v f="$2" '!/^#/ && $1 == t { print $f; found = 1 }
		END { exit !found }' "$RIG_DIR/tiers" || die "no tier '$1' in rig/tiers"
}

# ksrc_prepare - unpack $KSRC_TARBALL, apply the rig's patches, set KSRC.
# The tree is keyed on the package version and the patches, so it is
# unpacked again only when either changes.
ksrc_prepare() {
	[[ -r $KSRC_TARBALL ]] || die "$KSRC_TARBALL missing (rig/deps.sh installs $KSRC_PKG)"
	local version patches key
	version=$(dpkg-query -W -f='${Version}' "$KSRC_PKG" 2>/dev/null ||
		  stat -c '%s-%Y' "$KSRC_TARBALL")
	patches=("$RIG_DIR"/patches/6.12/*.patch)
	key=$(hash_str "$version" "$(hash_files "${patches[@]}")")
	KSRC=$HTW_CACHE/src/$KSRC_PKG-$key
	[[ -e $KSRC/.htw-ready ]] || with_lock src ksrc_unpack "$KSRC" "${patches[@]}"
	cache_touch "$KSRC"
	export KSRC
}

# cache_touch DIR - mark DIR as in use and forget its siblings that no
# checkout has used for two days (older versions, patches, fragments).
cache_touch() {
	touch "$1"
	find "$(dirname "$1")" -mindepth 1 -maxdepth 1 -type d -mtime +2 \
		-exec rm -rf {} + 2>/dev/null || true
}

ksrc_unpack() {
	local dst=$1 tmp p
	shift
	[[ -e $dst/.htw-ready ]] && return 0	# another checkout won the lock
	log "unpacking $KSRC_TARBALL into $dst"
	mkdir -p "$HTW_CACHE/src"
	tmp=$(mktemp -d "$HTW_CACHE/src/.unpack.XXXXXX")
	tar -xf "$KSRC_TARBALL" -C "$tmp"
	for p in "$@"; do
		log "applying ${p#"$HTW_TOP"/}"
		patch -s -p1 -d "$tmp/$KSRC_PKG" <"$p"
	done
	mv "$tmp/$KSRC_PKG" "$dst"
	rmdir "$tmp"
	touch "$dst/.htw-ready"
}

# copy_module_sources DST - a private copy of what Kbuild compiles, so
# that each kernel's objects live in their own tree: Kbuild writes its
# objects next to the sources, and one tree cannot hold objects for two
# kernels at once.
copy_module_sources() {
	local dst=$1
	rm -rf "$dst"
	mkdir -p "$dst"
	(cd "$HTW_TOP" && find . \( -path ./build -o -path ./.git -o -path ./rig \
			-o -path ./tools -o -path ./tests/user \) -prune -o \
		-type f \( -name Kbuild -o -name '*.[chS]' -o -path ./man/htw.4 \) \
		! -name '*.mod.c' -print |
		cpio -pdm --quiet "$dst")
}

# build_modules OUT KDIR [MAKE ARGS...] - build htw.ko and every other
# module Kbuild makes against KDIR into OUT/src; OUT/modules lists them
# in Kbuild's order, which is also the order to load them in.  A kind that
# builds elsewhere names its own build in KBUILD_VIA (see rig/sid.sh).
build_modules() {
	local out=$1 kdir=$2 rc=0
	shift 2
	copy_module_sources "$out/src"
	log "building modules against $kdir"
	if [[ -n ${KBUILD_VIA:-} ]]; then
		"$KBUILD_VIA" "$out" "$kdir" "$@" || rc=$?
	else
		make -C "$kdir" M="$out/src" "$@" HTW_INJECT="$HTW_INJECT" \
			-j"$HTW_JOBS" modules >"$out/build.log" 2>&1 || rc=$?
	fi
	if ((rc)); then
		tail -n 30 "$out/build.log" >&2
		return "$rc"
	fi
	# modules.order names objects (x.o) since 6.2, modules (x.ko) before;
	# its paths are absolute in some versions, relative to M in others.
	sed -e 's/\.o$/.ko/' -e "s|^\([^/]\)|$out/src/\1|" \
		"$out/src/modules.order" >"$out/modules"
}

# readme_example OUT FILE - a program the README shows (the indented block
# that opens with "/* FILE:"), so that the examples users copy are ones
# the tiers compile and run.
readme_example() {
	awk -v mark="    /* $2:" 'index($0, mark) == 1 { on = 1 }
	     on && /^[^ \t]/ { exit }
	     on { sub(/^    /, ""); print }' "$HTW_TOP/README" >"$1"
	[[ -s $1 ]]
}

# The README's examples, by the name of the tool each is built as.
declare -gA README_EXAMPLES=(
	[htw_readme_example]=htw_epoll.c
	[htw_readme_requests]=htw_requests.c
	[htw_readme_libevent]=htw_libevent.c
	[htw_readme_uring]=htw_uring.c
)

# USER_LIBS - the libraries a program needs besides libhtw, by name:
# htw_ringbench, htw_purgatory and htw_server link the anchors they measure
# htw against, the README's libevent and io_uring examples their loops
# (their static archives; rig/deps.sh installs them).
declare -gA USER_LIBS=(
	[htw_ringbench]="-luring -levent_core"
	[htw_purgatory]="-luring -levent_core"
	[htw_server]="-luring -levent_core"
	[htw_readme_libevent]="-levent_core"
	[htw_readme_uring]="-luring"
)

# build_user_binaries BIN [NAME...] - every tests/user/*.c and tools/*.c,
# and the README's examples (README_EXAMPLES, tools), or only those
# NAMEs ("-" for none), static, so that the same binary runs on the host's
# root in UML and in an initramfs; each is linked with libhtw, as make
# install links htwctl, and with its USER_LIBS.  BIN/status records one
# "path rc" line per program.
build_user_binaries() {
	local bin=$1 src name kind rc
	local -a cflags=(-O2 -g -Wall -Werror -I"$HTW_TOP/include/uapi") libs
	shift
	rm -rf "$bin"
	mkdir -p "$bin/tests" "$bin/tools" "$bin/lib"
	: >"$bin/status"
	rc=0
	for src in "$HTW_TOP"/lib/*.c; do
		gcc "${cflags[@]}" -c -o "$bin/lib/$(basename "$src" .c).o" "$src" \
			>>"$bin/build.log" 2>&1 || rc=$?
	done
	((rc)) && log "failed to build libhtw"
	echo "lib $rc" >>"$bin/status"
	for name in "${!README_EXAMPLES[@]}"; do
		rc=0
		readme_example "$bin/lib/$name.c" "${README_EXAMPLES[$name]}" || rc=$?
		((rc)) && log "README has no example /* ${README_EXAMPLES[$name]}: ..."
		echo "README:${README_EXAMPLES[$name]} $rc" >>"$bin/status"
	done
	for src in "$HTW_TOP"/tests/user/*.c "$HTW_TOP"/tools/*.c \
		   "$bin"/lib/htw_readme_*.c; do
		[[ -e $src ]] || continue
		name=$(basename "$src" .c)
		(($# == 0)) || [[ " $* " == *" $name "* ]] || continue
		# The injected failure exists only when asked for.
		[[ $name == inject_test && $HTW_INJECT != user ]] && continue
		kind=tests
		[[ $src == "$HTW_TOP"/tests/* ]] || kind=tools
		rc=0
		read -ra libs <<<"${USER_LIBS[$name]:-}"
		gcc -static "${cflags[@]}" -I"$KSRC/tools/testing/selftests" \
			-I"$HTW_TOP/lib" -o "$bin/$kind/$name" "$src" \
			"$bin"/lib/*.o "${libs[@]}" -lpthread \
			>>"$bin/build.log" 2>&1 || rc=$?
		((rc)) && log "failed to build ${src#"$HTW_TOP"/}"
		echo "${src#"$HTW_TOP"/} $rc" >>"$bin/status"
	done
}

# list_programs DIR PREFIX - the programs in DIR, as the guest will see
# them under PREFIX
list_programs() {
	local p
	for p in "$1"/*; do
		[[ -x $p ]] && echo "$2/${p##*/}"
	done
	return 0
}

# write_plan FILE MODE OUT MODULES TESTS TOOLS DEMO EXPORT - the plan that
# rig/guest.sh sources (see there); MODULES and TESTS are lists of paths.
# The modules' parameters come from rig/modparams, or HTW_MODPARAMS.
write_plan() {
	local file=$1
	shift
	{
		echo "# written by rig/lib.sh write_plan"
		printf 'HTW_MODE=%q\n' "$1"
		printf 'HTW_OUT=%q\n' "$2"
		printf 'HTW_MODULES="%s"\n' "$(xargs <<<"$3")"
		printf 'HTW_TESTS="%s"\n' "$(xargs <<<"$4")"
		printf 'HTW_TOOLS=%q\n' "$5"
		printf 'HTW_DEMO=%q\n' "$6"
		printf 'HTW_EXPORT=%q\n' "$7"
		# make check-full: the tests run their long versions
		printf 'HTW_FULL=%q\n' "${HTW_FULL:-0}"
		# make bench: what to run htw_bench, htw_ringbench,
		# htw_purgatory and htw_server with
		printf 'HTW_BENCH_ARGS=%q\n' "${HTW_BENCH_ARGS:-}"
		printf 'HTW_RINGBENCH_ARGS=%q\n' "${HTW_RINGBENCH_ARGS:-}"
		printf 'HTW_PURGATORY_ARGS=%q\n' "${HTW_PURGATORY_ARGS:-}"
		printf 'HTW_SERVER_ARGS=%q\n' "${HTW_SERVER_ARGS:-}"
		# rig/modparams: HTW_ARGS_<module>, the parameters to load it with
		local mod args
		while read -r mod args; do
			[[ -z $mod || $mod == \#* ]] && continue
			printf 'HTW_ARGS_%s=%q\n' "$mod" "$args"
		done <"${HTW_MODPARAMS:-$HTW_TOP/rig/modparams}"
	} >"$file"
}
