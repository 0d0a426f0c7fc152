#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# /init of qemu/run-rv-kernel.sh's guest: Debian's riscv64 kernel, busybox
# and the modules of the cache's base.cpio.gz (mk/deps.sh rv-kernel).
# Mounts what a program expects (/proc, /sys, /dev, /dev/pts, /dev/shm,
# /tmp, /run), loads the modules (/lib/modules/order), brings lo up, mounts
# the host's tree read-only at /weft (virtio-9p, tag "weft") and the cache's
# userland (Debian's bash, coreutils, procps, iproute2, ethtool, curl, wrk,
# util-linux and their libraries; tag "userland") at /userland, its /usr
# and /etc the guest's (PATH finds them before busybox), then serves the
# host on /dev/hvc0 (a virtio console, raw), one program at a time:
#   host: "env NAME=value" lines, "arg WORD" lines (the program's path in
#         the guest first), then "go";  "stop" powers the guest off.
#   guest: the program's output (stdout and stderr), then a line
#         "@@weft-guest exit STATUS" (128+N for a program killed by signal N).
# It first says "@@weft-guest ready"; after 600 s with no command (a host
# that went away) it powers the guest off. The kernel's own messages go to
# the serial console (ttyS0), not here.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /weft /userland
/bin/busybox mount -t proc proc /proc
/bin/busybox --install -s /bin
export PATH=/bin HOME=/tmp
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
ln -s /run /var/run 2>/dev/null || { mkdir -p /var && ln -s /run /var/run; }
say() { echo "weft-guest: $*" >/dev/console; }
while read -r m; do
	insmod "/lib/modules/$m.ko" || say "insmod $m failed"
done </lib/modules/order
ip link set lo up || say "lo not up"
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 weft /weft ||
	say "no /weft (virtio-9p tag weft)"
# cache=loose: the userland does not change while a guest runs; kept in the
# guest's page cache, 5 runs of ip and curl took 31 s instead of 85 s.
if mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144,cache=loose userland /userland; then
	# Debian's loader where its programs look for it; its libraries are
	# in /usr/lib/riscv64-linux-gnu, where it looks for them.
	ln -s /userland/usr /usr
	ln -s /userland/etc /etc
	ln -s /usr/lib/ld-linux-riscv64-lp64d.so.1 /lib/ld-linux-riscv64-lp64d.so.1
	export PATH=/usr/sbin:/usr/bin:/bin
else
	say "no /userland (virtio-9p tag userland)"
fi
exec 3<>/dev/hvc0 || { say "no /dev/hvc0"; poweroff -f; }
stty raw -echo <&3
echo "@@weft-guest ready" >&3
while :; do
	set --
	while :; do
		# shellcheck disable=SC3045 # busybox's ash has read -t
		IFS= read -r -t 600 line <&3 || poweroff -f
		case $line in
		"env "*) set -- "$@" "${line#env }" ;;
		"arg "*) set -- "$@" "${line#arg }" ;;
		go) break ;;
		stop) poweroff -f ;;
		esac
	done
	if [ $# -gt 0 ]; then
		(cd /weft && exec env "$@") </dev/null >&3 2>&3
		echo "@@weft-guest exit $?" >&3
	fi
done
