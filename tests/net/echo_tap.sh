#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples/echo under bench/echo_load inside a network namespace this script
# creates and removes: first on lwIP over a TAP device (the server creates
# wt0 and is 10.77.0.2; the kernel's side is 10.77.0.1/24), then on the
# kernel's sockets over the namespace's loopback. One line per check, then
# "echo_tap: N passed, M failed". Needs root and ip (iproute2); skips without
# root or namespaces.
# Usage: tests/net/echo_tap.sh [BUILD_DIR]   (default build/linux-x86_64)
# ECHO_CONNS (200), ECHO_MSGS (20), ECHO_SIZE (64), ECHO_LIMIT (0: all at
# once) size the load; ECHO_IDLE_MS (10000) is the server's idle timeout.
# The full test: ECHO_CONNS=10000 ECHO_MSGS=100 ECHO_IDLE_MS=60000.
# Single-quoted scripts for bash -c are meant; checks call functions by name.
# shellcheck disable=SC2016,SC2317
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/net/lib.sh
. tests/net/lib.sh
t_init echo_tap
build=${1:-build/linux-x86_64}
echo=$build/examples/echo
load=$build/bench/echo_load
ns_create
needs timeout
for b in "$echo" "$load"; do
	[ -x "$b" ] || { bad "$b exists" "build it first (make)"; t_done; }
done
CONNS=${ECHO_CONNS:-200} MSGS=${ECHO_MSGS:-20} SIZE=${ECHO_SIZE:-64} LIMIT=${ECHO_LIMIT:-0}
PORT=7
# The server drops a client silent this long. Under a heavy load over lwIP a
# connection can stall for seconds (frames lost, retransmission backoff):
# give the full test ECHO_IDLE_MS=60000.
IDLE_MS=${ECHO_IDLE_MS:-10000}
tmp=$T_TMP

# run_load WHAT ARGS...: echo_load in the namespace; passes when it exits 0.
run_load()
{
	local what=$1
	shift
	nsx timeout 1200 "$load" "$@" >"$tmp/load" 2>&1
	local rc=$?
	local line
	line=$(grep '^echo_load: .* errors$' "$tmp/load")
	echo "  ..    $lbl: ${line:-echo_load printed no result (exit $rc)}"
	[ "$rc" = 0 ] || sed -n '1,10s/^/        /p' "$tmp/load"
	check "$lbl: $what" test "$rc" = 0
}

echo_checks()
{
	# An idle client is dropped after ECHO_IDLE_MS (checked at the end).
	"${NSX[@]}" timeout $((IDLE_MS / 1000 + 60)) bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 3; cat <&3' \
		"$addr" "$PORT" >/dev/null 2>&1 &
	local idle=$!
	T_PIDS+=("$idle")
	run_load "$CONNS connections x $MSGS messages of $SIZE B echoed intact" \
		"$addr" "$PORT" "$CONNS" "$MSGS" "$SIZE" "$LIMIT"
	run_load "bulk: 4 connections x 3 messages of 200000 B echoed intact" \
		"$addr" "$PORT" 4 3 200000
	run_load "one byte at a time: 20 connections x 200 messages of 1 B" \
		"$addr" "$PORT" 20 200 1
	wait "$idle"
	check "$lbl: an idle connection is closed (ECHO_IDLE_MS=$IDLE_MS)" test $? = 0
	printf 'hello, echo\n' >"$tmp/hello"
	"${NSX[@]}" timeout 10 bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 3
		cat "$2" >&3; head -c 12 <&3' "$addr" "$PORT" "$tmp/hello" >"$tmp/hello.out" 2>/dev/null
	check "$lbl: a line comes back as it was sent" cmp -s "$tmp/hello" "$tmp/hello.out"
	check "$lbl: the server is still running" kill -0 "$T_SERVER"
	kill -TERM "$T_SERVER"
	stop_wait "$T_SERVER" 10
}

# ---- lwIP over TAP ----------------------------------------------------------
lbl="lwip tap"
addr=10.77.0.2
start_server "$tmp/lwip.log" env WEFT_NET=lwip WEFT_NETIF=tap:wt0 WEFT_IP=10.77.0.2/24 \
	ECHO_PORT=$PORT ECHO_IDLE_MS="$IDLE_MS" "$echo"
if wait_ready "$tmp/lwip.log" '^echo: listening' 20 && wait_until 10 nsx ip link show wt0 >/dev/null 2>&1; then
	ok "$lbl: $(grep '^echo: listening' "$tmp/lwip.log")"
	nsx ip addr add 10.77.0.1/24 dev wt0
	nsx ip link set wt0 txqueuelen 20000 up
	reach() { [ "$("${NSX[@]}" timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1" && printf x >&3 && head -c 1 <&3' "$addr" "$PORT" 2>/dev/null)" = x ]; }
	if wait_until 20 reach; then
		echo_checks
	else
		bad "$lbl: the server answers on $addr:$PORT"
		kill_server
	fi
else
	bad "$lbl: echo starts and creates wt0" "$(tail -3 "$tmp/lwip.log" | tr '\n' ' ')"
	kill_server
fi

# ---- kernel sockets on the namespace's loopback -----------------------------
lbl="kernel"
addr=127.0.0.1
start_server "$tmp/kernel.log" env WEFT_NET=kernel ECHO_ADDR=$addr ECHO_PORT=$PORT \
	ECHO_IDLE_MS="$IDLE_MS" "$echo"
if wait_ready "$tmp/kernel.log" '^echo: listening' 20; then
	ok "$lbl: $(grep '^echo: listening' "$tmp/kernel.log")"
	echo_checks
else
	bad "$lbl: echo starts" "$(tail -3 "$tmp/kernel.log" | tr '\n' ' ')"
	kill_server
fi
t_done
