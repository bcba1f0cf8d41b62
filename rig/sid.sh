# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# rig/sid.sh - the "sid" kind of tier: the newest kernel of a series in
# Debian sid (Linux 7.2 today), of a flavour (cloud, rt), booted under QEMU
# as rig/debian.sh boots Debian 12's.  Its headers name a compiler Debian 12
# does not have, so the module is built in a sid root (rig/suite.sh) where
# the headers are installed with apt-get, as on a sid user's machine; with
# "dkms" in the argument it is built by dkms from the checkout's dkms.conf,
# and the modules dkms made are the ones the guest loads.
# Sourced by rig/tier.sh; see rig/uml.sh for what a kind defines.
# shellcheck disable=SC2034 # KDIR, KMAKE, KDESC and KBUILD_VIA are for rig/tier.sh

# shellcheck source=rig/suite.sh
source "$RIG_DIR/suite.sh"
# shellcheck source=rig/debian.sh
source "$RIG_DIR/debian.sh"

# sid_prepare NAME SERIES:FLAVOUR[:dkms]
sid_prepare() {
	local series flavour how pkg
	IFS=: read -r series flavour how <<<"$2"
	sid_root_prepare
	sid_update
	pkg=$(sid_newest "^linux-headers-${series//./\\.}\\.[0-9].*-${flavour}-amd64\$")
	[[ -n $pkg ]] || die "sid has no $series $flavour kernel"
	SID_KVER=${pkg#linux-headers-}
	sid_install "linux-headers-$SID_KVER" "linux-binary-$SID_KVER"
	KDIR=/usr/src/linux-headers-$SID_KVER
	KMAKE=()
	KBUILD_VIA=sid_build
	SID_HOW=${how:-make}
	KDESC="Debian sid $SID_KVER (QEMU, TCG${how:+, built by $how})"
	DEB_VMLINUZ=$SID_ROOT/usr/lib/modules/$SID_KVER/vmlinuz
	[[ -r $DEB_VMLINUZ ]] || die "no $DEB_VMLINUZ in the sid root"
}

# sid_build OUT KDIR [MAKE ARGS...] - build_modules' build, in the sid
# root: copy the sources in, build there, copy the modules out.
sid_build() {
	local out=$1 kdir=$2 work=/htw-build/${1//\//_}
	shift 2
	rm -rf "${SID_ROOT:?}$work"
	mkdir -p "$SID_ROOT$work"
	cp -a "$out/src/." "$SID_ROOT$work/"
	if [[ $SID_HOW == dkms ]]; then
		# dkms keeps its state in the root, which checkouts share.
		with_lock sid-dkms sid_dkms_build "$out" "$work" || return 1
	else
		sid_run make -C "$kdir" M="$work" "$@" HTW_INJECT="$HTW_INJECT" \
			-j"$HTW_JOBS" modules >"$out/build.log" 2>&1 || return 1
		(cd "$SID_ROOT$work" && find . -name '*.ko' -exec cp --parents {} "$out/src/" \;)
		# Paths in it are relative to M, or absolute in the sid root.
		sed "s|^$work/||" "$SID_ROOT$work/modules.order" >"$out/src/modules.order"
	fi
	rm -rf "${SID_ROOT:?}$work"
}

# sid_dkms_build OUT WORK - dkms add, build and remove, as a user would
# from a checkout; then the modules it built go where build_modules
# expects them, decompressed (the guest's busybox insmod reads plain ELF).
sid_dkms_build() {
	local out=$1 work=$2 ver dir m rc=0
	ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$HTW_TOP/dkms.conf")
	[[ -n $ver ]] || die "dkms.conf has no PACKAGE_VERSION"
	cp "$HTW_TOP/dkms.conf" "$HTW_TOP/Makefile" "$SID_ROOT$work/"
	rm -rf "$SID_ROOT/usr/src/htw-$ver"
	mv "$SID_ROOT$work" "$SID_ROOT/usr/src/htw-$ver"
	mkdir -p "$SID_ROOT$work"
	sid_run sh -c 'dkms remove -m htw -v "$1" --all >/dev/null 2>&1;
		dkms add -m htw -v "$1" && dkms build -m htw -v "$1" -k "$2"; rc=$?
		cat /var/lib/dkms/htw/"$1"/build/make.log 2>/dev/null; exit $rc' \
		- "$ver" "$SID_KVER" >"$out/build.log" 2>&1 || rc=$?
	dir=$SID_ROOT/var/lib/dkms/htw/$ver/$SID_KVER/x86_64/module
	: >"$out/src/modules.order"
	# dkms.conf lists the modules in the order they load.
	for m in $(sed -n 's/^BUILT_MODULE_NAME\[[0-9]*\]="\(.*\)"/\1/p' "$HTW_TOP/dkms.conf"); do
		((rc)) && break
		if [[ -e $dir/$m.ko.xz ]]; then
			xz -dc "$dir/$m.ko.xz" >"$out/src/$m.ko" || rc=1
		elif [[ -e $dir/$m.ko.zst ]]; then
			zstd -q -dc "$dir/$m.ko.zst" >"$out/src/$m.ko" || rc=1
		else
			cp "$dir/$m.ko" "$out/src/$m.ko" || rc=1
		fi
		echo "$m.ko" >>"$out/src/modules.order"
	done
	# Whatever happened, nothing of htw stays registered in the root.
	sid_run dkms remove -m htw -v "$ver" --all >>"$out/build.log" 2>&1 || true
	rm -rf "${SID_ROOT:?}/usr/src/htw-$ver"
	return "$rc"
}

sid_boot() {
	debian_boot "$@"
}
