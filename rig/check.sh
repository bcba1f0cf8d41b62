#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rig/check.sh - "make check": lint, htw in the quick tiers of rig/tiers,
# make install and the rig's own self-test; with HTW_FULL=1 ("make
# check-full"), htw in the other tiers and its Debian packages installed,
# used and purged in a Debian 12 root (rig/debinstall.sh).  One summary,
# whose last line is "N passed, M failed[, K skipped]", and a non-zero exit
# on any failure.
# The long runs of the stress test and the fuzzer, under KASAN too, need
# longer than lib.sh's default.
[[ ${HTW_FULL:-0} == 1 ]] && : "${HTW_TIMEOUT:=1200}"
# shellcheck source=rig/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=rig/tier.sh
source "$RIG_DIR/tier.sh"

REPORT=$RIG_DIR/report.py
# The tiers that keep a warm "make check" within three minutes on two
# cores: the UML and Debian kernels users run most, and 7.2 through DKMS.
QUICK_TIERS="uml deb6.12 deb7.2"
: "${HTW_FULL:=0}"
[[ $HTW_FULL == [01] ]] || die "HTW_FULL is 0 or 1, not '$HTW_FULL'"
if ((HTW_FULL)); then
	RUN=$HTW_BUILD/check-full
	: "${HTW_TIERS:=$(tier_names | grep -vxF -f <(tr ' ' '\n' <<<"$QUICK_TIERS") | xargs)}"
	HTW_SELFTEST=0
else
	RUN=$HTW_BUILD/check
	: "${HTW_TIERS:=$QUICK_TIERS}"
fi
HTW_TIERS=$(xargs <<<"$HTW_TIERS")
# An injected run is itself the proof; it needs no self-test on top.
: "${HTW_SELFTEST:=$([[ -n $HTW_INJECT ]] && echo 0 || echo 1)}"

# The injections of the self-test, and the failure each must cause:
# "HTW_INJECT value:group of the failed test[:its name]".
# injection:group that must fail[:test that must fail]:user programs to run
SELFTESTS=(
	"kunit:kunit::-"
	"user:user::inject_test"
	"warn:rig:kernel log clean:-"
)

# section NAME - start a part of the run; say how long the last one took
SECTION=
section() {
	[[ -z $SECTION ]] || log "$SECTION took $((SECONDS - SECTION_START))s"
	SECTION=$1 SECTION_START=$SECONDS
	[[ -n $1 ]] && printf '\n== %s\n' "$1"
	return 0
}

# Whatever stops this script early still leaves CI a last line to read.
on_exit() {
	local rc=$?
	((rc == 0)) || [[ -s $RUN/summary ]] ||
		echo "0 passed, 1 failed" | tee "$RUN/summary"
}

# build_programs RUN UNIT - the static programs, recorded as tests: a
# program that does not build must not just vanish from the run.
build_programs() {
	local run=$1 path rc
	build_user_binaries "$run/bin"
	while read -r path rc; do
		"$REPORT" record "$run/programs.json" programs build "$path" \
			"$( ((rc)) && echo fail || echo pass)" \
			"$( ((rc)) && grep -A3 "^$HTW_TOP/$path" "$run/bin/build.log" | head -n 8)"
	done <"$run/bin/status"
}

# selftest - each deliberate failure, alone, must turn the UML tier red,
# and nothing else may fail in that run: a run red for another reason (a
# hang, a crash) proves nothing about the rig, and is a failure of its own.
# Its own build directory keeps the injected code out of the real run.
selftest() {
	local spec inj group name programs dir
	for spec in "${SELFTESTS[@]}"; do
		IFS=: read -r inj group name programs <<<"$spec"
		dir=$HTW_BUILD/selftest/$inj
		rm -rf "$dir"
		mkdir -p "$dir"
		log "self-test: HTW_INJECT=$inj"
		(
			export HTW_INJECT=$inj
			# Only what the injection needs: the rest ran above.
			build_user_binaries "$dir/bin" "$programs"
			run_tier "$dir" uml check
		) >"$dir/rig.log" 2>&1 || true
		"$REPORT" tier "$dir/uml" "$KUNIT_PY" >"$dir/summary.txt"
		if "$REPORT" expect "$dir/uml/result.json" "$group" ${name:+"$name"}; then
			"$REPORT" record "$RUN/selftest.json" selftest selftest \
				"HTW_INJECT=$inj turns the run red" pass
		else
			"$REPORT" record "$RUN/selftest.json" selftest selftest \
				"HTW_INJECT=$inj turns the run red" fail \
				"expected a failed $group test ${name:+"($name)"} and no other failure; see $dir"
		fi
		sed 's/^/  /' "$dir/summary.txt"
	done
}

