#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rig/debinstall.sh [RESULT] - htw's Debian packages as a Debian 12 user
# meets them (make check-full): built by rig/deb.sh, then installed with
# apt-get in a clean Debian 12 root that has what a user of Debian's 6.12
# cloud kernel has (that kernel and its headers, the compiler, dkms), and
# three verdicts:
#   - DKMS builds and installs htw for that kernel;
#   - a program built in the root with pkg-config's flags for libhtw runs
#     in that kernel, booted under QEMU with the module DKMS built, against
#     the libhtw.so.1 the package installed;
#   - apt-get purge of the four packages leaves nothing of them behind.
# With RESULT, the verdicts are recorded there for rig/report.py.
#
# The roots are cached under $HTW_CACHE/bookworm: the bare root that
# debootstrap makes (rig/suite.sh), and a copy of it with the kernel's
# headers installed by apt-get; each run works on a copy of that, thrown
# away afterwards, so that what one run installs never reaches the next.
# shellcheck source=rig/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=rig/suite.sh
source "$RIG_DIR/suite.sh"
# shellcheck source=rig/debian.sh
source "$RIG_DIR/debian.sh"

OUT=$HTW_BUILD/debinstall
ROOT=$OUT/root
REPORT=$RIG_DIR/report.py
RESULT=
SERIES=6.12
SECURITY_MIRROR=http://deb.debian.org/debian-security
MULTIARCH=x86_64-linux-gnu
PACKAGES=(htw-dkms libhtw1 libhtw-dev htw-tools)

# What the user has besides the kernel's headers (which bring the kernel,
# gcc-12, kbuild and pahole): the compiler driver, make, pkg-config, libc's
# headers, and dkms, so that the purge, which leaves the packages apt
# pulled in as dependencies, can be held to the root as it was.
KERNEL_ROOT_PACKAGES=(gcc make pkg-config libc6-dev dkms)

# What apt and dpkg keep for themselves, which any installation and
# removal changes, and which the comparison after the purge ignores:
# dpkg's database (the status file and its -old copies, the packages'
# file lists), apt's (which packages were installed automatically, its
# package lists) and its downloads, debconf's database and its -old
# copies, ldconfig's aux-cache, and the logs of apt, dpkg and
# update-alternatives.  No file named *htw* may stay even there; the one
# the root had before, the rig's apt settings (etc/apt/apt.conf.d/90htw,
# rig/suite.sh), is not the packages'.
IGNORED=(var/lib/dpkg var/lib/apt var/cache/apt var/cache/debconf
	var/cache/ldconfig var/log)

# The verdicts, by name, with the unit and group report.py files them in.
declare -A RECORDED=()
VERDICTS=("DKMS builds htw for $SERIES"
	"a pkg-config program runs against the installed libhtw in $SERIES"
	"removal leaves nothing")

# verdict INDEX STATUS [DETAIL] - record one of VERDICTS, once
verdict() {
	local name=${VERDICTS[$1]} status=$2 detail=${3:-}
	[[ -n ${RECORDED[$1]:-} ]] && return 0
	RECORDED[$1]=$status
	if [[ $status == pass ]]; then
		log "pass: $name"
	else
		log "FAIL: $name"
		[[ -z $detail ]] || printf '  %s\n' "${detail//$'\n'/$'\n'  }" >&2
	fi
	[[ -z $RESULT ]] ||
		"$REPORT" record "$RESULT" debinstall debinstall "$name" "$status" "$detail"
}

# Whatever stops the run, every verdict it did not reach is a failure, and
# the root's copy goes.
on_exit() {
	local i
	for i in "${!VERDICTS[@]}"; do
		verdict "$i" fail "not reached: the run stopped before it (see rig/debinstall.sh's messages)"
	done
	rm -rf "${ROOT:?}"
}

