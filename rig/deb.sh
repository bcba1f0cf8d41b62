#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rig/deb.sh [RESULT] - build htw's Debian packages (debian/) from a copy of
# the checkout, as "make deb" does, and hold them to lintian at its default
# level: htw-dkms, libhtw1, libhtw-dev and htw-tools, into $HTW_BUILD/deb.
# With RESULT, record the verdicts there for rig/report.py (make check).
# shellcheck source=rig/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

OUT=$HTW_BUILD/deb
REPORT=$RIG_DIR/report.py

# build_packages - dpkg-buildpackage in a copy named as the source package
# wants, so that nothing of the build is left in the checkout.
build_packages() {
	local version src
	version=$(dpkg-parsechangelog -l "$HTW_TOP/debian/changelog" -SVersion)
	src=$OUT/htw-$version
	rm -rf "$OUT"
	mkdir -p "$src"
	(cd "$HTW_TOP" && git ls-files -co --exclude-standard | grep -v '^build/' |
		tar -cf - -T -) | tar -xf - -C "$src"
	(cd "$src" && dpkg-buildpackage -us -uc -b) >"$OUT/build.log" 2>&1
}

run_lintian() {
	lintian --fail-on error,warning "$OUT"/htw_*.changes >"$OUT/lintian.log" 2>&1
}

main() {
	local result=${1:-} rc=0 lrc=0
	build_packages || rc=$?
	((rc)) || run_lintian || lrc=$?
	if ((rc)); then
		log "the packages did not build; $OUT/build.log ends:"
		tail -n 20 "$OUT/build.log" >&2
	elif ((lrc)); then
		log "lintian found:"
		cat "$OUT/lintian.log" >&2
	else
		log "built $(cd "$OUT" && echo ./*.deb)"
	fi
	if [[ -n $result ]]; then
		"$REPORT" record "$result" packages packages "make deb" \
			"$( ((rc)) && echo fail || echo pass)" \
			"$( ((rc)) && tail -n 8 "$OUT/build.log")"
		"$REPORT" record "$result" packages packages "lintian" \
			"$( ((rc || lrc)) && echo fail || echo pass)" \
			"$( ((lrc)) && head -n 8 "$OUT/lintian.log")"
	fi
	((rc == 0 && lrc == 0))
}

main "$@"
