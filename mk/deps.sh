#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs weft's build dependencies from Debian's archive (binary packages) and
# builds musl and CMocka for the cross targets from Debian *source* packages,
# in a cache outside the tree ($WEFT_CACHE, default ~/.cache/weft).
#
# Usage
#   mk/deps.sh host                  Debian packages for native x86_64 builds
#                                    (gcc, make, libcmocka-dev, sanitizer runtimes),
#                                    the network tests' clients (curl, wrk, ip),
#                                    gdb and gdb-multiarch (tests/gdb/check.sh),
#                                    valgrind (make VARIANT=valgrind check), and
#                                    clang with libFuzzer for the fuzz harnesses,
#                                    and clang-format (mk/format.sh).
#   mk/deps.sh cross ARCH LIBC       ARCH: aarch64 | riscv64, LIBC: musl | glibc.
#                                    Cross gcc, qemu-user, the musl and cmocka
#                                    source packages; builds musl (LIBC=musl) and
#                                    a static libcmocka.a for ARCH/LIBC.
#   mk/deps.sh bare                  The bare-metal riscv64 boards: riscv64-unknown-elf
#                                    gcc, picolibc, qemu-system-riscv64 with OpenSBI,
#                                    u-boot-tools and device-tree-compiler (mkimage -f,
#                                    dtc, fdtget), u-boot-qemu (U-Boot for qemu-virt,
#                                    tests/boot/uboot.sh), gdb-multiarch (make debug);
#                                    CMocka for picolibc.
#   mk/deps.sh lwip                  Debian's lwIP source package into the cache
#                                    (src/lwip): the Makefile's default LWIP_DIR.
#   mk/deps.sh rv-kernel             linux-riscv64 on a riscv64 kernel (make
#                                    TARGET=linux-riscv64 RUN_ON=kernel check):
#                                    Debian's riscv64 kernel, the modules its
#                                    guest loads and busybox-static, and the
#                                    network scripts' tools for its userland
#                                    (bash, curl, wrk, iproute2, setpriv
#                                    ...), fetched with apt-get download for
#                                    riscv64 and unpacked with dpkg-deb -x
#                                    into rv-kernel/ (never installed); cpio
#                                    for its initramfs.
#   mk/deps.sh bench                 What `make bench` compares weft with: Go,
#                                    Boost.Context and Boost.Fiber (g++), nginx,
#                                    wrk, and gnuplot for the plot.
#   mk/deps.sh flags ARCH LIBC       Prints, for a Makefile to `include`:
#                                      CC := ...
#                                      CMOCKA_CFLAGS := -I... -D__WORDSIZE=64
#                                      CMOCKA_LIBS := .../libcmocka.a
#                                    then one `#` comment line. Plain `KEY := value`
#                                    lines, no quoting: paths must have no spaces.
#                                    Has no side effects and does not check that
#                                    the files exist (run `cross` first).
#
# Every test file that includes cmocka.h must be compiled with -D__WORDSIZE=64
# (in CMOCKA_CFLAGS): without it cmocka.h typedefs uintptr_t as unsigned int on
# anything but glibc/x86_64. musl binaries must be linked -static to run under
# qemu-user (CC from `flags` does not add -static by itself).
#
# Cache layout ($WEFT_CACHE):
#   lock                      flock(1) lock: parallel runs (make -j) wait here
#   apt/                      private apt config: deb-src list, apt.conf, lists/
#   src/musl, src/cmocka,     unpacked Debian sources (symlinks to musl-1.2.3 ...)
#   src/lwip
#   ARCH-musl/                musl install prefix: bin/musl-gcc, lib/, include/
#                             (kernel uapi headers symlinked into include/)
#   ARCH-LIBC/cmocka/         include/cmocka.h, lib/libcmocka.a
#   build/                    build directories;  log/  build logs
#   stamps/                   one file per finished step (content = recipe key)
#   rv-kernel/                Image, base.cpio.gz (busybox, modules), versions;
#                             userland/ (the network scripts' tools, with their
#                             libraries: the guest's /usr and /etc), its
#                             userland.versions;
#                             apt/ its private riscv64 apt state
#
# The system's apt setup is never changed: the deb-src list copies URIs, Suites,
# Components and Signed-By from the system's own Debian `Types: deb` entry and
# apt-get runs with Dir::Etc::SourceList/SourceParts and Dir::State::Lists
# pointed into the cache (and no binary caches or update hooks).
#
# Environment: WEFT_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/weft),
# WEFT_JOBS (make -j for musl, default nproc).

