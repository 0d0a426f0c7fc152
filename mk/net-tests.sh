#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The network integration tests, against binaries already built
# (build/linux-x86_64 and build/qemu-virt): httpd and echo over TAP in a
# namespace and over kernel sockets, echo's soak and abuse (idle holders,
# killed, half-closed and reset clients; descriptors and RSS back to their
# baseline) on both, httpd and echo over AF_PACKET and over AF_XDP on a veth pair in a
# namespace, httpd's limits (one deadline per request, refusals)
# on the host's loopback, then httpd on qemu-virt through QEMU's host forward,
# and echo on qemu-virt -m 64M over a TAP device holding 1,000 connections
# with a fiber each and with a step-process each (mk/footprint.sh --check,
# the short form of make footprint).
# One line per script (its tally, its last line: a script that skips says
# why), then "net: N passed, M failed, S skipped" (S: scripts that skipped).
# A skip is a failure on a machine that could have run the script: root and
# network namespaces present, probed as the scripts do (lib.sh's ns_add).
# Each script's output is kept in build/net-tests/<script>.log. Exit 1 if
# anything failed.
# Usage: mk/net-tests.sh [LINUX_BUILD_DIR [QEMU_VIRT_BUILD_DIR]]
set -u
cd "$(dirname "$0")/.." || exit 1
linux=${1:-build/linux-x86_64}
bare=${2:-build/qemu-virt}
logs=build/net-tests
mkdir -p "$logs"
TALLY_PASSED=0 TALLY_FAILED=0 TALLY_SKIPPED=0
# shellcheck source=tests/net/lib.sh
. tests/net/lib.sh
probe=weft-probe-$$
if why_not=$(ns_add "$probe"); then
	ip netns del "$probe"
	echo "  this machine has root and network namespaces: no script may skip"
	skip_ok=no
else
	echo "  this machine cannot run the namespace scripts: $why_not"
	skip_ok=yes
fi
# run [-n NAME] SCRIPT ARGS...: its log is NAME.log (default the script's
# name), for a script run twice; its tally counted by lib.sh's t_tally.
run()
{
	local name="" script log rc
	if [ "$1" = -n ]; then
		name=$2
		shift 2
	fi
	script=$1
	shift
	name=${name:-$(basename "$script" .sh)}
	log=$logs/$name.log
	timeout 1800 "$script" "$@" >"$log" 2>&1
	rc=$?
	t_tally "$log" "$rc" "$skip_ok" "$name"
}
run tests/net/httpd_tap.sh "$linux"
run tests/net/echo_tap.sh "$linux"
run tests/net/soak.sh "$linux"
run tests/net/packet_veth.sh "$linux"
run -n xdp_veth tests/net/packet_veth.sh "$linux" xdp
# AF_XDP as on a kernel without BPF links for XDP (before 5.9): attached
# through netlink (WEFT_IO_MISSING=xdp_link; about 25 s).
run -n xdp_netlink_veth tests/net/packet_veth.sh "$linux" xdp_netlink
run tests/net/httpd_limits.sh "$linux"
run tests/net/httpd_qemu.sh "$bare/examples/httpd"
run -n footprint mk/footprint.sh --check "$linux" "$bare"
echo "net: $TALLY_PASSED passed, $TALLY_FAILED failed, $TALLY_SKIPPED skipped"
[ "$TALLY_FAILED" -eq 0 ]
