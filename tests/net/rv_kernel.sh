#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The network scripts of tests/net/ for linux-riscv64 on a riscv64 kernel:
# each runs inside the guest of qemu/run-rv-kernel.sh (Debian's riscv64
# kernel under qemu-system-riscv64, 2 harts; one guest for them all), as
# root there, with Debian's riscv64 bash, curl, wrk, iproute2 and ethtool
# (mk/deps.sh rv-kernel), against the linux-riscv64 build's examples/httpd,
# examples/echo and bench/echo_load, in network namespaces, TAP devices and
# veth pairs the scripts make inside the guest:
#   echo_tap          echo over lwIP on TAP, then on kernel sockets (epoll),
#                     echo_load as the client
#   echo_tap uring    the same on the io_uring reactor (WEFT_IO=uring)
#   packet_veth       httpd and echo over lwIP on AF_PACKET on a veth pair:
#                     curl, raw bytes from bash, wrk, echo_load
# One line per script (its tally: its last line), then
# "linux-riscv64 RUN_ON=kernel net: N passed, M failed, S skipped". A script
# that skips, crashes, hangs or gives no tally is a failure: the guest has
# root, namespaces and every tool. Each script's output is kept in
# build/net-tests-rv-kernel/<name>.log. The load is smaller than on x86_64
# (ECHO_CONNS=50 for echo_tap: each frame and each wake-up costs the
# emulated kernel's code): what is checked is the same. Not run here:
# httpd_tap.sh (its 60 concurrent fuzzing clients, each an ip netns exec
# and a bash, took minutes to start in the guest), soak.sh, httpd_limits.sh,
# and packet_veth.sh's xdp and xdp_netlink: AF_XDP (BPF link) gave 28
# passed, 1 failed in the guest (2026-12-02), the failure its unprivileged
# case, run with busybox's setpriv, whose options are not util-linux's (the
# userland has no util-linux yet).
# Usage: tests/net/rv_kernel.sh [BUILD_DIR]   (default build/linux-riscv64)
set -u
cd "$(dirname "$0")/../.." || exit 1
build=${1:-build/linux-riscv64}
if [ -z "${WEFT_RV_SESSION:-}" ]; then
	exec qemu/run-rv-kernel.sh --session "$0" "$build"
fi
logs=build/net-tests-rv-kernel
mkdir -p "$logs"
passed=0 failed=0 skipped=0
export WEFT_RV_ENV="ECHO_CONNS"
# run NAME SCRIPT ARGS...: SCRIPT in the guest, its output in NAME.log.
run()
{
	local name=$1 script=$2 log last p f rc start
	shift 2
	log=$logs/$name.log
	start=$(date +%s)
	timeout -k 10 600 qemu/run-rv-kernel.sh "$script" "$@" >"$log" 2>&1
	rc=$?
	last=$(grep -E '^[a-z_]+: ([0-9]+ passed, [0-9]+ failed$|skipped: )' "$log" | tail -1)
	[ -n "$last" ] || last="$(basename "$script" .sh): no tally (exit $rc)"
	printf '  %-20s %s  %ds\n' "$name" "$last" "$(($(date +%s) - start))"
	p=$(printf '%s\n' "$last" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
	f=$(printf '%s\n' "$last" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
	case $last in
	*": skipped: "*)
		echo "  $name skipped in a guest that can run it: failed"
		f=1
		;;
	esac
	if [ -z "$p" ] || { [ "$rc" -ne 0 ] && [ "${f:-0}" -eq 0 ]; }; then
		f=1 # crashed, hung or gave no tally
		echo "  $name: exit $rc"
	fi
	p=${p:-0}
	if [ "$f" -ne 0 ]; then
		echo "---- $log (failures and tail)"
		grep 'FAIL' "$log" | head -20
		tail -15 "$log"
		echo "----"
	fi
	passed=$((passed + p)) failed=$((failed + f))
}
ECHO_CONNS=50 run echo_tap tests/net/echo_tap.sh "$build"
ECHO_CONNS=50 WEFT_IO=uring run echo_tap_uring tests/net/echo_tap.sh "$build"
run packet_veth tests/net/packet_veth.sh "$build" packet
echo "linux-riscv64 RUN_ON=kernel net: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
