#!/bin/bash
# SPDX-License-Identifier: MIT
# Profile examples/echo over lwIP + TAP under the bench's echo load:
#   bench/profile_lwip_echo.sh BUILD_DIR PERF_DATA [CONNS [MSGS [SIZE]]]
# (as root; BUILD_DIR holds examples/echo and bench/echo_load, as after
# `make O=BUILD_DIR all`). The server runs with one worker under
# `perf record -g` in a namespace it shares with the client, as
# mk/bench.sh's echo_lwip row does; then `perf report -i PERF_DATA`.
set -u
B=$1 OUT=$2 C=${3:-10000} M=${4:-100} S=${5:-64} NS=weft-prof
if [ ! -x "$B/examples/echo" ] || [ ! -x "$B/bench/echo_load" ]; then
	echo "profile_lwip_echo: no examples/echo or bench/echo_load in $B" >&2
	exit 2
fi
ip netns del $NS 2>/dev/null
ip netns add $NS && ip netns exec $NS ip link set lo up || exit 2
trap 'ip netns del $NS 2>/dev/null' EXIT
ip netns exec $NS env WEFT_NET=lwip WEFT_NETIF=tap:wp0 WEFT_IP=10.79.1.2/24 WEFT_WORKERS=1 \
	ECHO_PORT=7000 perf record -q -g -o "$OUT" "$B/examples/echo" >"$OUT.server.log" 2>&1 &
perf_pid=$!
for ((i = 0; i < 100; i++)); do
	ip netns exec $NS ip link show wp0 >/dev/null 2>&1 && break
	sleep 0.1
done
if ! ip netns exec $NS ip addr add 10.79.1.1/24 dev wp0 ||
	! ip netns exec $NS ip link set wp0 txqueuelen 20000 up; then
	kill -INT $perf_pid
	exit 2
fi
sleep 0.5
ip netns exec $NS timeout 300 env ECHO_LOAD_TIMEOUT_S=300 "$B/bench/echo_load" 10.79.1.2 7000 \
	"$C" "$M" "$S" 2>&1 | tail -1
kill -INT $perf_pid
wait $perf_pid
