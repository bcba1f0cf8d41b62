# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# rig/debian.sh - the "debian" kind of tier: the kernel a Debian 12 user
# really runs (the newest cloud kernel of a series), booted under QEMU with
# an initramfs of busybox, the modules and the static test programs.
# Sourced by rig/tier.sh; see rig/uml.sh for what a kind defines.
#
# The module builds against Debian's own headers packages, as a Debian
# user's would.  They are unpacked into the cache rather than installed:
# installing them would install the kernel image too (the 6.12 headers
# depend on it), and the host has no use for one.
# shellcheck disable=SC2034 # KDIR, KMAKE and KDESC are for rig/tier.sh

# debian_kver SERIES - the newest Debian cloud kernel of SERIES that apt
# knows, e.g. 6.12.117+deb12-cloud-amd64
debian_kver() {
	local series=$1 pkg
	pkg=$(apt-cache search --names-only \
		"^linux-image-${series//./\\.}\\.[0-9].*-cloud-amd64-unsigned\$" |
		awk '{ print $1 }' | sort -V | tail -n 1)
	[[ -n $pkg ]] || die "apt knows no Debian $series cloud kernel"
	pkg=${pkg#linux-image-}
	echo "${pkg%-unsigned}"
}

# debian_prepare NAME SERIES
debian_prepare() {
	local kver
	kver=$(debian_kver "$2") || die "no Debian $2 cloud kernel"
	[[ -n $kver ]] || die "no Debian $2 cloud kernel"
	DEB_DIR=$HTW_CACHE/debian/$kver
	[[ -e $DEB_DIR/.htw-ready ]] || with_lock "debian-$kver" debian_unpack "$DEB_DIR" "$kver"
	cache_touch "$DEB_DIR"
	KDIR=$DEB_DIR/usr/src/linux-headers-$kver
	KMAKE=()
	KBUILD_VIA=
	KDESC="Debian $kver (QEMU, TCG)"
	DEB_VMLINUZ=$DEB_DIR/boot/vmlinuz-$kver
}

debian_unpack() {
	local dir=$1 kver=$2 tmp deb
	local -a pkgs
	[[ -e $dir/.htw-ready ]] && return 0	# another checkout got it
	# The headers need their -common tree and kbuild's scripts, whose
	# package names carry versions of their own: ask apt.
	mapfile -t pkgs < <(apt-cache depends "linux-headers-$kver" |
		awk '$1 == "Depends:" && $2 ~ /^linux-(headers|kbuild)-/ { print $2 }')
	pkgs+=("linux-headers-$kver" "linux-image-$kver-unsigned")
	log "fetching ${pkgs[*]}"
	rm -rf "${dir:?}"
	mkdir -p "$dir"
	tmp=$(mktemp -d "$HTW_CACHE/debian/.fetch.XXXXXX")
	# apt's sandbox user cannot write into root's cache; the files are
	# checked against apt's signed lists all the same.
	(cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download "${pkgs[@]}" >/dev/null) ||
		die "apt-get download ${pkgs[*]} failed (stale lists? run apt-get update)"
	# Each step says when it fails: the caller may run with errexit off.
	for deb in "$tmp"/*.deb; do
		dpkg -x "$deb" "$dir" || die "dpkg -x $deb failed"
	done
	rm -rf "$tmp"
	# The headers' Makefile includes the -common tree by its installed,
	# absolute path; point it at the unpacked one.
	sed -i "s|^include /usr/src/|include $dir/usr/src/|" \
		"$dir/usr/src/linux-headers-$kver/Makefile"
	touch "$dir/.htw-ready"
}

# debian_stage STAGE - what every guest's root has: busybox and its
# applets, /dev/console, rig/guest.sh as /init, and htw's directories
debian_stage() {
	local stage=$1 a
	rm -rf "$stage"
	mkdir -p "$stage"/{bin,dev,proc,sys,tmp,etc,htw/modules,htw/tests,htw/out}
	cp /bin/busybox "$stage/bin/"
	for a in $(/bin/busybox --list); do
		[[ -e $stage/bin/$a ]] || ln -s busybox "$stage/bin/$a"
	done
	# The kernel opens /dev/console for init before devtmpfs is mounted.
	mknod "$stage/dev/console" c 5 1
	cp "$RIG_DIR/guest.sh" "$stage/init"
}

# debian_initramfs STAGE OUT BIN MODE SINK - the guest's whole root
debian_initramfs() {
	local stage=$1 out=$2 bin=$3 mode=$4 sink=$5 m
	local -a mods=()

	debian_stage "$stage"
	cp "$RIG_DIR/demo.sh" "$stage/htw/"
	cp -r "$bin/tests" "$bin/tools" "$stage/htw/"
	while read -r m; do
		cp "$m" "$stage/htw/modules/"
		mods+=("/htw/modules/$(basename "$m")")
	done <"$out/modules"
	write_plan "$stage/htw/plan" "$mode" /htw/out "${mods[*]}" \
		"$(list_programs "$bin/tests" /htw/tests)" \
		/htw/tools /htw/demo.sh "$sink"
	(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) >"$out/initramfs.cpio.gz"
}

# debian_boot OUT BIN MODE [CONSOLE] - the guest writes its results into
# its own RAM and copies each, framed, to its second serial port as soon as
# it exists; QEMU writes that port to $OUT/guest.out and we unframe it.
debian_boot() {
	local out=$1 bin=$2 mode=$3 console=${4:-$1/console.log}
	# Under TCG a busy guest's clocksource watchdog can judge the TSC
	# unstable, and switching clocksource patches kernel text, which TCG
	# has been seen to race with (an int3 Oops in sched_clock_cpu).
	local append="console=ttyS0 panic=-1 log_buf_len=4M tsc=reliable"

	# make run wants the demo, not the boot messages.
	[[ $mode == run ]] && append+=" loglevel=4"
	debian_initramfs "$out/initramfs" "$out" "$bin" "$mode" /dev/ttyS1
	debian_qemu_sure "$out" "$append" "$console"
}

# debian_qemu_sure OUT APPEND CONSOLE - debian_qemu, and once more if the
# kernel died before htw was loaded.  TCG has been seen to crash Debian's
# kernel as it boots, in code it patches (an int3 Oops in enqueue_timer):
# that boot proved nothing about htw.  A crash after htw was loaded is
# never retried.
debian_qemu_sure() {
	local out=$1 append=$2 console=$3 rc=0
	debian_qemu "$out" "$append" "$console" || rc=$?
	if [[ -f $console ]] && ! grep -qs '^load ' "$out/out/steps" &&
		grep -qs 'Kernel panic' "$console"; then
		log "the kernel died before htw was loaded; booting it again" \
			"(first console: ${console%.log}.first.log)"
		mv "$console" "${console%.log}.first.log"
		rc=0
		debian_qemu "$out" "$append" "$console" || rc=$?
	fi
	return "$rc"
}

# debian_qemu OUT APPEND CONSOLE - one boot of the guest
debian_qemu() {
	local out=$1 append=$2 console=$3 rc=0

	rm -rf "$out/out" "$out/guest.out"
	timeout -k 10 "$HTW_TIMEOUT" qemu-system-x86_64 -accel tcg -cpu max \
		-smp 2 -m "${HTW_GUEST_MEM:-512}" -nographic -no-reboot -nic none \
		-kernel "$DEB_VMLINUZ" -initrd "$out/initramfs.cpio.gz" \
		-append "$append" \
		-serial mon:stdio -serial file:"$out/guest.out" \
		</dev/null >"$console" 2>&1 || rc=$?
	unframe "$out/guest.out" "$out/out"
	return "$rc"
}

# unframe FILE DIR - split what rig/guest.sh exported into files again
unframe() {
	mkdir -p "$2"
	[[ -e $1 ]] || return 0
	python3 - "$1" "$2" <<'EOF'
import os
import sys

src, dst = sys.argv[1:]
# The serial line turns "\n" into "\r\n".
text = open(src, errors="replace").read().replace("\r\n", "\n")
name, lines = None, []
for line in text.splitlines(True) + ["==htw-end\n"]:
    if not line.startswith("==htw-"):
        lines.append(line)
        continue
    if name:
        # guest.sh ends every file with one newline of its own.
        with open(os.path.join(dst, name), "w") as f:
            f.write("".join(lines)[:-1])
    name, lines = None, []
    if line.startswith("==htw-file "):
        name = line.split(" ", 1)[1].strip()
        os.makedirs(os.path.dirname(os.path.join(dst, name)), exist_ok=True)
EOF
}