# install_check - "make install" from a copy of the checkout into a staging
# root, against Debian 12's 6.12 headers, as a user would install htw; the
# module, its depmod entry, the uapi header, htwctl, and libhtw with its
# header, pkg-config file and manual pages must all be there, and a program
# built with pkg-config's flags must link to the installed libhtw.so and
# run.
install_check() {
	local dir=$RUN/install rel rc=0 f
	local -a missing=()
	rm -rf "$dir"
	mkdir -p "$dir/src"
	(cd "$HTW_TOP" && git ls-files -co --exclude-standard | grep -v '^build/' |
		tar -cf - -T -) | tar -xf - -C "$dir/src"
	(
		# shellcheck source=rig/debian.sh
		source "$RIG_DIR/debian.sh"
		debian_prepare deb6.12 "$(tier_field deb6.12 3)"
		# No signing key comes with Debian's headers.
		make -C "$dir/src" install KDIR="$KDIR" DESTDIR="$dir/root" \
			HTW_BUILD="$dir/build" CONFIG_MODULE_SIG_ALL= &&
			cp "$KDIR/include/config/kernel.release" "$dir/release"
	) >"$dir/install.log" 2>&1 || rc=$?
	rel=$(cat "$dir/release" 2>/dev/null || true)
	for f in "lib/modules/$rel/updates/htw.ko*" "usr/local/include/linux/htw.h" \
		 "usr/local/bin/htwctl" usr/local/include/libhtw.h \
		 usr/local/lib/libhtw.a usr/local/lib/libhtw.so.1 \
		 usr/local/lib/libhtw.so usr/local/lib/pkgconfig/libhtw.pc \
		 usr/local/share/man/man4/htw.4 usr/local/share/man/man3/libhtw.3 \
		 usr/local/share/man/man3/htw_oplist_submit.3; do
		compgen -G "$dir/root/$f" >/dev/null || missing+=("$f")
	done
	# Only htw itself: not the sample, the benchmark or the tests.
	compgen -G "$dir/root/lib/modules/$rel/updates/*/*.ko*" >/dev/null &&
		missing+=("nothing but htw.ko (found others)")
	grep -qs 'updates/htw\.ko' "$dir/root/lib/modules/$rel/modules.dep" ||
		missing+=("htw in modules.dep")
	libhtw_link_check "$dir" || missing+=("a program linked by pkg-config to libhtw.so")
	if ((rc == 0 && ${#missing[@]} == 0)); then
		"$REPORT" record "$RUN/install.json" install install "make install" pass
	else
		"$REPORT" record "$RUN/install.json" install install "make install" fail \
			"$( ((rc)) && tail -n 8 "$dir/install.log"
			    ((${#missing[@]})) && printf 'missing: %s\n' "${missing[@]}")"
	fi
}

# libhtw_link_check DIR - a program built with the installed libhtw.pc's
# flags, against the installed headers and libhtw.so, runs (it needs no
# device: htw_clock_now() and htw_oplist_init() only).
libhtw_link_check() {
	local dir=$1 root=$1/root
	cat >"$dir/prog.c" <<-'EOF'
		#include <libhtw.h>

		int main(void)
		{
			struct htw_oplist list;

			if (!htw_clock_now(0) || htw_oplist_init(&list, 1))
				return 1;
			htw_oplist_free(&list);
			return 0;
		}
	EOF
	# shellcheck disable=SC2046 # pkg-config's flags are words
	gcc -o "$dir/prog" "$dir/prog.c" \
		$(PKG_CONFIG_SYSROOT_DIR=$root \
		  PKG_CONFIG_LIBDIR=$root/usr/local/lib/pkgconfig \
		  pkg-config --cflags --libs libhtw) >>"$dir/install.log" 2>&1 &&
		LD_LIBRARY_PATH=$root/usr/local/lib "$dir/prog" &&
		LD_LIBRARY_PATH=$root/usr/local/lib ldd "$dir/prog" |
		grep -q "libhtw.so.1 => $root/usr/local/lib/libhtw.so.1"
}

# run_judged UNIT NAME SCRIPT - run rig/SCRIPT, which records its verdicts
# in $RUN/UNIT.json; one that died before it judged anything has failed.
run_judged() {
	local unit=$1 name=$2 script=$3 json=$RUN/$1.json
	"$RIG_DIR/$script" "$json" || true
	[[ -s $json ]] ||
		"$REPORT" record "$json" "$unit" "$unit" "$name" fail \
			"rig/$script died; see its messages above"
	results+=("$json")
}

main() {
	local tier
	local -a results=()

	rm -rf "$RUN"
	mkdir -p "$RUN"
	trap on_exit EXIT
	section "packages and kernel source"
	"$RIG_DIR/deps.sh"
	ksrc_prepare
	KUNIT_PY=$KSRC/tools/testing/kunit/kunit.py

	if ! ((HTW_FULL)); then
		section "lint"
		run_judged lint "lint ran" lint.sh
	fi

	section "programs"
	build_programs "$RUN"
	results+=("$RUN/programs.json")

	if ((HTW_FULL)); then
		section "the packages in Debian 12: installed, used, purged"
		run_judged debinstall "the packages installed in Debian 12" debinstall.sh
	else
		section "make deb"
		run_judged packages "make deb" deb.sh
	fi

	for tier in $HTW_TIERS; do
		section "tier $tier"
		(run_tier "$RUN" "$tier" check) || true
		"$REPORT" tier "$RUN/$tier" "$KUNIT_PY"
		results+=("$RUN/$tier/result.json")
	done

	# It builds against Debian 6.12's headers: with that tier only.
	if [[ " $HTW_TIERS " == *" deb6.12 "* ]]; then
		section "make install"
		install_check
		results+=("$RUN/install.json")
	fi

	if ((HTW_SELFTEST)); then
		section "self-test: each deliberate failure turns the UML tier red"
		selftest
		results+=("$RUN/selftest.json")
	fi

	section ""
	log "make check$( ((HTW_FULL)) && echo -full) took ${SECONDS}s"
	"$REPORT" total --line "$RUN/summary" "${results[@]}"
}

main "$@"
