#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rig/demo.sh - what "make run" shows, inside the guest, with htw loaded.
# The tools (htwctl, htw_idle, htw_purgatory, ...) are on $PATH.
echo
echo "== htw on Linux $(uname -r)"
if command -v htwctl >/dev/null 2>&1; then
	htwctl demo
else
	# Until htwctl exists: show that the module and its device are there.
	grep '^htw ' /proc/modules
	ls -l /dev/htw
fi
# Ring timers: idle timeouts pushed later by stores, small enough to take
# about a second and a half.
if command -v htw_idle >/dev/null 2>&1; then
	echo
	echo "== idle timeouts on ring timers (tools/htw_idle.c)"
	htw_idle -n 1000 -t 200ms -s 1s
fi
# Request timeouts on libhtw: 10,000 requests in flight for two seconds.
if command -v htw_purgatory >/dev/null 2>&1; then
	echo
	echo "== request timeouts, libhtw (tools/htw_purgatory.c)"
	htw_purgatory --demo
fi
echo