# kernel_root_prepare - the bare Debian 12 root with the headers of the
# newest $SERIES cloud kernel installed by apt-get from the suites a Debian
# 12 machine has (Debian's 6.12 kernels come from bookworm-security),
# brought up to date as a user keeps it; set KERNEL_ROOT, and KVER to that
# kernel (the root's own choice, from its own lists: the host's may be a
# day older than the archive).  Made again with the bare root, each month,
# and when the way it is made changes.
kernel_root_prepare() {
	local key
	suite_root bookworm
	key=$(hash_str "$SUITE_ROOT" "$SERIES" "${KERNEL_ROOT_PACKAGES[@]}" \
		"$(declare -f kernel_root_make)")
	KERNEL_ROOT=$HTW_CACHE/bookworm/kernel-$key
	[[ -e $KERNEL_ROOT/.htw-ready ]] ||
		with_lock bookworm-kernel kernel_root_make "$KERNEL_ROOT"
	cache_touch "$KERNEL_ROOT"
	KVER=$(cat "$KERNEL_ROOT/.htw-kver")
}

kernel_root_make() {
	local dir=$1 tmp kver
	[[ -e $dir/.htw-ready ]] && return 0	# another checkout made it
	log "installing a $SERIES kernel's headers in a copy of the Debian 12 root (once)"
	mkdir -p "$HTW_CACHE/bookworm"
	tmp=$(mktemp -d "$HTW_CACHE/bookworm/.kernel.XXXXXX")
	# A root, as / is.
	chmod 755 "$tmp"
	cp -a --reflink=auto "$SUITE_ROOT/." "$tmp/" || die "cannot copy $SUITE_ROOT"
	rm -f "$tmp/.htw-ready"
	cat >"$tmp/etc/apt/sources.list" <<-EOF
		deb $SUITE_MIRROR bookworm main
		deb $SUITE_MIRROR bookworm-updates main
		deb $SECURITY_MIRROR bookworm-security main
	EOF
	# The kernel's installation makes its initramfs in the root: slow, but
	# once.  Its downloads go: each run copies the root.
	# shellcheck disable=SC2016 # the root's shell expands them
	if ! suite_run "$tmp" sh -c 'apt-get -q update &&
		apt-get -q -y -o Dpkg::Use-Pty=0 upgrade &&
		kver=$(apt-cache search --names-only "^linux-headers-$0\.[0-9].*-cloud-amd64\$" |
			cut -d" " -f1 | sort -V | tail -n 1) && [ -n "$kver" ] &&
		apt-get -q -y -o Dpkg::Use-Pty=0 install "$kver" "$@" && apt-get clean &&
		echo "${kver#linux-headers-}" >/.htw-kver' \
		"${SERIES//./\\.}" "${KERNEL_ROOT_PACKAGES[@]}" >"$tmp.log" 2>&1; then
		tail -n 20 "$tmp.log" >&2
		rm -rf "$tmp" "$tmp.log"
		die "installing a $SERIES kernel's headers in the Debian 12 root failed"
	fi
	kver=$(cat "$tmp/.htw-kver" 2>/dev/null || true)
	if [[ -z $kver || ! -r $tmp/boot/vmlinuz-$kver ]]; then
		rm -rf "$tmp" "$tmp.log"
		die "the Debian 12 root has no kernel of $SERIES: ${kver:-none}"
	fi
	log "the Debian 12 root has $kver"
	rm -rf "$dir" "$tmp.log"
	mv "$tmp" "$dir" || die "cannot move the Debian 12 root into $dir"
	touch "$dir/.htw-ready"
}

# file_list ROOT - every file, directory and link of ROOT but IGNORED's,
# with its mode, owner, size (but a directory's, which never shrinks) and
# link target, and every file's MD5 sum: a file the packages' scripts
# edited and did not put back differs too.
file_list() {
	local d
	local -a prune=()
	for d in "${IGNORED[@]}"; do
		prune+=(-path "./$d" -o)
	done
	(cd "$1" && find . \( "${prune[@]}" -false \) -prune -o \
		-type d -printf '%p %y %m %U:%G\n' -o \
		-printf '%p %y %m %U:%G %s %l\n') | LC_ALL=C sort
	(cd "$1" && find . \( "${prune[@]}" -false \) -prune -o -type f -print0 |
		xargs -0 -r md5sum) | LC_ALL=C sort -k 2
}

