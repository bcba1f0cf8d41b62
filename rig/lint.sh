#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rig/lint.sh [RESULT] - checkpatch.pl --strict on every C file of htw, and
# a sparse build of the modules (C=2: every file, not only the ones make
# rebuilds) against the UML kernel, whose KUnit support compiles the tests
# too.  Zero findings of either or it fails.  With RESULT, the two verdicts
# are also recorded there for rig/report.py.
# shellcheck source=rig/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=rig/uml.sh
source "$RIG_DIR/uml.sh"

RESULT=${1:-}
OUT=$HTW_BUILD/lint

record() {
	[[ -n $RESULT ]] || return 0
	"$RIG_DIR/report.py" record "$RESULT" lint lint "$@"
}

# Every C file of the project: all but the rig's output and what an
# in-tree "make" generates.
c_files() {
	(cd "$HTW_TOP" && find . \( -path ./build -o -path ./.git \) -prune -o \
		-type f -name '*.[ch]' ! -name '*.mod.c' -print | sed 's|^\./||' | sort)
}

run_checkpatch() {
	local -a files
	mapfile -t files < <(c_files)
	(cd "$HTW_TOP" && "$KSRC/scripts/checkpatch.pl" --strict --no-tree \
		--quiet --show-types --no-summary -f "${files[@]}") >"$OUT/checkpatch.log" 2>&1
}

# sparse and the compiler (W=1) both report as "file:line:col: warning:".
run_sparse() {
	if ! build_modules "$OUT" "$KDIR" "${KMAKE[@]}" C=2 W=1 2>/dev/null; then
		tail -n 20 "$OUT/build.log" >"$OUT/sparse.log"
		return 1
	fi
	! grep -E ': (warning|error):' "$OUT/build.log" >"$OUT/sparse.log"
}

main() {
	local status=0
	rm -rf "$OUT"
	mkdir -p "$OUT"
	ksrc_prepare
	uml_prepare uml "$(tier_field uml 3)"

	if run_checkpatch; then
		record "checkpatch --strict" pass
	else
		log "checkpatch.pl found:"
		cat "$OUT/checkpatch.log" >&2
		record "checkpatch --strict" fail "$(head -n 20 "$OUT/checkpatch.log")"
		status=1
	fi
	if run_sparse; then
		record "sparse and W=1 build" pass
	else
		log "sparse and the W=1 build found:"
		cat "$OUT/sparse.log" >&2
		record "sparse and W=1 build" fail "$(head -n 20 "$OUT/sparse.log")"
		status=1
	fi
	((status)) || log "lint: no findings"
	return "$status"
}

main "$@"
