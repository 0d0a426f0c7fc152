#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run a linux-riscv64 program on a riscv64 Linux kernel: Debian's, under
# qemu-system-riscv64 -M virt (OpenSBI, QEMU_SMP harts, default 2), and exit
# with the program's status. The runner of make TARGET=linux-riscv64
# RUN_ON=kernel check, which mk/run-tests.sh calls once a suite as it calls
# qemu-riscv64 otherwise.
#
# Usage: qemu/run-rv-kernel.sh PROGRAM [ARG ...]
#        qemu/run-rv-kernel.sh --session COMMAND [ARG ...]
#   PROGRAM must be inside the shared tree (WEFT_RV_SHARE, default the
#   current directory), which the guest mounts read-only at /weft and runs
#   the program from (so relative paths are the host's). The program's
#   output is this script's stdout, as it comes.
#   --session: fetch the kernel if it is not cached (mk/deps.sh rv-kernel),
#   print its packages' versions, run COMMAND (mk/run-tests.sh ...) with
#   WEFT_RV_SESSION set, so that the programs it runs share one guest, then
#   stop that guest; exit with COMMAND's status.
# Environment: QEMU_SMP (default 2), QEMU_MEM (default 1G); WEFT_RV_SESSION
#   (a directory: the guest of a session; unset, each run boots its own);
#   WEFT_RV_LIFETIME (default 3600 s: a guest left behind by a run that was
#   killed ends by then, and the guest itself powers off after 600 s idle).
#   The variables WEFT_* and WT_* (but WEFT_CACHE, WEFT_SHIM, WEFT_SUITES
#   and WEFT_RV_*) are passed on to the program, and those WEFT_RV_ENV names
#   (a list: the network scripts' sizes); so is WT_SLOW=1, which the suites
#   that size by it read as a slow machine (full-system emulation: a
#   thread's wake-up costs the emulated kernel's scheduler, not the host's).
#
# A guest (qemu/rv-kernel-init.sh is its /init) runs one program at a time,
# told what over a virtio console (a pair of fifos on the host), and says
# how it ended there. A run that is cut short (mk/run-tests.sh's timeout
# sends SIGTERM) stops its guest; so does a guest found busy (the run before
# was killed outright); the next run boots a new one. A guest that ends
# mid-run (a kernel panic) fails that run, with the serial console's last
# lines. The kernel, its modules and busybox are from the cache
# ($WEFT_CACHE/rv-kernel, mk/deps.sh rv-kernel).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cache=${WEFT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/weft}
kdir=$cache/rv-kernel
die() { echo "run-rv-kernel: $*" >&2; exit 2; }