set -euo pipefail
# Run from a `make install DESTDIR=...` (the first build of a target), make
# exports DESTDIR and passes its command line on in MAKEFLAGS: musl's and
# CMocka's own installs would then go into that staging tree.
unset DESTDIR MAKEFLAGS MFLAGS MAKEOVERRIDES

# Bump when a recipe changes: stamps with another key are rebuilt.
RECIPE=1

die() { echo "deps: error: $*" >&2; exit 1; }
say() { echo "deps: $*"; }

usage() {
	sed -n '/^# Usage/,/^# Every/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

# ---------------------------------------------------------------- arguments

check_target() {
	case "${1:-}" in aarch64|riscv64) ;; *) die "ARCH must be aarch64 or riscv64, not '${1:-}'";; esac
	case "${2:-}" in musl|glibc) ;; picolibc) [ "$1" = riscv64 ] || die "picolibc is riscv64 only";;
		*) die "LIBC must be musl, glibc or picolibc, not '${2:-}'";; esac
}

cache_dir() {
	local c="${WEFT_CACHE:-}"
	if [ -z "$c" ]; then
		local base="${XDG_CACHE_HOME:-}"
		if [ -z "$base" ]; then
			[ -n "${HOME:-}" ] || die "neither WEFT_CACHE nor HOME is set"
			base="$HOME/.cache"
		fi
		c="$base/weft"
	fi
	case "$c" in /*) ;; *) c="$PWD/$c";; esac
	printf '%s\n' "$c"
}

CACHE=$(cache_dir)

# ---------------------------------------------------------------- helpers

LOCKED=0
take_lock() {
	[ "$LOCKED" = 1 ] && return 0
	mkdir -p "$CACHE"
	exec 9>"$CACHE/lock"
	if ! flock -n 9; then
		say "waiting for another deps.sh ($CACHE/lock)"
		flock 9
	fi
	LOCKED=1
}

stamp_ok() { [ -f "$CACHE/stamps/$1" ] && [ "$(cat "$CACHE/stamps/$1")" = "$2" ]; }
stamp_set() { mkdir -p "$CACHE/stamps"; printf '%s\n' "$2" >"$CACHE/stamps/$1"; }

# run_logged LOG DESCRIPTION CMD...: append CMD's output to LOG; on failure
# print the end of the log and exit.
run_logged() {
	local log="$1" what="$2"; shift 2
	mkdir -p "$(dirname "$log")"
	printf '\n$ %s\n' "$*" >>"$log"
	if ! "$@" >>"$log" 2>&1; then
		echo "deps: FAILED: $what (full log: $log)" >&2
		tail -n 40 "$log" | sed 's/^/  | /' >&2
		exit 1
	fi
}

in_dir() { local d="$1"; shift; (cd "$d" && "$@"); }

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"
	elif command -v sudo >/dev/null; then sudo "$@"
	else die "not root and no sudo: run as root: $*"
	fi
}

missing_packages() {
	local p st
	for p in "$@"; do
		st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
		case "$st" in ii*) ;; *) printf '%s\n' "$p";; esac
	done
}

APT_UPDATED=0
ensure_packages() {
	local missing
	missing=$(missing_packages "$@")
	[ -z "$missing" ] && return 0
	take_lock
	missing=$(missing_packages "$@")   # another run may have installed them
	[ -z "$missing" ] && return 0
	# shellcheck disable=SC2086
	set -- $missing
	mkdir -p "$CACHE/log"
	local log="$CACHE/log/apt-install.log"
	if [ "$APT_UPDATED" = 0 ]; then
		say "apt-get update (system sources)"
		run_logged "$log" "apt-get update" as_root apt-get update
		APT_UPDATED=1
	fi
	say "installing Debian packages: $*"
	run_logged "$log" "apt-get install $*" as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends "$@"
}

# ---------------------------------------------------------------- host

cmd_host() {
	ensure_packages gcc make libc6-dev libcmocka-dev libasan8 liblsan0 libtsan2 libubsan1 \
		curl wrk iproute2 procps ethtool
	# make install's test builds an outside program with both of these,
	# and checks that musl's compiler is refused the glibc-built library.
	ensure_packages pkg-config cmake musl-tools
	# tests/test_unwind reads gdb's backtrace from inside the switch;
	# tests/gdb/check.sh runs weft's gdb extension (gdb-multiarch for the
	# cross CPUs under qemu-user).
	ensure_packages gdb gdb-multiarch
	# make VARIANT=valgrind: valgrind and its client-request headers.
	ensure_packages valgrind
	# The fuzz harnesses (mk/fuzz.sh): clang, and libFuzzer with clang's
	# ASan and UBSan runtimes, which are in libclang-rt-14-dev (only
	# recommended by clang-14, so named here).
	ensure_packages clang libclang-rt-14-dev
	# make format / format-check (mk/format.sh): .clang-format is tuned to
	# Debian 12's clang-format (14).
	ensure_packages clang-format
}

# ---------------------------------------------------------------- bench

# The anchors of `make bench` (mk/bench.sh). Debian's nginx is only run with
# a configuration of the bench's own; its service is not used.
cmd_bench() {
	ensure_packages gcc g++ make golang-go libboost-context-dev libboost-fiber-dev \
		nginx wrk gnuplot-nox iproute2 procps util-linux
}

# ---------------------------------------------------------------- sources

# Print, as a deb822 stanza with Types: deb-src, the system's own Debian
# archive entry: the first `Types: deb` entry whose URIs mention "debian" and
# whose Suites include this release's codename. deb822 files first, then the
# one-line sources.list format.
debian_src_stanza() {
	local codename=""
	if [ -r /etc/os-release ]; then
		# shellcheck disable=SC1091
		codename=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
	fi
	local f out
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		out=$(awk -v codename="$codename" '
			function flush(   n, i, t, ok, s) {
				if (nf == 0) return
				t = " " tolower(val["types"]) " "
				ok = (t ~ / deb /) && (tolower(val["enabled"]) != "no") && (val["uris"] ~ /debian/)
				if (ok && codename != "") {
					n = split(val["suites"], s, /[ \t]+/); ok = 0
					for (i = 1; i <= n; i++) if (s[i] == codename) ok = 1
				} else if (ok) {
					ok = (val["uris"] !~ /security|debug|ports/)
				}
				if (ok && !done) {
					print "Types: deb-src"
					print "URIs: " val["uris"]
					print "Suites: " val["suites"]
					print "Components: " (val["components"] != "" ? val["components"] : "main")
					if (raw["signed-by"] != "") printf "%s", raw["signed-by"]
					if (raw["trusted"] != "") printf "%s", raw["trusted"]
					done = 1
				}
				nf = 0; delete val; delete raw
			}
			/^#/ { next }
			/^[ \t]*$/ { flush(); next }
			/^[ \t]/ { if (key != "") raw[key] = raw[key] $0 "\n"; next }
			{
				i = index($0, ":"); if (i == 0) next
				key = tolower(substr($0, 1, i - 1))
				v = substr($0, i + 1); sub(/^[ \t]+/, "", v); sub(/[ \t]+$/, "", v)
				val[key] = v; raw[key] = $0 "\n"; nf++
			}
			END { flush() }
		' "$f")
		if [ -n "$out" ]; then printf '%s\n' "$out"; return 0; fi
	done
	local lists=()
	[ -r /etc/apt/sources.list ] && lists+=(/etc/apt/sources.list)
	for f in /etc/apt/sources.list.d/*.list; do [ -r "$f" ] && lists+=("$f"); done
	[ "${#lists[@]}" -gt 0 ] || return 1
	out=$(cat "${lists[@]}" | awk -v codename="$codename" '
		{ sub(/#.*/, "") }
		$1 != "deb" { next }
		{
			opts = ""; i = 1
			if ($2 ~ /^\[/) {
				i = 2; opts = $2; while (opts !~ /\]$/ && i < NF) { i++; opts = opts " " $i }
			}
			uri = $(i + 1); suite = $(i + 2); comps = ""
			for (j = i + 3; j <= NF; j++) comps = comps (comps == "" ? "" : " ") $j
			if (uri !~ /debian/) next
			if (codename != "") { if (suite != codename && suite != codename "-updates") next }
			else if (uri ~ /security|debug|ports/) next
			if (first == "") {
				first = uri; comp = comps
				gsub(/[][]/, " ", opts); n = split(opts, o, /[ \t]+/)
				for (k = 1; k <= n; k++) if (o[k] ~ /^signed-by=/) sb = substr(o[k], 11)
				for (k = 1; k <= n; k++) if (o[k] ~ /^trusted=/) tr = substr(o[k], 9)
			}
			if (uri == first && index(" " suites " ", " " suite " ") == 0)
				suites = suites (suites == "" ? "" : " ") suite
		}
		END {
			if (first == "") exit
			print "Types: deb-src"; print "URIs: " first; print "Suites: " suites
			print "Components: " (comp != "" ? comp : "main")
			if (sb != "") print "Signed-By: " sb
			if (tr != "") print "Trusted: " tr
		}
	')
	[ -n "$out" ] || return 1
	printf '%s\n' "$out"
}

