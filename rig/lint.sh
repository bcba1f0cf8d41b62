#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rig/lint.sh [RESULT] - checkpatch.pl --strict on every C file of htw, and
# a sparse build of the modules (C=2: every file, not only the ones make
# rebuilds) against the UML kernel, whose KUnit support compiles the tests
# too; and libhtw's manual pages (groff -ww: every warning) against its
# symbol map (a declaration and a page for each symbol).  Zero findings of
# any or it fails.  With RESULT, the three verdicts are also recorded there
# for rig/report.py.
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

# Each page clean under groff -ww (a link page: its target exists); each
# symbol libhtw exports declared in its header and with a page of its own.
run_manlint() {
	local page target sym
	: >"$OUT/man.log"
	for page in "$HTW_TOP"/man/*.[34]; do
		target=$(sed -n 's/^\.so man[34]\///p' "$page")
		if [[ -n $target ]]; then
			[[ -e $HTW_TOP/man/$target ]] ||
				echo "${page#"$HTW_TOP"/}: .so to a missing page" >>"$OUT/man.log"
			continue
		fi
		groff -man -ww -z -t "$page" 2>&1 | sed "s|^|${page#"$HTW_TOP"/}: |" >>"$OUT/man.log"
	done
	for sym in $(sed -n 's/^[[:space:]]*\(htw_[a-z_]*\);$/\1/p' "$HTW_TOP/lib/libhtw.map"); do
		grep -q "[ *]$sym(" "$HTW_TOP/lib/libhtw.h" ||
			echo "lib/libhtw.map: $sym is not declared in lib/libhtw.h" >>"$OUT/man.log"
		[[ -e $HTW_TOP/man/$sym.3 ]] ||
			echo "lib/libhtw.map: $sym has no man/$sym.3" >>"$OUT/man.log"
	done
	[[ ! -s $OUT/man.log ]]
}

# judge WHAT LOG CHECK - run CHECK, which leaves its findings in LOG, and
# record its verdict as WHAT; the findings go to stderr too.
judge() {
	local what=$1 findings=$2
	shift 2
	if "$@"; then
		record "$what" pass
		return 0
	fi
	log "$what found:"
	cat "$findings" >&2
	record "$what" fail "$(head -n 20 "$findings")"
	return 1
}

main() {
	local status=0
	rm -rf "$OUT"
	mkdir -p "$OUT"
	ksrc_prepare
	uml_prepare uml "$(tier_field uml 3)"

	judge "checkpatch --strict" "$OUT/checkpatch.log" run_checkpatch || status=1
	judge "sparse and W=1 build" "$OUT/sparse.log" run_sparse || status=1
	judge "manual pages" "$OUT/man.log" run_manlint || status=1
	((status)) || log "lint: no findings"
	return "$status"
}

main "$@"
