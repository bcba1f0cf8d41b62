#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rig/guest.sh - PID 1 of every guest the rig boots.
#
# The same script runs in UML, where / is the host's root through hostfs,
# and as /init of an initramfs under QEMU.  It loads the modules, runs the
# tests (or the demo), unloads the modules in reverse and powers off.  It
# judges nothing: it records what happened under $HTW_OUT and the host's
# rig/report.py decides.  POSIX sh: it runs under dash and busybox ash.
#
# The plan (the tier's kind writes it with write_plan) sets:
#   HTW_MODE     check: run the tests; run: run the demo; bench: run the
#                user-space benchmark (the kernel's runs as its module loads)
#   HTW_OUT      where the results go
#   HTW_MODULES  modules to load, in order
#   HTW_TESTS    test programs to run
#   HTW_TOOLS    directory of the tools (htwctl, ...), put on $PATH
#   HTW_DEMO     the demo script for "run"
#   HTW_EXPORT   a serial port to copy each result to as soon as it exists,
#                for guests that cannot write the host's files
#   HTW_FULL     1 in make check-full: the tests run their long versions
#   HTW_BENCH_ARGS  arguments of htw_bench in "bench"
#   HTW_RINGBENCH_ARGS  arguments of htw_ringbench in "bench", which runs
#                where the tier built it (under QEMU, not in UML)
#   HTW_PURGATORY_ARGS  arguments of htw_purgatory in "bench", likewise
#   HTW_SERVER_ARGS  arguments of htw_server --bench in "bench", likewise
#   HTW_ARGS_<module>  parameters to load that module with (rig/modparams)
BB=/bin/busybox
# shellcheck source=/dev/null
. "${HTW_PLAN:-/htw/plan}"
# The tests read these two: how long to run, and which modules they may
# unload and load again.
export HTW_FULL HTW_MODULES
PATH=$HTW_TOOLS:/usr/sbin:/usr/bin:/sbin:/bin
export PATH

say() { echo "htw-guest: $*" >/dev/console; }

# mark - a line in the kernel log that tells the host where each step's
# kernel messages (a KUnit module's KTAP above all) begin.
mark() { echo "htw-rig: $*" >/dev/kmsg; }

# send FILE... - copy files of $HTW_OUT to the host now, framed for
# rig/debian.sh's unframe, so that a guest that hangs later still leaves
# what it did so far.  A file sent again replaces its earlier copy.
send() {
	[ -n "$HTW_EXPORT" ] || return 0
	for f in "$@"; do
		echo "==htw-file $f"
		cat "$HTW_OUT/$f"
		# unframe takes one newline off every file.
		echo
	done >"$HTW_EXPORT"
}

step() {
	echo "$*" >>"$HTW_OUT/steps"
	send steps
}

modname() { basename "$1" .ko | tr - _; }

$BB mount -t proc proc /proc
$BB mount -t sysfs sysfs /sys
$BB mount -t devtmpfs devtmpfs /dev
# Loopback up, as any init brings it up: htw_server talks over it.  A
# kernel without networking (UML) has none.
$BB ip link set lo up 2>/dev/null
# Whatever a step prints that is not a result goes to the console.
exec </dev/null >/dev/console 2>&1
$BB mkdir -p "$HTW_OUT/tests"
: >"$HTW_OUT/steps"

loaded=
for m in $HTW_MODULES; do
	mark "load $(modname "$m")"
	eval "args=\${HTW_ARGS_$(modname "$m"):-}"
	say "insmod $(modname "$m") $args"
	# shellcheck disable=SC2086 # the parameters are words
	$BB insmod "$m" $args
	rc=$?
	step "load $(modname "$m") $rc"
	[ $rc -eq 0 ] && loaded="$(modname "$m") $loaded"
done

if [ "$HTW_MODE" = run ]; then
	mark "demo"
	sh "$HTW_DEMO" </dev/console >/dev/console 2>&1
elif [ "$HTW_MODE" = bench ]; then
	mark "bench"
	if command -v htw_bench >/dev/null; then
		say "running htw_bench"
		# shellcheck disable=SC2086 # the arguments are words
		htw_bench $HTW_BENCH_ARGS >"$HTW_OUT/bench-user.txt" 2>&1 </dev/null
		step "bench htw_bench $?"
		send bench-user.txt
	fi
	if command -v htw_ringbench >/dev/null; then
		say "running htw_ringbench"
		# shellcheck disable=SC2086 # the arguments are words
		htw_ringbench $HTW_RINGBENCH_ARGS >>"$HTW_OUT/bench-user.txt" 2>&1 </dev/null
		step "bench htw_ringbench $?"
		send bench-user.txt
	fi
	if command -v htw_purgatory >/dev/null; then
		say "running htw_purgatory"
		# shellcheck disable=SC2086 # the arguments are words
		htw_purgatory $HTW_PURGATORY_ARGS >>"$HTW_OUT/bench-user.txt" 2>&1 </dev/null
		step "bench htw_purgatory $?"
		send bench-user.txt
	fi
	if command -v htw_server >/dev/null; then
		say "running htw_server"
		# shellcheck disable=SC2086 # the arguments are words
		htw_server --bench $HTW_SERVER_ARGS >>"$HTW_OUT/bench-user.txt" 2>&1 </dev/null
		step "bench htw_server $?"
		send bench-user.txt
	fi
else
	for t in $HTW_TESTS; do
		name=$(basename "$t")
		mark "test $name"
		say "running $name"
		"$t" >"$HTW_OUT/tests/$name.tap" 2>&1 </dev/null
		rc=$?
		send "tests/$name.tap"
		step "test $name $rc"
	done
fi

# $loaded is already in reverse order of loading.
for m in $loaded; do
	mark "unload $m"
	say "rmmod $m"
	$BB rmmod "$m"
	step "unload $m $?"
done

# A kernel with kmemleak: once the modules are gone, scan, let what is left
# age past kmemleak's minimum (5 s), scan again, and keep the report for
# rig/report.py, which fails on a leak whose trace names htw.
# A test may have mounted debugfs already.
[ -e /sys/kernel/debug/kmemleak ] ||
	$BB mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
if [ -e /sys/kernel/debug/kmemleak ]; then
	mark "kmemleak"
	echo scan >/sys/kernel/debug/kmemleak
	$BB sleep 6
	echo scan >/sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak >"$HTW_OUT/kmemleak.txt"
	send kmemleak.txt
fi

mark "end"
$BB dmesg >"$HTW_OUT/dmesg.txt"
echo "done" >"$HTW_OUT/done"
send dmesg.txt "done"

say "power off"
$BB poweroff -f
