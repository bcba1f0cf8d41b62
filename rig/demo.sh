#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# rig/demo.sh - what "make run" shows, inside the guest, with htw loaded.
# The tools (htwctl, ...) are on $PATH.
echo
echo "== htw on Linux $(uname -r)"
if command -v htwctl >/dev/null 2>&1; then
	htwctl demo
else
	# Until htwctl exists: show that the module and its device are there.
	grep '^htw ' /proc/modules
	ls -l /dev/htw
fi
echo