# install_packages - apt-get install of the four packages, as a user who
# downloaded them would; then DKMS must have built and installed htw for
# KVER: dkms status says so, and the module is where dkms.conf puts it.
install_packages() {
	local f status
	local -a debs=() missing=()
	mkdir -p "$ROOT/root/packages"
	for f in "${PACKAGES[@]}"; do
		compgen -G "$HTW_BUILD/deb/${f}_*.deb" >/dev/null || missing+=("$f")
		cp "$HTW_BUILD/deb/${f}"_*.deb "$ROOT/root/packages/" 2>/dev/null || true
		debs+=("./${f}_*.deb")
	done
	if ((${#missing[@]})); then
		verdict 0 fail "rig/deb.sh made no package of ${missing[*]}"
		return 1
	fi
	log "apt-get install ${debs[*]} in the Debian 12 root"
	# shellcheck disable=SC2016 # the root's shell expands the names
	if ! suite_run "$ROOT" sh -c 'cd /root/packages && apt-get -q -y -o Dpkg::Use-Pty=0 install $0' \
		"${debs[*]}" >"$OUT/install.log" 2>&1; then
		verdict 0 fail "apt-get install failed; $OUT/install.log ends:
$(tail -n 20 "$OUT/install.log")"
		return 1
	fi
	rm -rf "$ROOT/root/packages"
	status=$(suite_run "$ROOT" dkms status -m htw -k "$KVER" 2>&1 || true)
	MODULE=$(compgen -G "$ROOT/lib/modules/$KVER/updates/dkms/htw.ko*" | head -n 1 || true)
	if [[ $status != *"$KVER"*": installed"* ]] || [[ -z $MODULE ]]; then
		verdict 0 fail "dkms status: ${status:-nothing}
module under /lib/modules/$KVER/updates/dkms: ${MODULE:-none}; $OUT/install.log ends:
$(tail -n 12 "$OUT/install.log")"
		return 1
	fi
	verdict 0 pass "$status; ${MODULE#"$ROOT"}"
}

# build_program - a program of a libhtw user, built in the root with
# pkg-config's flags, linked to the installed libhtw.so.1: it arms a timer
# of 20 ms relative to now, reads its event, and checks that the libhtw it
# runs is the installed one.
build_program() {
	local ldd lib real owner
	mkdir -p "$ROOT/root/prog"
	cat >"$ROOT/root/prog/prog.c" <<-EOF
		#include <errno.h>
		#include <fcntl.h>
		#include <stdio.h>
		#include <string.h>
		#include <unistd.h>
		#include <libhtw.h>

		#define LIBHTW_PATH "/usr/lib/$MULTIARCH/libhtw.so.1"
		#define DELAY_NS 20000000ULL

		static int fail(const char *what, int err)
		{
			printf("libhtw-prog: FAIL: %s: %s\n", what, strerror(err));
			return 1;
		}

		int main(void)
		{
			struct htw_timer_spec spec = {
				.expires = DELAY_NS, .user_data = 0x68747721,
			};
			struct htw_event ev;
			char line[4096], *p;
			int fd, n, ours = 0;
			unsigned long long start, end;
			FILE *maps;

			/* A timer that never fires ends the program, not the guest. */
			alarm(10);
			fd = htw_open(O_CLOEXEC);
			if (fd < 0)
				return fail("htw_open", -fd);
			start = htw_clock_now(0);
			n = htw_arm(fd, &spec);
			if (n)
				return fail("htw_arm", -n);
			n = htw_read_events(fd, &ev, 1);
			end = htw_clock_now(0);
			if (n != 1)
				return fail("htw_read_events", n < 0 ? -n : EIO);
			if (ev.id != spec.id || ev.user_data != spec.user_data ||
			    ev.count != 1) {
				printf("libhtw-prog: FAIL: event of timer %u (data %llx, count %llu),"
				       " armed %u\n", ev.id, (unsigned long long)ev.user_data,
				       (unsigned long long)ev.count, spec.id);
				return 1;
			}
			if (end - start < DELAY_NS) {
				printf("libhtw-prog: FAIL: the event came after %llu ns\n",
				       end - start);
				return 1;
			}
			maps = fopen("/proc/self/maps", "r");
			if (!maps)
				return fail("/proc/self/maps", errno);
			while (fgets(line, sizeof(line), maps)) {
				p = strchr(line, '/');
				if (!p || !strstr(p, "/libhtw.so"))
					continue;
				p[strcspn(p, "\n")] = 0;
				if (strncmp(p, LIBHTW_PATH, strlen(LIBHTW_PATH)) ||
				    (p[strlen(LIBHTW_PATH)] && p[strlen(LIBHTW_PATH)] != '.')) {
					printf("libhtw-prog: FAIL: libhtw mapped from %s\n", p);
					return 1;
				}
				ours++;
			}
			fclose(maps);
			if (!ours) {
				printf("libhtw-prog: FAIL: no %s in /proc/self/maps\n", LIBHTW_PATH);
				return 1;
			}
			printf("libhtw-prog: pass: timer %u fired after %llu us, libhtw from %s\n",
			       spec.id, (end - start) / 1000, LIBHTW_PATH);
			return 0;
		}
	EOF
	# shellcheck disable=SC2016 # pkg-config runs in the root
	if ! suite_run "$ROOT" sh -c 'cd /root/prog &&
		gcc -Wall -Werror -o prog prog.c $(pkg-config --cflags --libs libhtw)' \
		>"$OUT/prog.log" 2>&1; then
		verdict 1 fail "the program did not build in the root:
$(tail -n 12 "$OUT/prog.log")"
		return 1
	fi
	ldd=$(suite_run "$ROOT" ldd /root/prog/prog 2>&1 || true)
	echo "$ldd" >"$OUT/ldd.txt"
	lib=$(awk '$1 == "libhtw.so.1" && $2 == "=>" { print $3 }' <<<"$ldd")
	real='' owner=''
	[[ -z $lib ]] || real=$(suite_run "$ROOT" readlink -f "$lib" || true)
	[[ -z $real ]] || owner=$(suite_run "$ROOT" dpkg -S "$real" 2>/dev/null || true)
	if [[ $real != "/usr/lib/$MULTIARCH/libhtw.so.1"?(.+([0-9.])) || $owner != libhtw1:* ]]; then
		verdict 1 fail "the program is not linked to libhtw1's libhtw.so.1:
$ldd
libhtw.so.1: ${real:-none}, from ${owner:-no package}"
		return 1
	fi
	# The guest needs whatever the loader maps, at the same paths.
	mapfile -t PROG_LIBS < <(awk '{ for (i = 1; i <= NF; i++)
		if ($i ~ /^\//) print $i }' <<<"$ldd")
}

# stage_copy STAGE PATH - copy PATH of the root into STAGE at the same
# path, with the links on the way (/lib64 to usr/lib64, say) as links, so
# that the guest's loader finds each file where the root's does, and
# /proc/self/maps names it as in the root.
stage_copy() {
	local stage=$1 path=$2 prefix='' target rest i
	local -a comps
	IFS=/ read -ra comps <<<"${path#/}"
	for i in "${!comps[@]}"; do
		prefix+=/${comps[i]}
		if [[ -L $ROOT$prefix ]]; then
			target=$(readlink "$ROOT$prefix")
			[[ -L $stage$prefix ]] || ln -s "$target" "$stage$prefix"
			[[ $target == /* ]] || target=$(dirname "$prefix")/$target
			rest=$(IFS=/; echo "${comps[*]:i+1}")
			stage_copy "$stage" "$(realpath -sm "$target${rest:+/$rest}")"
			return
		elif [[ -d $ROOT$prefix ]]; then
			mkdir -p "$stage$prefix"
		else
			cp "$ROOT$prefix" "$stage$prefix"
		fi
	done
}

# guest_initramfs - busybox, the module DKMS built (decompressed: busybox's
# insmod reads plain ELF), the program and its libraries; rig/guest.sh
# runs it as it runs the tiers' tests.
guest_initramfs() {
	local stage=$OUT/guest/initramfs l
	debian_stage "$stage"
	case $MODULE in
	*.xz) xz -dc "$MODULE" >"$stage/htw/modules/htw.ko" ;;
	*.zst) zstd -q -dc "$MODULE" >"$stage/htw/modules/htw.ko" ;;
	*) cp "$MODULE" "$stage/htw/modules/htw.ko" ;;
	esac || return 1
	cp "$ROOT/root/prog/prog" "$stage/htw/tests/libhtw_prog"
	for l in "${PROG_LIBS[@]}"; do
		stage_copy "$stage" "$l" || return 1
	done
	cp "$ROOT/etc/ld.so.cache" "$stage/etc/"
	write_plan "$stage/htw/plan" check /htw/out /htw/modules/htw.ko \
		/htw/tests/libhtw_prog /htw/tools /htw/demo.sh /dev/ttyS1
	(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) \
		>"$OUT/guest/initramfs.cpio.gz"
}

# run_program - boot the kernel the root has installed, as rig/debian.sh
# boots Debian's kernels (TCG, tsc=reliable, one more boot if the first
# died before htw was loaded), and judge what the guest reports.
run_program() {
	local out=$OUT/guest append="console=ttyS0 panic=-1 log_buf_len=4M tsc=reliable"
	local rc=0 steps tap bad
	mkdir -p "$out"
	guest_initramfs || {
		verdict 1 fail "cannot make the guest's initramfs"
		return 1
	}
	DEB_VMLINUZ=$ROOT/boot/vmlinuz-$KVER
	[[ -r $DEB_VMLINUZ ]] || {
		verdict 1 fail "the root has no /boot/vmlinuz-$KVER"
		return 1
	}
	log "booting $KVER under QEMU with the DKMS-built htw and the program"
	# One short program: the guest needs far less than the tiers' tests.
	HTW_TIMEOUT=180 debian_qemu_sure "$out" "$append" "$out/console.log" || rc=$?
	steps=$(cat "$out/out/steps" 2>/dev/null || true)
	tap=$(cat "$out/out/tests/libhtw_prog.tap" 2>/dev/null || true)
	# A kernel log that is empty, or cannot be read or scanned, is a
	# failure too.
	bad=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import report
print("\n".join(report.scan_log(open(sys.argv[2], errors="replace").read(), "dmesg")))' \
		"$RIG_DIR" "$out/out/dmesg.txt" 2>"$out/scan.err") ||
		bad="the kernel log could not be scanned: $(tail -n 3 "$out/scan.err")"
	[[ -s $out/out/dmesg.txt ]] || bad="no kernel log"
	if grep -qx 'load htw 0' <<<"$steps" && grep -qx 'test libhtw_prog 0' <<<"$steps" &&
		grep -q '^libhtw-prog: pass' <<<"$tap" && [[ -e $out/out/done && -z $bad ]]; then
		verdict 1 pass "$tap"
		return 0
	fi
	verdict 1 fail "qemu exit $rc; the guest's steps: ${steps:-none}
the program said: ${tap:-nothing}
${bad:+the kernel log: $bad
}$(tail -n 8 "$out/console.log" 2>/dev/null)"
	return 1
}

# purge_packages - apt-get purge of the four packages; the root must then
# be as it was before their installation, but for IGNORED, with nothing
# named *htw* anywhere and nothing left of htw in dkms's tree, /usr/src or
# the kernel's updates directory.
purge_packages() {
	local found=
	log "apt-get purge ${PACKAGES[*]} in the Debian 12 root"
	if ! suite_run "$ROOT" apt-get -q -y -o Dpkg::Use-Pty=0 purge "${PACKAGES[@]}" \
		>"$OUT/purge.log" 2>&1; then
		verdict 2 fail "apt-get purge failed; $OUT/purge.log ends:
$(tail -n 20 "$OUT/purge.log")"
		return 1
	fi
	file_list "$ROOT" >"$OUT/files.after"
	diff "$OUT/files.before" "$OUT/files.after" >"$OUT/files.diff" || true
	[[ -s $OUT/files.diff ]] && found+="files that differ from before the installation:
$(head -n 20 "$OUT/files.diff")
"
	(cd "$ROOT" && find . -name '*htw*' ! -path ./etc/apt/apt.conf.d/90htw) \
		>"$OUT/htw-files"
	# dpkg may remember a purged package, as not installed ("pn", "un"),
	# and no more: not half-installed, nor its configuration files kept.
	# shellcheck disable=SC2016 # dpkg-query's format
	suite_run "$ROOT" dpkg-query -W -f '${binary:Package} ${db:Status-Abbrev}\n' \
		"${PACKAGES[@]}" 2>/dev/null | awk 'substr($2, 2, 1) != "n"' \
		>"$OUT/dpkg-query" || true
	[[ -s $OUT/dpkg-query ]] && found+="packages dpkg still has: $(xargs <"$OUT/dpkg-query")
"
	[[ -s $OUT/htw-files ]] && found+="files named *htw*:
$(head -n 20 "$OUT/htw-files")
"
	compgen -G "$ROOT/var/lib/dkms/htw" >/dev/null && found+="/var/lib/dkms/htw
"
	compgen -G "$ROOT/usr/src/htw-*" >/dev/null && found+="/usr/src/htw-*
"
	compgen -G "$ROOT/lib/modules/$KVER/updates" >/dev/null &&
		found+="/lib/modules/$KVER/updates: $(cd "$ROOT/lib/modules/$KVER" && find updates | head -n 5 | xargs)
"
	if [[ -n $found ]]; then
		verdict 2 fail "${found%$'\n'}"
		return 1
	fi
	verdict 2 pass "$(wc -l <"$OUT/files.after") entries as before; ignored: ${IGNORED[*]}"
}

main() {
	local i start=$SECONDS
	RESULT=${1:-}
	[[ -z $RESULT ]] || RESULT=$(realpath -m "$RESULT")
	rm -rf "$OUT"
	mkdir -p "$OUT"
	trap on_exit EXIT

	# make check-full builds no packages: build them as make deb does.
	if ! "$RIG_DIR/deb.sh" >"$OUT/deb.log" 2>&1; then
		cat "$OUT/deb.log" >&2
		for i in "${!VERDICTS[@]}"; do
			verdict "$i" fail "the packages did not build (rig/deb.sh): $(tail -n 8 "$OUT/deb.log")"
		done
		return 1
	fi
	kernel_root_prepare
	log "copying the Debian 12 root with $KVER's headers"
	cp -a --reflink=auto "$KERNEL_ROOT" "$ROOT" || die "cannot copy $KERNEL_ROOT"
	rm "$ROOT/.htw-ready" "$ROOT/.htw-kver"
	file_list "$ROOT" >"$OUT/files.before"

	if install_packages; then
		if build_program; then
			run_program || true
		fi
		rm -rf "$ROOT/root/prog"
		purge_packages || true
	else
		verdict 1 fail "not reached: the packages did not install"
		verdict 2 fail "not reached: the packages did not install"
	fi
	log "rig/debinstall.sh took $((SECONDS - start))s"
	for i in "${!VERDICTS[@]}"; do
		[[ ${RECORDED[$i]} == pass ]] || return 1
	done
}

main "$@"
