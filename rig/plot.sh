#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rig/plot.sh TIER_DIR [OUT_DIR] - the charts of a tier's user-space
# benchmarks, one line per way, log-log, drawn by gnuplot:
#   extend     tools/htw_ringbench.c's extend measure: ns per extension of
#              an idle timeout (y) against connections (x), from its
#              "plot extend WAY CONNECTIONS NS" lines;
#   purgatory  tools/htw_purgatory.c: CPU ns per request (y) against
#              requests in flight (x), from its
#              "plot purgatory WAY IN_FLIGHT NS" lines;
#   server     tools/htw_server.c: the server's requests per CPU second (y)
#              against connections (x), from its
#              "plot server WAY CONNECTIONS REQUESTS" lines.
#
# Reads a tier's TIER_DIR/out/bench-user.txt (rig/bench.sh runs this after
# "make bench"), and writes, for each chart it has lines of,
# OUT_DIR/<tier>-<chart>.dat, one block per way, and
# OUT_DIR/<tier>-<chart>.svg (OUT_DIR: $HTW_BUILD/bench).
# HTW_PLOT_FORMAT=png draws PNGs instead, to look at.
# shellcheck source=rig/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHARTS=(extend purgatory server)

# label CHART WAY - what the chart calls each way
label() {
	case $1:$2 in
	extend:timerfd) echo "timerfd_settime()" ;;
	extend:ioctl) echo "htw: HTW_IOC_MODIFY" ;;
	extend:batch) echo "htw: HTW_IOC_BATCH of 64" ;;
	extend:ring) echo "htw ring: a store" ;;
	extend:libevent_heap) echo "libevent: event_add(), min-heap" ;;
	extend:libevent_common) echo "libevent: event_add(), common timeout" ;;
	extend:io_uring) echo "io_uring: TIMEOUT_UPDATE, 64 a submit" ;;
	purgatory:timeouts) echo "libhtw: htw_timeout_start()/stop()" ;;
	purgatory:ring) echo "htw ring: arm and cancel, a submit a turn" ;;
	purgatory:ioctl) echo "htw: HTW_IOC_BATCH a turn" ;;
	purgatory:libevent_heap) echo "libevent: event_add()/del(), min-heap" ;;
	purgatory:libevent_common) echo "libevent: event_add()/del(), common timeout" ;;
	purgatory:io_uring) echo "io_uring: TIMEOUT and TIMEOUT_REMOVE" ;;
	purgatory:timerfd) echo "timerfd_settime(): arm and disarm" ;;
	purgatory:driver) echo "the driver alone, no timers" ;;
	server:htw) echo "htw: ring idle timeouts, libhtw request timeouts" ;;
	server:libevent) echo "libevent: timer events on common timeouts" ;;
	server:io_uring) echo "io_uring: a timeout a connection, TIMEOUT_UPDATE" ;;
	server:timerfd) echo "timerfd: one a connection, timerfd_settime()" ;;
	server:none) echo "no timers at all (what the others cannot beat)" ;;
	*) echo "$2" ;;
	esac
}

# axes CHART - the chart's title and its axes' labels, a line each
axes() {
	case $1 in
	extend)
		echo "Extending an idle timeout of 10 s"
		echo "connections (idle timeouts pending)"
		echo "ns per extension (median of the rounds)"
		;;
	purgatory)
		echo "Request timeouts of 100 ms, 1 s or 30 s, stopped as requests complete"
		echo "requests in flight"
		echo "CPU ns per request, user and system (median of the rounds)"
		;;
	server)
		echo "A TCP server's requests, with idle and request timeouts, over loopback"
		echo "connections"
		echo "requests per CPU second of the server (user and system)"
		;;
	esac
}

# write_dat SRC DAT CHART WAY... - one block per way, each sorted by its
# x; gnuplot's "index" numbers the blocks.
write_dat() {
	local src=$1 dat=$2 chart=$3 way
	shift 3
	for way in "$@"; do
		printf '# %s\n' "$way"
		awk -v c="$chart" -v w="$way" \
			'$1 == "plot" && $2 == c && $3 == w { print $4, $5 }' \
			"$src" | sort -n
		printf '\n\n'
	done >"$dat"
}

# has CHART SRC - whether SRC has lines for CHART
has() {
	grep -qs "^plot $1 " "$2"
}

# draw SRC OUT TIER DIR CHART - one chart of the lines of SRC
draw() {
	local src=$1 out=$2 tier=$3 dir=$4 chart=$5 fmt=${HTW_PLOT_FORMAT:-svg}
	local dat=$out/$tier-$chart.dat img=$out/$tier-$chart.$fmt
	local title xlabel ylabel i=0 way plots='' xmin xmax
	local -a ways
	# The ways in the order they first come.
	mapfile -t ways < <(awk -v c="$chart" \
		'$1 == "plot" && $2 == c && !seen[$3]++ { print $3 }' "$src")
	write_dat "$src" "$dat" "$chart" "${ways[@]}"
	# A log axis rounds out to decades: hold it to the counts measured.
	read -r xmin xmax < <(awk 'NF == 2 && $1 !~ /^#/ {
		if (!min || $1 < min) min = $1; if ($1 > max) max = $1 }
		END { print min, max }' "$dat")
	for way in "${ways[@]}"; do
		plots+="${plots:+, }'$dat' index $i using 1:2 with linespoints"
		plots+=" title '$(label "$chart" "$way")'"
		i=$((i + 1))
	done
	{ read -r title; read -r xlabel; read -r ylabel; } < <(axes "$chart")
	title+=": $tier"
	[[ -r $dir/kernel ]] && title+="\\n$(tr -d "'\"" <"$dir/kernel")"
	gnuplot <<-GNUPLOT
		set terminal $fmt size 800,640 noenhanced
		set output '$img'
		set title "$title"
		set xlabel '$xlabel'
		set ylabel '$ylabel'
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

main() {
	local dir=${1:?usage: rig/plot.sh TIER_DIR [OUT_DIR]}
	local out=${2:-$HTW_BUILD/bench} fmt=${HTW_PLOT_FORMAT:-svg}
	local tier src chart drawn=0
	tier=$(basename "$dir")
	src=$dir/out/bench-user.txt
	[[ -r $src ]] || die "no $src"
	[[ $fmt == svg || $fmt == png ]] || die "HTW_PLOT_FORMAT is svg or png, not '$fmt'"
	command -v gnuplot >/dev/null || die "no gnuplot (rig/deps.sh installs gnuplot-nox)"
	mkdir -p "$out"
	for chart in "${CHARTS[@]}"; do
		has "$chart" "$src" || continue
		draw "$src" "$out" "$tier" "$dir" "$chart"
		drawn=1
	done
	((drawn)) || die "no 'plot' lines in $src"
}

main "$@"