if [ "${1:-}" = --session ]; then
	shift
	[ $# -ge 1 ] || die "usage: $0 --session COMMAND [ARG ...]"
	"$here/../mk/deps.sh" rv-kernel || exit 2
	echo "riscv64 kernel: $(cat "$kdir/versions"), qemu-system-riscv64" \
		"$(qemu-system-riscv64 --version | sed -n '1s/.*version \([^ ]*\).*/\1/p')," \
		"${QEMU_SMP:-2} harts; guest userland: $(cat "$kdir/userland.versions")"
	WEFT_RV_SESSION=$(mktemp -d "${TMPDIR:-/tmp}/weft-rv.XXXXXX") || exit 2
	export WEFT_RV_SESSION
	"$@"
	rc=$?
	"$0" --stop
	rm -rf "$WEFT_RV_SESSION"
	exit $rc
fi

S=${WEFT_RV_SESSION:-}
own=0
if [ -z "$S" ]; then
	S=$(mktemp -d "${TMPDIR:-/tmp}/weft-rv.XXXXXX") || exit 2
	own=1
fi
[ -d "$S" ] || die "WEFT_RV_SESSION=$S is not a directory"

# qemu.pid: timeout(1)'s pid and QEMU's.
alive() {
	local pid q IFS=$' \t\n'
	[ -f "$S/qemu.pid" ] && read -r pid q <"$S/qemu.pid" && kill -0 "${q:-$pid}" 2>/dev/null
}

# Stop the guest: QEMU killed outright (a guest whose console nobody reads
# can keep QEMU blocked in a write, deaf to SIGTERM; there is no disk to
# save), then the timeout(1) above it.
# (IFS: a trap that comes during next_line's read keeps its empty IFS.)
stop_vm() {
	local pid q IFS=$' \t\n'
	[ -f "$S/qemu.pid" ] || return 0
	read -r pid q <"$S/qemu.pid"
	[ -n "${q:-}" ] && kill -KILL "$q" 2>/dev/null
	kill -TERM "$pid" 2>/dev/null
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" ${q:+"$q"} 2>/dev/null
	rm -f "$S/qemu.pid" "$S/busy"
}

if [ "${1:-}" = --stop ]; then
	stop_vm
	exit 0
fi
[ $# -ge 1 ] || die "usage: $0 PROGRAM [ARG ...] | --session COMMAND [ARG ...] | --stop"
[ -f "$1" ] || die "no such program: $1"
share=$(cd "${WEFT_RV_SHARE:-.}" && pwd -P)
prog=$(cd "$(dirname "$1")" && pwd -P)/$(basename "$1")
case $prog in "$share"/*) ;; *) die "$1 is not inside $share (WEFT_RV_SHARE)";; esac
if [ ! -f "$kdir/Image" ] || [ ! -f "$kdir/base.cpio.gz" ] || [ ! -d "$kdir/userland" ]; then
	die "no riscv64 kernel in $kdir: mk/deps.sh rv-kernel fetches it"
fi
command -v qemu-system-riscv64 >/dev/null ||
	die "qemu-system-riscv64 missing (mk/deps.sh bare installs it)"

# console_tail: the serial console's last lines (the kernel's messages).
console_tail() {
	echo "run-rv-kernel: the guest's serial console, last lines ($S/console.log):"
	tail -n 30 "$S/console.log" 2>/dev/null | tr -d '\r' | sed 's/^/  | /'
}

# next_line DEADLINE: the guest's next line into $line (fd 4), reading a
# second at a time so that a guest that ended is noticed; a partial line
# read when a second runs out is kept. Status 1: the guest ended (or, with
# a DEADLINE in seconds since the epoch, that passed).
partial=""
next_line() {
	local part
	while :; do
		if IFS= read -r -t 1 part <&4; then
			line=$partial$part partial=""
			line=${line%$'\r'}
			return 0
		fi
		partial=$partial$part
		alive || return 1
		[ "$1" -gt 0 ] && [ "$(date +%s)" -ge "$1" ] && return 1
	done
}

boot() {
	stop_vm
	rm -f "$S/ctl.in" "$S/ctl.out" "$S/console.log"
	mkfifo "$S/ctl.in" "$S/ctl.out" || exit 2
	# The initramfs: the cache's (busybox, modules) and, after it, /init.
	local ir="$S/init.d"
	rm -rf "$ir"
	mkdir -p "$ir"
	cp "$here/rv-kernel-init.sh" "$ir/init" && chmod 755 "$ir/init"
	{
		cat "$kdir/base.cpio.gz"
		(cd "$ir" && echo init | cpio -o -H newc -R 0:0 --quiet) | gzip -1
	} >"$S/initramfs.cpio.gz" || exit 2
	# setsid: the guest outlives this run (the session's next runs use it)
	# and is not in the process group mk/run-tests.sh's timeout signals.
	# shellcheck disable=SC2054 # the commas are inside option values
	setsid timeout -k 10 "${WEFT_RV_LIFETIME:-3600}" qemu-system-riscv64 -M virt \
		-smp "${QEMU_SMP:-2}" -m "${QEMU_MEM:-1G}" -bios default \
		-display none -monitor none -serial "file:$S/console.log" -no-reboot \
		-kernel "$kdir/Image" -initrd "$S/initramfs.cpio.gz" \
		-append "console=ttyS0 quiet panic=-1" \
		-fsdev "local,id=fs0,path=$share,security_model=none,readonly=on" \
		-device virtio-9p-pci,fsdev=fs0,mount_tag=weft \
		-fsdev "local,id=fs1,path=$kdir/userland,security_model=none,readonly=on" \
		-device virtio-9p-pci,fsdev=fs1,mount_tag=userland \
		-device virtio-serial-pci -chardev "pipe,id=ctl,path=$S/ctl" \
		-device virtconsole,chardev=ctl \
		</dev/null >"$S/qemu.log" 2>&1 &
	local t=$! q=""
	disown "$t" # its end is stop_vm's business, not a job notice
	for _ in $(seq 50); do
		q=$(pgrep -P "$t" -x qemu-system-ris) && break
		sleep 0.1
	done
	echo "$t $q" >"$S/qemu.pid"
	exec 3<>"$S/ctl.in" 4<>"$S/ctl.out"
	# Up within 300 s (about 5 s on an idle machine).
	local deadline=$(($(date +%s) + 300))
	while next_line "$deadline"; do
		[ "$line" = "@@weft-guest ready" ] && return 0
	done
	echo "run-rv-kernel: the guest did not come up" >&2
	cat "$S/qemu.log" >&2
	console_tail >&2
	stop_vm
	exit 2
}

# shellcheck disable=SC2317 # called by the traps below
finish() {
	[ "$own" = 1 ] || return 0
	stop_vm
	rm -rf "$S"
}
trap 'trap - TERM INT HUP; echo "run-rv-kernel: stopped: the guest is stopped too" >&2; stop_vm; finish; exit 143' TERM INT HUP
trap finish EXIT

# A guest found busy ran a program whose run was killed: not to be reused.
[ -e "$S/busy" ] && stop_vm
if alive; then
	exec 3<>"$S/ctl.in" 4<>"$S/ctl.out"
else
	boot
fi
touch "$S/busy"
{
	while IFS= read -r v; do
		case $v in
		WEFT_CACHE | WEFT_SHIM | WEFT_SUITES | WEFT_RV_*) ;;
		WEFT_* | WT_*) printf 'env %s=%s\n' "$v" "${!v}" ;;
		esac
	done < <(compgen -e)
	for v in ${WEFT_RV_ENV:-}; do
		[ -n "${!v+set}" ] && printf 'env %s=%s\n' "$v" "${!v}"
	done
	echo "env WT_SLOW=1"
	printf 'arg /weft/%s\n' "${prog#"$share"/}"
	shift
	for a in "$@"; do printf 'arg %s\n' "$a"; done
	echo go
} >&3
marker="@@weft-guest exit "
while next_line 0; do
	case $line in
	*"$marker"[0-9]*)
		[ -n "${line%%"$marker"*}" ] && printf '%s\n' "${line%%"$marker"*}"
		rm -f "$S/busy"
		rc=${line##*"$marker"}
		# The guest's shell says 128+N for a program killed by signal N.
		if [ "$rc" -gt 128 ] && [ "$rc" -le 192 ]; then
			echo "run-rv-kernel: ${prog##*/} was killed by signal $((rc - 128))" \
				"($(kill -l $((rc - 128)) 2>/dev/null))" >&2
		elif [ "$rc" -ne 0 ]; then
			echo "run-rv-kernel: ${prog##*/} exited with status $rc" >&2
		fi
		exit "$rc"
		;;
	esac
	printf '%s\n' "$line"
done
[ -n "$partial" ] && printf '%s\n' "$partial"
echo "run-rv-kernel: the guest ended before the program did" >&2
console_tail >&2
stop_vm
exit 125
