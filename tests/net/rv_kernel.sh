#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The network scripts of tests/net/ for linux-riscv64 on a riscv64 kernel:
# each runs inside the guest of qemu/run-rv-kernel.sh (Debian's riscv64
# kernel under qemu-system-riscv64, 2 harts; one guest for them all), as
# root there, with Debian's riscv64 bash, curl, wrk, iproute2, ethtool and
# util-linux (setpriv; mk/deps.sh rv-kernel), against the linux-riscv64
# build's examples/httpd, examples/echo, bench/echo_load and
# bench/echo_abuse, in network namespaces, TAP devices and veth pairs the
# scripts make inside the guest:
#   echo_tap          echo over lwIP on TAP, then on kernel sockets (epoll),
#                     echo_load as the client
#   echo_tap uring    the same on the io_uring reactor (WEFT_IO=uring)
#   packet_veth       httpd and echo over lwIP on AF_PACKET on a veth pair:
#                     curl, raw bytes from bash, wrk, echo_load
#   packet_veth xdp   the same on AF_XDP (its program attached through a BPF
#                     link), the program gone after SIGTERM and SIGKILL, a
#                     missing queue, interface and CAP_NET_RAW refused
#   packet_veth xdp_netlink  AF_XDP as on a kernel before 5.9: attached
#                     through netlink (WEFT_IO_MISSING=xdp_link)
#   httpd_tap         httpd over lwIP on TAP, then on kernel sockets: curl,
#                     malformed requests, pipelining, fuzzing, wrk, a
#                     graceful stop and its grace period
#   soak              echo's soak and abuse on kernel sockets (epoll, then
#                     io_uring) and on lwIP over TAP: held, killed,
#                     half-closed and reset clients; descriptors and RSS
#                     back to their baseline after each round
#   httpd_limits      httpd's per-request deadline and HTTPD_MAX_CONNS
#                     refusals, on the guest's loopback
# One line per script (its tally: its last line; lib.sh's t_tally), then
# "linux-riscv64 RUN_ON=kernel net: N passed, M failed, S skipped". A script
# that skips, crashes, hangs or gives no tally is a failure: the guest has
# root, namespaces and every tool. Each script's output is kept in
# build/net-tests-rv-kernel/<name>.log. The loads are smaller than on
# x86_64 (each frame, wake-up and process start costs the emulated
# kernel's code), through the scripts' own knobs (WEFT_RV_ENV passes them
# to the guest); what is checked is the same, on fewer clients:
# ECHO_CONNS=50 for echo_tap (200); HTTPD_TAP_FUZZ=12 fuzzing clients for
# httpd_tap (60: each an ip netns exec and a bash, 60 took minutes to start
# in the guest; 12 still send each of the six kinds of input twice);
# soak with SOAK_HOLD=200 SOAK_CONNS=100 SOAK_MSGS=20 SOAK_ROUNDS=1
# SOAK_ABUSE=50 (5000, 2000, 100, 2, 500): descriptors are still checked
# exactly after each round, but RSS (within max(8 MiB, 10 %) of the
# baseline) catches only a larger leak per connection there. httpd_limits
# and packet_veth run as on x86_64 (no counts to shrink).
# Time on a 2-core machine shared with other builds (time tests/net/
# rv_kernel.sh, 2026-12-03): 8 min 5 s, 6 min 28 s and 9 min 59 s, 229
# checks; before xdp, xdp_netlink, httpd_tap, soak and httpd_limits were
# added, 3 min 36 s; they took 62, 40, 92, 80 and 6 s (47, 41, 87, 40, 6 s;
# 67, 87, 137, 89, 7 s with two other builds running).
# Usage: tests/net/rv_kernel.sh [BUILD_DIR]   (default build/linux-riscv64)
set -u
cd "$(dirname "$0")/../.." || exit 1
build=${1:-build/linux-riscv64}
if [ -z "${WEFT_RV_SESSION:-}" ]; then
	exec qemu/run-rv-kernel.sh --session "$0" "$build"
fi
logs=build/net-tests-rv-kernel
mkdir -p "$logs"
# shellcheck source=tests/net/lib.sh
. tests/net/lib.sh
TALLY_PASSED=0 TALLY_FAILED=0 TALLY_SKIPPED=0
export WEFT_RV_ENV="ECHO_CONNS HTTPD_TAP_FUZZ SOAK_HOLD SOAK_CONNS SOAK_MSGS SOAK_ROUNDS SOAK_ABUSE"
# run NAME SCRIPT ARGS...: SCRIPT in the guest, its output in NAME.log, its
# tally counted by lib.sh's t_tally (a skip is a failure here); so is a
# case the script left out for a missing tool ("  skip" lines: packet_veth's
# unprivileged AF_XDP case without setpriv), which the guest has.
run()
{
	local name=$1 script=$2 log rc start
	shift 2
	log=$logs/$name.log
	start=$(date +%s)
	timeout -k 10 600 qemu/run-rv-kernel.sh "$script" "$@" >"$log" 2>&1
	rc=$?
	t_tally "$log" "$rc" no "$name" "$(printf '%-20s ' "$name")" "  $(($(date +%s) - start))s"
	if grep -q '^  skip  ' "$log"; then
		echo "  $name left a case out in a guest that can run it: failed"
		grep '^  skip  ' "$log"
		TALLY_FAILED=$((TALLY_FAILED + 1))
	fi
}
ECHO_CONNS=50 run echo_tap tests/net/echo_tap.sh "$build"
ECHO_CONNS=50 WEFT_IO=uring run echo_tap_uring tests/net/echo_tap.sh "$build"
run packet_veth tests/net/packet_veth.sh "$build" packet
run xdp_veth tests/net/packet_veth.sh "$build" xdp
run xdp_netlink_veth tests/net/packet_veth.sh "$build" xdp_netlink
HTTPD_TAP_FUZZ=12 run httpd_tap tests/net/httpd_tap.sh "$build"
SOAK_HOLD=200 SOAK_CONNS=100 SOAK_MSGS=20 SOAK_ROUNDS=1 SOAK_ABUSE=50 \
	run soak tests/net/soak.sh "$build"
run httpd_limits tests/net/httpd_limits.sh "$build"
echo "linux-riscv64 RUN_ON=kernel net: $TALLY_PASSED passed, $TALLY_FAILED failed, $TALLY_SKIPPED skipped"
[ "$TALLY_FAILED" -eq 0 ]
