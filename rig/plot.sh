#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rig/plot.sh TIER_DIR [OUT_DIR] - the chart of tools/htw_ringbench.c's
# extend measure: ns per extension of an idle timeout (y) against
# connections (x), one line per way, log-log, drawn by gnuplot.
#
# Reads the "plot extend WAY CONNECTIONS NS" lines of a tier's
# TIER_DIR/out/bench-user.txt (rig/bench.sh runs this after "make bench"),
# and writes OUT_DIR/<tier>-extend.dat, one block per way, and
# OUT_DIR/<tier>-extend.svg (OUT_DIR: $HTW_BUILD/bench).  HTW_PLOT_FORMAT=png
# draws a PNG instead, to look at.
# shellcheck source=rig/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# label WAY - what the chart calls each way of htw_ringbench
label() {
	case $1 in
	timerfd) echo "timerfd_settime()" ;;
	ioctl) echo "htw: HTW_IOC_MODIFY" ;;
	batch) echo "htw: HTW_IOC_BATCH of 64" ;;
	ring) echo "htw ring: a store" ;;
	libevent_heap) echo "libevent: event_add(), min-heap" ;;
	libevent_common) echo "libevent: event_add(), common timeout" ;;
	io_uring) echo "io_uring: TIMEOUT_UPDATE, 64 a submit" ;;
	*) echo "$1" ;;
	esac
}

# write_dat SRC DAT WAY... - one block per way, each sorted by
# connections; gnuplot's "index" numbers the blocks.
write_dat() {
	local src=$1 dat=$2 way
	shift 2
	for way in "$@"; do
		printf '# %s\n' "$way"
		awk -v w="$way" '$1 == "plot" && $2 == "extend" && $3 == w { print $4, $5 }' \
			"$src" | sort -n
		printf '\n\n'
	done >"$dat"
}

main() {
	local dir=${1:?usage: rig/plot.sh TIER_DIR [OUT_DIR]}
	local out=${2:-$HTW_BUILD/bench} fmt=${HTW_PLOT_FORMAT:-svg}
	local tier src dat img title i=0 way plots='' xmin xmax
	local -a ways
	tier=$(basename "$dir")
	src=$dir/out/bench-user.txt
	[[ -r $src ]] || die "no $src"
	[[ $fmt == svg || $fmt == png ]] || die "HTW_PLOT_FORMAT is svg or png, not '$fmt'"
	command -v gnuplot >/dev/null || die "no gnuplot (rig/deps.sh installs gnuplot-nox)"
	mkdir -p "$out"
	dat=$out/$tier-extend.dat
	img=$out/$tier-extend.$fmt
	# The ways in the order they first come.
	mapfile -t ways < <(awk '$1 == "plot" && $2 == "extend" && !seen[$3]++ { print $3 }' "$src")
	((${#ways[@]})) || die "no 'plot extend' lines in $src"
	write_dat "$src" "$dat" "${ways[@]}"
	# A log axis rounds out to decades: hold it to the counts measured.
	read -r xmin xmax < <(awk 'NF == 2 && $1 !~ /^#/ {
		if (!min || $1 < min) min = $1; if ($1 > max) max = $1 }
		END { print min, max }' "$dat")
	for way in "${ways[@]}"; do
		plots+="${plots:+, }'$dat' index $i using 1:2 with linespoints"
		plots+=" title '$(label "$way")'"
		i=$((i + 1))
	done
	title="Extending an idle timeout of 10 s: $tier"
	[[ -r $dir/kernel ]] && title+="\\n$(tr -d "'\"" <"$dir/kernel")"
	gnuplot <<-GNUPLOT
		set terminal $fmt size 800,640 noenhanced
		set output '$img'
		set title "$title"
		set xlabel 'connections (idle timeouts pending)'
		set ylabel 'ns per extension (median of the rounds)'
		set logscale xy
		set format x '%.0f'
		set format y '%g'
		set xrange [$xmin / 2 : $xmax * 2]
		set grid xtics ytics mytics
		set key outside bottom center horizontal maxcols 2
		plot $plots
	GNUPLOT
	log "plot: $img"
}

main "$@"