# apt-get with the private source list and lists directory.
private_apt() {
	local a="$CACHE/apt"
	local sandbox=()
	[ "$(id -u)" = 0 ] && sandbox=(-o APT::Sandbox::User=root)
	apt-get -c "$a/apt.conf" \
		-o Dir::Etc::SourceList="$a/weft-src.sources" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$a/lists" \
		"${sandbox[@]}" "$@"
}

SRC_PACKAGES=(musl cmocka lwip)
SRC_KEY="recipe=$RECIPE packages=${SRC_PACKAGES[*]}"

ensure_sources() {
	stamp_ok sources "$SRC_KEY" && return 0
	take_lock
	stamp_ok sources "$SRC_KEY" && return 0
	local a="$CACHE/apt" log="$CACHE/log/sources.log"
	mkdir -p "$a/lists/partial" "$CACHE/log"
	: >"$log"
	local stanza
	stanza=$(debian_src_stanza) ||
		die "found no Debian archive entry (Types: deb, URIs with 'debian', this release's suite) in /etc/apt"
	printf '# written by weft mk/deps.sh from the system entry; used only with apt-get -o Dir::Etc::SourceList\n%s\n' \
		"$stanza" >"$a/weft-src.sources"
	# Read after the system configuration: no binary caches written under
	# /var/cache/apt, no update hooks (they are about the system's lists).
	cat >"$a/apt.conf" <<-'EOF'
	// written by weft mk/deps.sh
	#clear APT::Update::Pre-Invoke;
	#clear APT::Update::Post-Invoke;
	#clear APT::Update::Post-Invoke-Success;
	Dir::Cache::pkgcache "";
	Dir::Cache::srcpkgcache "";
	Acquire::Languages "none";
	EOF
	say "fetching Debian source packages: ${SRC_PACKAGES[*]} (log: $log)"
	cat "$a/weft-src.sources" >>"$log"
	run_logged "$log" "apt-get update (private deb-src list)" private_apt update
	local tmp="$CACHE/src/.fetch"
	rm -rf "$tmp"; mkdir -p "$tmp"
	run_logged "$log" "apt-get source ${SRC_PACKAGES[*]}" \
		in_dir "$tmp" private_apt source "${SRC_PACKAGES[@]}"
	local p dir
	for p in "${SRC_PACKAGES[@]}"; do
		dir=$(cd "$tmp" && for d in "$p"-*/; do [ -d "$d" ] && printf '%s\n' "${d%/}"; done | head -n 1)
		[ -n "$dir" ] || die "apt-get source $p left no $p-*/ directory in $tmp (log: $log)"
		rm -rf "${CACHE:?}/src/$dir"
		mv "$tmp/$dir" "$CACHE/src/$dir"
		ln -sfn "$dir" "$CACHE/src/$p"
	done
	# Keep the .dsc and tarballs next to the trees (provenance).
	find "$tmp" -maxdepth 1 -type f -exec mv -f {} "$CACHE/src/" \;
	rm -rf "$tmp"
	stamp_set sources "$SRC_KEY"
}

