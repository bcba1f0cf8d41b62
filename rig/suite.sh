# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# rig/suite.sh - Debian suites other than the host's (sid has Linux 7.2, its
# -rt-amd64 flavour and the compiler its headers name), reached without
# touching the host's apt setup, and cached minimal roots of Debian suites:
# a sid root to build in, a Debian 12 root to install htw's packages in
# (rig/debinstall.sh).  Sourced by the kinds that need it.

SUITE_MIRROR=http://deb.debian.org/debian

# suite_apt SUITE CMD ARGS... - run apt-get or apt-cache (CMD) on SUITE's
# own sources list and package lists, under $HTW_CACHE/apt/SUITE; the
# lists are fetched again once a day, as rig/deps.sh does for the host's.
suite_apt() {
	local suite=$1 cmd=$2 dir=$HTW_CACHE/apt/$1
	shift 2
	# The archive these machines reach may be a dated mirror, whose
	# Release files are past their Valid-Until.
	local -a opts=(-o "Dir::Etc::sourcelist=$dir/sources.list"
		-o Dir::Etc::sourceparts=/nonexistent
		-o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
		-o APT::Sandbox::User=root -o Acquire::Check-Valid-Until=false
		-o Acquire::Check-Date=false)
	if [[ -z $(find "$dir/updated" -mmin -1440 2>/dev/null) ]]; then
		mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $SUITE_MIRROR $suite main" \
			>"$dir/sources.list"
		log "apt-get update ($suite)"
		with_lock "apt-$suite" apt-get -q "${opts[@]}" update >/dev/null ||
			die "apt-get update of $suite failed"
		touch "$dir/updated"
	fi
	"$cmd" -q "${opts[@]}" "$@"
}

# suite_root SUITE PKG... - a minimal Debian SUITE root (debootstrap's
# minbase) with PKG... in it, as $HTW_CACHE/SUITE/root-KEY; set SUITE_ROOT.
# It is made afresh each month (and when the list of packages changes), so
# that it never ages far behind its suite.
suite_root() {
	local suite=$1 key
	shift
	key=$(hash_str "$(date +%Y-%m)" "$@")
	SUITE_ROOT=$HTW_CACHE/$suite/root-$key
	[[ -e $SUITE_ROOT/.htw-ready ]] ||
		with_lock "$suite-root" suite_root_make "$SUITE_ROOT" "$suite" "$@"
	cache_touch "$SUITE_ROOT"
	# apt in the root as on the host: the archive these machines reach
	# may be a dated mirror, whose Release files are past their
	# Valid-Until; only what is asked for goes in; root downloads.
	cat >"$SUITE_ROOT/etc/apt/apt.conf.d/90htw" <<-'EOF'
		Acquire::Check-Valid-Until "false";
		Acquire::Check-Date "false";
		APT::Install-Recommends "false";
		APT::Sandbox::User "root";
	EOF
}

