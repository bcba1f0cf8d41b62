#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rig/deps.sh - install the Debian packages the rig needs, and only those
# missing.  A fresh Debian 12 machine has nothing but apt; a machine that
# has run the rig before pays one dpkg-query.
#
# Debian's own kernels are not installed here: rig/debian.sh unpacks them
# (image and headers) into the cache, because their headers package pulls
# the kernel image in and a test rig has no business installing kernels.
# shellcheck source=rig/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PACKAGES=(
	# compilers and what a kernel build runs
	build-essential gcc-12 flex bison bc libelf-dev libssl-dev
	patch xz-utils cpio perl python3
	# what Debian's kbuild binaries link against, and pahole for BTF
	libelf1 libssl3 zlib1g dwarves
	# the UML kernel's source; guests; lint
	"$KSRC_PKG" qemu-system-x86 busybox-static sparse
	# Debian sid's kernels: a sid root to build in, their compressed modules;
	# the Debian 12 root rig/debinstall.sh installs htw's packages in
	debootstrap debian-archive-keyring zstd
	# make install's depmod; libhtw's manual pages and pkg-config file
	kmod groff-base pkgconf
	# make bench's htw_ringbench and htw_purgatory: the anchors they link,
	# and their charts
	liburing-dev libevent-dev gnuplot-nox
	# make deb: the packages' build, and lintian
	dpkg-dev debhelper dh-dkms lintian
)

APT_ARGS=(-y -q --no-install-recommends -o DPkg::Lock::Timeout=600)

missing_packages() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null |
			grep -qx installed || echo "$p"
	done
}

# apt_lists_stale - true when the rig has not run apt-get update in the
# last day: rig/debian.sh picks the newest Debian kernel from apt's lists,
# and old lists name packages the archive has dropped since.
APT_STAMP=$HTW_CACHE/apt-updated
apt_lists_stale() {
	[[ -z $(find "$APT_STAMP" -mmin -1440 2>/dev/null) ]]
}

main() {
	local missing
	mapfile -t missing < <(missing_packages "${PACKAGES[@]}")
	if ((${#missing[@]} == 0)) && ! apt_lists_stale; then
		return 0
	fi
	((EUID == 0)) || die "installing ${missing[*]} needs root"
	export DEBIAN_FRONTEND=noninteractive
	log "apt-get update"
	apt-get -q -o DPkg::Lock::Timeout=600 update >/dev/null
	mkdir -p "$HTW_CACHE"
	touch "$APT_STAMP"
	if ((${#missing[@]})); then
		log "apt-get install ${missing[*]}"
		apt-get "${APT_ARGS[@]}" install "${missing[@]}" >/dev/null
	fi
}

main "$@"