# ---------------------------------------------------------------- rv-kernel

# linux-riscv64's suites on a riscv64 kernel (qemu/run-rv-kernel.sh): Debian's
# linux-image-riscv64 and busybox-static for riscv64, from the system's
# Debian mirror in suite RV_SUITE (riscv64 is a release architecture from
# Debian 13, trixie; Debian 12's debian-archive-keyring has its keys), with
# a private apt state (its own sources, lists, status and cache, APT::
# Architecture=riscv64: the system's apt state is not touched). Only the
# kernel's Image, the modules RV_MODULES name (and what they depend on, in
# load order) and busybox are kept.
RV_SUITE=${WEFT_RV_SUITE:-trixie}
# tun: the suites' TAP devices; 9p, 9pnet_virtio: the guest mounts the
# tree over virtio-9p; veth, virtio_net: the network paths' links.
RV_MODULES=(tun veth 9p 9pnet_virtio virtio_net)
# The network scripts (tests/net/*.sh, run in the guest by tests/net/
# rv_kernel.sh) as on x86_64: bash, GNU coreutils and procps (ps -s, ps -p),
# iproute2 (ip netns) and ethtool, curl and wrk, util-linux (setpriv, for
# packet_veth.sh's AF_XDP case without CAP_NET_RAW: busybox's setpriv takes
# other options); with what they depend on, unpacked into userland/, which
# the guest mounts over virtio-9p (its /usr and /etc; Debian's dynamic
# loader, the libraries found where it looks).
RV_USER=(bash coreutils procps iproute2 ethtool curl wrk util-linux)
RV_KEY="recipe=$RECIPE suite=$RV_SUITE modules=${RV_MODULES[*]} user=${RV_USER[*]}"