suite_root_make() {
	local dir=$1 suite=$2 tmp
	local -a include=()
	shift 2
	[[ -e $dir/.htw-ready ]] && return 0	# another checkout made it
	log "making a Debian $suite root in $dir (a minute, once)"
	mkdir -p "$(dirname "$dir")"
	tmp=$(mktemp -d "$(dirname "$dir")/.root.XXXXXX")
	(($#)) && include=(--include="$(IFS=,; echo "$*")")
	# debootstrap mounts /proc and /sys in the root: in a mount namespace
	# of its own, nothing stays mounted if it is killed.  It installs no
	# recommends: only what is asked for goes in.
	if ! unshare --mount --propagation private debootstrap --variant=minbase \
		"${include[@]}" "$suite" "$tmp" "$SUITE_MIRROR" >"$tmp.log" 2>&1; then
		tail -n 20 "$tmp.log" >&2
		rm -rf "$tmp" "$tmp.log"
		die "debootstrap of $suite failed"
	fi
	rm -rf "$dir"
	mv "$tmp" "$dir" || die "cannot move the $suite root into $dir"
	rm -f "$tmp.log"
	touch "$dir/.htw-ready"
}

# suite_run ROOT CMD... - run CMD in ROOT, with /proc (objtool, dkms and
# a kernel's installation need it) mounted in a mount namespace of its own,
# so nothing stays mounted however the command ends.
suite_run() {
	# shellcheck disable=SC2016 # sh -c's own arguments
	unshare --mount --fork sh -c 'mount -t proc proc "$0/proc" && exec chroot "$0" "$@"' \
		"$1" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "${@:2}"
}

# The sid root: a minimal Debian sid, for building modules as a user of its
# newest kernel would; the compiler comes with the kernel's headers, which
# a kind installs with sid_install.
SID_PACKAGES=(make libc6-dev libelf-dev pahole bc bison flex kmod xz-utils zstd dkms)

sid_root_prepare() {
	suite_root sid "${SID_PACKAGES[@]}"
	SID_ROOT=$SUITE_ROOT
}

# sid_run CMD... - run CMD in the sid root (suite_run)
sid_run() {
	suite_run "$SID_ROOT" "$@"
}

# sid_install PKG... - install packages in the sid root (once), as a user
# of that system would: apt-get install.
sid_install() {
	local stamp=$SID_ROOT/.htw-installed p
	local -a missing=()
	for p in "$@"; do
		grep -qxF "$p" "$stamp" 2>/dev/null || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	log "installing ${missing[*]} in the sid root"
	# A kernel's installation runs DKMS's autoinstall: no htw is left
	# registered to be built then (rig/sid.sh removes its own, but a run
	# may have been killed).
	with_lock sid-root sid_run sh -c 'dkms remove -m htw --all >/dev/null 2>&1
		rm -rf /usr/src/htw-*
		apt-get -q -y -o Dpkg::Use-Pty=0 install "$@" >/dev/null' - "${missing[@]}" ||
		die "apt-get install ${missing[*]} in the sid root failed"
	printf '%s\n' "${missing[@]}" >>"$stamp"
}

# sid_update - the sid root's own package lists, fetched again once a day;
# what is installed in the root is chosen from them.
sid_update() {
	local stamp=$SID_ROOT/.htw-updated
	[[ -n $(find "$stamp" -mmin -1440 2>/dev/null) ]] && return 0
	log "apt-get update in the sid root"
	with_lock sid-root sid_run apt-get -q update >/dev/null ||
		die "apt-get update in the sid root failed"
	touch "$stamp"
}

# sid_newest REGEX - the newest package of the sid root's lists whose name
# matches
sid_newest() {
	sid_run apt-cache search --names-only "$1" | awk '{ print $1 }' |
		sort -V | tail -n 1 || true
}

# sid_ksrc SERIES - unpack sid's linux-source-SERIES, with the rig's patches
# for that series (rig/patches/SERIES/, if any), once per version; set
# SID_KSRC to the tree.
sid_ksrc() {
	local series=$1 pkg=linux-source-$1 version key
	local -a patches=()
	version=$(suite_apt sid apt-cache show "$pkg" 2>/dev/null |
		sed -n 's/^Version: //p' | sort -V | tail -n 1 || true)
	[[ -n $version ]] || die "sid has no $pkg"
	key=$version
	if [[ -d $RIG_DIR/patches/$series ]]; then
		patches=("$RIG_DIR/patches/$series"/*.patch)
		key+=" $(hash_files "${patches[@]}")"
	fi
	key=$(hash_str "$key")
	SID_KSRC=$HTW_CACHE/src/$pkg-$key
	[[ -e $SID_KSRC/.htw-ready ]] ||
		with_lock "src-$series" sid_ksrc_unpack "$SID_KSRC" "$pkg" "${patches[@]}"
	cache_touch "$SID_KSRC"
}

sid_ksrc_unpack() {
	local dst=$1 pkg=$2 tmp p
	shift 2
	[[ -e $dst/.htw-ready ]] && return 0	# another checkout won the lock
	mkdir -p "$HTW_CACHE/src"
	tmp=$(mktemp -d "$HTW_CACHE/src/.unpack.XXXXXX")
	log "fetching and unpacking sid's $pkg into $dst"
	# Each step says when it fails: the caller may run with errexit off.
	(cd "$tmp" && suite_apt sid apt-get download "$pkg" >/dev/null) ||
		die "apt-get download $pkg (sid) failed"
	dpkg -x "$tmp"/"$pkg"_*.deb "$tmp/deb" || die "dpkg -x $pkg failed"
	tar -xf "$tmp/deb/usr/src/$pkg.tar.xz" -C "$tmp" || die "unpacking $pkg failed"
	for p in "$@"; do
		log "applying ${p#"$HTW_TOP"/}"
		patch -s -p1 -d "$tmp/$pkg" <"$p" || die "${p#"$HTW_TOP"/} does not apply"
	done
	mv "$tmp/$pkg" "$dst" || die "cannot move $pkg into $dst"
	rm -rf "$tmp"
	touch "$dst/.htw-ready"
}