rv_apt() {
	local a="$CACHE/rv-kernel/apt"
	local sandbox=()
	[ "$(id -u)" = 0 ] && sandbox=(-o APT::Sandbox::User=root)
	"$1" -c "$a/apt.conf" \
		-o Dir::Etc::SourceList="$a/riscv64.sources" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$a/lists" \
		-o Dir::State::status="$a/status" \
		-o Dir::Cache="$a/cache" \
		-o APT::Architecture=riscv64 -o APT::Architectures=riscv64 \
		"${sandbox[@]}" "${@:2}"
}

# rv_module_deps DIR NAME: NAME's .ko under DIR (the unpacked kernel's
# modules), after the modules it depends on (their "depends=" in .modinfo),
# one path a line, each once (RV_SEEN).
declare -A RV_SEEN=()
rv_module_deps() {
	local dir="$1" m="$2" f d
	[ -n "${RV_SEEN[$m]:-}" ] && return 0
	RV_SEEN[$m]=1
	f=$(find "$dir" \( -name "$m.ko" -o -name "$m.ko.xz" -o -name "${m//_/-}.ko.xz" \) | head -n 1)
	[ -n "$f" ] || die "no module $m in the riscv64 kernel package"
	for d in $(xz -dcf "$f" | strings | sed -n 's/^depends=//p' | tr , ' '); do
		rv_module_deps "$dir" "$d"
	done
	printf '%s\n' "$f"
}

cmd_rv_kernel() {
	ensure_packages apt dpkg cpio xz-utils binutils qemu-system-misc opensbi
	local out="$CACHE/rv-kernel"
	local have=(-f "$out/Image" -a -f "$out/base.cpio.gz" -a -x "$out/userland/usr/bin/bash")
	stamp_ok rv-kernel "$RV_KEY" && [ "${have[@]}" ] && return 0
	take_lock
	stamp_ok rv-kernel "$RV_KEY" && [ "${have[@]}" ] && return 0
	local a="$out/apt" log="$CACHE/log/rv-kernel.log" stanza uris signed
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$CACHE/log"
	: >"$log"; : >"$a/status"
	# As ensure_sources's: no caches under /var/cache/apt, no update hooks.
	cat >"$a/apt.conf" <<-'EOF'
	// written by weft mk/deps.sh rv-kernel
	#clear APT::Update::Pre-Invoke;
	#clear APT::Update::Post-Invoke;
	#clear APT::Update::Post-Invoke-Success;
	Dir::Cache::pkgcache "";
	Dir::Cache::srcpkgcache "";
	Acquire::Languages "none";
	EOF
	stanza=$(debian_src_stanza) || die "found no Debian archive entry in /etc/apt"
	uris=${WEFT_RV_MIRROR:-$(printf '%s\n' "$stanza" | sed -n 's/^URIs: *//p')}
	signed=$(printf '%s\n' "$stanza" | sed -n 's/^Signed-By: *//p')
	cat >"$a/riscv64.sources" <<-EOF
	# written by weft mk/deps.sh rv-kernel; used only with apt-get -o Dir::Etc::SourceList
	Types: deb
	URIs: $uris
	Suites: $RV_SUITE
	Components: main
	Architectures: riscv64
	Signed-By: ${signed:-/usr/share/keyrings/debian-archive-keyring.gpg}
	EOF
	say "fetching Debian $RV_SUITE riscv64 packages: linux-image-riscv64 busybox-static ${RV_USER[*]} (log: $log)"
	cat "$a/riscv64.sources" >>"$log"
	run_logged "$log" "apt-get update (private riscv64 list)" rv_apt apt-get update
	# linux-image-riscv64 is a metapackage: the kernel is what it depends on.
	local image
	image=$(rv_apt apt-cache show --no-all-versions linux-image-riscv64 |
		sed -n 's/^Depends: *\(linux-image-[^ ,]*\).*/\1/p' | head -n 1)
	[ -n "$image" ] || die "apt-cache show linux-image-riscv64 names no kernel package (log: $log)"
	local tmp="$out/.fetch"
	rm -rf "$tmp"; mkdir -p "$tmp/root"
	run_logged "$log" "apt-get download $image busybox-static" \
		in_dir "$tmp" rv_apt apt-get download "$image" busybox-static
	local deb versions=""
	for deb in "$tmp"/*.deb; do
		run_logged "$log" "dpkg-deb -x $(basename "$deb")" dpkg-deb -x "$deb" "$tmp/root"
		versions="$versions${versions:+, }$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)"
	done
	local kernel busybox
	kernel=$(find "$tmp/root/boot" -name 'vmlinu[xz]-*' | head -n 1)
	busybox=$(find "$tmp/root" -path '*bin/busybox' -type f | head -n 1)
	if [ -z "$kernel" ] || [ -z "$busybox" ]; then
		die "no kernel or busybox in the packages (log: $log)"
	fi
	# The base initramfs: busybox and the modules, flat in /lib/modules
	# with their load order in /lib/modules/order (the guest's init adds
	# itself: qemu/rv-kernel-init.sh).
	local ir="$tmp/initramfs" m f
	mkdir -p "$ir/bin" "$ir/lib/modules"
	cp "$busybox" "$ir/bin/busybox"
	RV_SEEN=()
	for m in "${RV_MODULES[@]}"; do rv_module_deps "$tmp/root" "$m"; done >"$tmp/modules"
	while read -r f; do
		m=$(basename "$f"); m=${m%.xz}
		xz -dcf "$f" >"$ir/lib/modules/$m"
		echo "${m%.ko}" >>"$ir/lib/modules/order"
	done <"$tmp/modules"
	(cd "$ir" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -9 >"$tmp/base.cpio.gz"
	# The userland: RV_USER and every package they depend on (no
	# recommends), unpacked; of /usr/share only iproute2's tables.
	local pkgs p uversions=""
	pkgs=$(rv_apt apt-cache depends --recurse --no-recommends --no-suggests \
		--no-conflicts --no-breaks --no-replaces --no-enhances "${RV_USER[@]}" |
		grep -v '^[ <]' | sort -u)
	[ -n "$pkgs" ] || die "apt-cache depends ${RV_USER[*]} named nothing (log: $log)"
	mkdir -p "$tmp/user" "$tmp/userland"
	# shellcheck disable=SC2086 # one package a word
	run_logged "$log" "apt-get download (the guest's userland)" \
		in_dir "$tmp/user" rv_apt apt-get download $pkgs
	for deb in "$tmp"/user/*.deb; do
		run_logged "$log" "dpkg-deb -x $(basename "$deb")" dpkg-deb -x "$deb" "$tmp/userland"
		printf '%s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" >>"$tmp/user/versions"
	done
	for p in "${RV_USER[@]}"; do
		uversions="$uversions${uversions:+, }$(grep "^$p " "$tmp/user/versions")"
	done
	find "$tmp/userland/usr/share" -mindepth 1 -maxdepth 1 ! -name iproute2 -exec rm -rf {} +
	rm -rf "$tmp/userland/usr/include" "$tmp/userland/var" "$tmp/userland/boot"
	[ -x "$tmp/userland/usr/bin/bash" ] || die "no bash in the guest's userland (log: $log)"
	cat "$tmp/user/versions" >>"$log"
	rm -rf "$out/Image" "$out/base.cpio.gz" "$out/userland"
	mv "$kernel" "$out/Image"
	mv "$tmp/base.cpio.gz" "$out/base.cpio.gz"
	mv "$tmp/userland" "$out/userland"
	printf '%s\n' "$versions" >"$out/versions"
	printf '%s\n' "$uversions" >"$out/userland.versions"
	printf 'modules: %s\n' "$(tr '\n' ' ' <"$ir/lib/modules/order")" >>"$log"
	rm -rf "$tmp"
	stamp_set rv-kernel "$RV_KEY"
	say "riscv64 kernel ready in $out: $versions; userland: $uversions"
}

# ---------------------------------------------------------------- cross

triplet() { printf '%s-linux-gnu' "$1"; }
debarch() { case "$1" in aarch64) echo arm64;; *) echo "$1";; esac; }

# Version of an unpacked source tree, e.g. musl-1.2.3 (the symlink's target).
src_version() { readlink "$CACHE/src/$1" || echo "$1"; }

ensure_musl() {
	local arch="$1" tri; tri=$(triplet "$arch")
	local prefix="$CACHE/$arch-musl" key
	key="recipe=$RECIPE $(src_version musl) $tri"
	stamp_ok "$arch-musl" "$key" && [ -x "$prefix/bin/musl-gcc" ] && return 0
	take_lock
	stamp_ok "$arch-musl" "$key" && [ -x "$prefix/bin/musl-gcc" ] && return 0
	local src="$CACHE/src/musl" bld="$CACHE/build/$arch-musl" log="$CACHE/log/$arch-musl.log"
	mkdir -p "$CACHE/log"; : >"$log"
	say "building $(src_version musl) for $arch into $prefix (log: $log)"
	rm -rf "$bld" "$prefix"; mkdir -p "$bld"
	run_logged "$log" "musl configure ($arch)" in_dir "$bld" \
		"$src/configure" --target="$tri" CROSS_COMPILE="$tri-" --prefix="$prefix" --disable-shared
	run_logged "$log" "musl make ($arch)" make -C "$bld" -j"${WEFT_JOBS:-$(nproc)}"
	run_logged "$log" "musl make install ($arch)" make -C "$bld" install
	# musl-gcc's specs use -nostdinc: give it the kernel's uapi headers
	# (linux/futex.h, asm/...) from linux-libc-dev-ARCH-cross.
	local d
	for d in linux asm asm-generic drm misc mtd rdma sound video xen; do
		if [ -d "/usr/$tri/include/$d" ] && [ ! -e "$prefix/include/$d" ]; then
			ln -s "/usr/$tri/include/$d" "$prefix/include/$d"
		fi
	done
	[ -x "$prefix/bin/musl-gcc" ] || die "musl install left no $prefix/bin/musl-gcc (log: $log)"
	rm -rf "$bld"
	stamp_set "$arch-musl" "$key"
}

cross_cc() {
	if [ "$2" = picolibc ]; then printf 'riscv64-unknown-elf-gcc\n'
	elif [ "$2" = musl ]; then printf '%s\n' "$CACHE/$1-musl/bin/musl-gcc"
	else printf '%s-gcc\n' "$(triplet "$1")"; fi
}

CMOCKA_DEFS=(-D__WORDSIZE=64 -DHAVE_SIGNAL_H -DHAVE_STRINGS_H -DHAVE_INTTYPES_H
	-DHAVE_MALLOC_H -DHAVE_SIGLONGJMP -DHAVE_STRSIGNAL -DHAVE_STRUCT_TIMESPEC
	-DHAVE_CLOCK_REALTIME -DHAVE_GCC_THREAD_LOCAL_STORAGE)

ensure_cmocka() {
	local arch="$1" libc="$2" tri; tri=$(triplet "$arch")
	local out="$CACHE/$arch-$libc/cmocka" key cc
	cc=$(cross_cc "$arch" "$libc")
	key="recipe=$RECIPE $(src_version cmocka) $arch-$libc"
	[ "$libc" = musl ] && key="$key $(src_version musl)"
	stamp_ok "$arch-$libc-cmocka" "$key" && [ -f "$out/lib/libcmocka.a" ] && return 0
	take_lock
	stamp_ok "$arch-$libc-cmocka" "$key" && [ -f "$out/lib/libcmocka.a" ] && return 0
	local src="$CACHE/src/cmocka" bld="$CACHE/build/$arch-$libc-cmocka"
	local log="$CACHE/log/$arch-$libc-cmocka.log" ar="$tri-ar"
	local defs=("${CMOCKA_DEFS[@]}") extra=()
	if [ "$libc" = picolibc ]; then
		# picolibc has no sigjmp_buf, CLOCK_REALTIME or struct timespec test.
		defs=(-D__WORDSIZE=64 -DHAVE_SIGNAL_H -DHAVE_STRINGS_H -DHAVE_INTTYPES_H
			-DHAVE_MALLOC_H -DHAVE_GCC_THREAD_LOCAL_STORAGE)
		extra=(--specs=picolibc.specs "${BARE_ARCH_FLAGS[@]}")
		ar=riscv64-unknown-elf-ar
	fi
	mkdir -p "$CACHE/log"; : >"$log"
	say "building $(src_version cmocka) for $arch-$libc into $out (log: $log)"
	rm -rf "$bld" "$out"; mkdir -p "$bld" "$out/lib" "$out/include"
	# No HAVE_CONFIG_H: the defines stand in for CMake's config.h. No -Werror.
	run_logged "$log" "compile cmocka.c ($arch-$libc)" "$cc" -O2 "${extra[@]}" "${defs[@]}" \
		-I"$src/include" -c "$src/src/cmocka.c" -o "$bld/cmocka.o"
	run_logged "$log" "archive libcmocka.a ($arch-$libc)" "$ar" rcs "$out/lib/libcmocka.a" "$bld/cmocka.o"
	# cmocka.h includes no header of its own; cmocka_pbc.h is its optional companion.
	cp "$src/include/cmocka.h" "$src/include/cmocka_pbc.h" "$out/include/"
	rm -rf "$bld"
	stamp_set "$arch-$libc-cmocka" "$key"
}

cmd_cross() {
	check_target "$@"
	local arch="$1" libc="$2" tri; tri=$(triplet "$arch")
	ensure_packages make dpkg-dev qemu-user "gcc-$tri" "binutils-$tri" \
		"libc6-dev-$(debarch "$arch")-cross" "linux-libc-dev-$(debarch "$arch")-cross"
	ensure_sources
	[ "$libc" = musl ] && ensure_musl "$arch"
	ensure_cmocka "$arch" "$libc"
}

# Must match board/toolchain/riscv64-unknown-elf.mk.
BARE_ARCH_FLAGS=(-march=rv64imafdc -mabi=lp64d -mcmodel=medany)

cmd_bare() {
	ensure_packages make dpkg-dev gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf \
		qemu-system-misc opensbi u-boot-tools device-tree-compiler u-boot-qemu gdb-multiarch
	ensure_sources
	ensure_cmocka riscv64 picolibc
}

cmd_flags() {
	check_target "$@"
	local arch="$1" libc="$2" out="$CACHE/$1-$2/cmocka"
	printf 'CC := %s\n' "$(cross_cc "$arch" "$libc")"
	printf 'CMOCKA_CFLAGS := -I%s/include -D__WORDSIZE=64\n' "$out"
	printf 'CMOCKA_LIBS := %s/lib/libcmocka.a\n' "$out"
	printf '# note: every file including cmocka.h needs -D__WORDSIZE=64 (in CMOCKA_CFLAGS)%s\n' \
		"$([ "$libc" = musl ] && echo '; link with -static to run under qemu-user')"
}

case "${1:-}" in
	host)  [ $# -eq 1 ] || usage; cmd_host ;;
	cross) [ $# -eq 3 ] || usage; shift; cmd_cross "$@" ;;
	bare)  [ $# -eq 1 ] || usage; cmd_bare ;;
	lwip)  [ $# -eq 1 ] || usage; ensure_packages dpkg-dev; ensure_sources ;;
	bench) [ $# -eq 1 ] || usage; cmd_bench ;;
	rv-kernel) [ $# -eq 1 ] || usage; cmd_rv_kernel ;;
	flags) [ $# -eq 3 ] || usage; shift; cmd_flags "$@" ;;
	-h|--help|help) usage ;;
	*) usage ;;
esac
