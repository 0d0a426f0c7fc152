#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples/httpd against real clients (curl, wrk, raw bytes from bash) inside
# a network namespace this script creates and removes: first on lwIP over a
# TAP device (the server creates wt0; the kernel's side is 10.77.0.1/24, the
# server 10.77.0.2), then on the kernel's sockets over the namespace's
# loopback. One line per check, then "httpd_tap: N passed, M failed".
# Needs root, ip (iproute2), curl, wrk; skips without root or namespaces.
# HTTPD_TAP_FUZZ (60): the fuzzing clients sent at once, each stack (each
# one a bash in the namespace: tests/net/rv_kernel.sh gives fewer in its
# emulated guest; the same six kinds of input, the same checks after them).
# Usage: tests/net/httpd_tap.sh [BUILD_DIR]   (default build/linux-x86_64)
# Single-quoted scripts for bash -c are meant; checks call functions by name.
# shellcheck disable=SC2016,SC2317
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/net/lib.sh
. tests/net/lib.sh
t_init httpd_tap
build=${1:-build/linux-x86_64}
httpd=$build/examples/httpd
ns_create
needs curl wrk timeout
[ -x "$httpd" ] || { bad "$httpd exists" "build it first (make)"; t_done; }

PORT=8080
IDLE_MS=5000
FUZZ=${HTTPD_TAP_FUZZ:-60}
tmp=$T_TMP

# req NAME TEXT: a request file, TEXT's backslash escapes (\r\n) applied.
req()
{
	printf '%b' "$2" >"$tmp/$1"
}

# code URL [curl options]: print the status curl got ("000" when none).
code()
{
	local url=$1
	shift
	nsx curl -s -o "$tmp/body" -D "$tmp/head" --max-time 10 -w '%{http_code}' "$@" "$url" 2>/dev/null
}

# counter NAME: a counter from /stats.
counter()
{
	nsx curl -s --max-time 5 "$base/stats" 2>/dev/null | sed -n "s/^$1 //p"
}

# The checks every stack gets; $lbl names the stack in each line.
http_checks()
{
	local c out rc
	c=$(code "$base/")
	check "$lbl: GET / is 200 with the page" \
		test "$c" = 200 -a "$(grep -c 'weft httpd' "$tmp/body")" -ge 1
	c=$(code "$base/stats")
	check "$lbl: GET /stats is 200 with the counters" \
		grep -q '^connections_accepted [0-9]' "$tmp/body"
	check "$lbl: /stats has fibers, workers, switches" \
		test "$c" = 200 -a "$(grep -cE '^(fibers|workers|switches) [0-9]+$' "$tmp/body")" = 3
	c=$(code "$base/stats?json")
	check "$lbl: GET /stats?json is JSON" \
		test "$c" = 200 -a "$(grep -c '^{"fibers": [0-9]*, "workers": [0-9]*' "$tmp/body")" = 1
	req headreq 'HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
	raw "$addr" "$PORT" "$tmp/headreq" 10 >"$tmp/head.out"
	rc=$?
	check "$lbl: HEAD / is 200 with a length and no body" \
		test "$rc" = 0 -a "$(head -1 "$tmp/head.out" | tr -d '\r')" = "HTTP/1.1 200 OK" \
		-a "$(grep -ci '^content-length: [1-9]' "$tmp/head.out")" = 1 \
		-a "$(tail -c 4 "$tmp/head.out" | od -An -tx1 | tr -d ' \n')" = 0d0a0d0a
	c=$(code "$base/nowhere")
	check "$lbl: GET /nowhere is 404" test "$c" = 404
	c=$(code "$base/" -X POST -d 'a=1')
	check "$lbl: POST / is 405 with Allow" \
		test "$c" = 405 -a "$(grep -ci '^allow: GET, HEAD' "$tmp/head")" = 1

	# Keep-alive: curl reuses the connection for the second URL.
	nsx curl -sv --max-time 10 -o /dev/null -o /dev/null "$base/" "$base/stats" \
		>"$tmp/ka" 2>&1
	check "$lbl: keep-alive: curl re-uses the connection" \
		grep -Eqi 're-using existing (http: )?connection' "$tmp/ka"

	# Malformed and refused requests: the answer, then the server closes
	# (raw exits 0 only when the server closed the connection).
	local -a cases=(
		"garbage|GARBAGE\r\n\r\n|400"
		"version|GET / HTTP/2.0\r\nHost: x\r\n\r\n|400"
		"no-host|GET / HTTP/1.1\r\n\r\n|400"
		"bad-header|GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n|400"
		"obs-fold|GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n  b\r\n\r\n|400"
		"nul|GET / HTTP/1.1\r\nHost: x\r\nX: a\001b\r\n\r\n|400"
		"two-lengths|POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab|400"
		"chunked|POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n|501"
		"too-large|POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n|413"
		"expect|GET / HTTP/1.1\r\nHost: x\r\nExpect: tea\r\n\r\n|417"
		"http10|GET / HTTP/1.0\r\n\r\n|200"
	)
	local cs name text want
	for cs in "${cases[@]}"; do
		IFS='|' read -r name text want <<<"$cs"
		req "$name" "$text"
		out=$(raw "$addr" "$PORT" "$tmp/$name" 10)
		rc=$?
		check "$lbl: $name: $want, then the server closes" \
			test "$rc" = 0 -a "$(printf '%s' "$out" | head -1 | tr -d '\r' | cut -d' ' -f2)" = "$want"
	done

	# Oversized headers: 431 (from curl, which sends 9 KB of one header).
	local big
	big=$(head -c 9000 /dev/zero | tr '\0' a)
	c=$(code "$base/" -H "X-Big: $big")
	check "$lbl: 9 KB of headers is 431" test "$c" = 431
	{ printf 'GET / HTTP/1.1\r\nHost: x\r\n'; for i in $(seq 100); do printf 'X-%d: 1\r\n' "$i"; done; printf '\r\n'; } >"$tmp/many"
	out=$(raw "$addr" "$PORT" "$tmp/many" 10)
	rc=$?
	check "$lbl: 100 headers is 431, then the server closes" \
		test "$rc" = 0 -a "$(printf '%s' "$out" | head -1 | tr -d '\r')" = "HTTP/1.1 431 Request Header Fields Too Large"

	# 50 pipelined requests on one connection, the last asking to close;
	# one with a body in between.
	{
		for i in $(seq 24); do printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n'; done
		printf 'POST /stats HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello'
		for i in $(seq 24); do printf 'HEAD /stats HTTP/1.1\r\nHost: x\r\n\r\n'; done
		printf 'GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
	} >"$tmp/pipe"
	out=$(raw "$addr" "$PORT" "$tmp/pipe" 20)
	rc=$?
	check "$lbl: 50 pipelined requests get 50 answers in order, then close" \
		test "$rc" = 0 -a "$(printf '%s' "$out" | grep -c '^HTTP/1.1 ')" = 50 \
		-a "$(printf '%s' "$out" | grep '^HTTP/1.1 ' | sed -n 25p | cut -d' ' -f2)" = 405 \
		-a "$(printf '%s' "$out" | grep '^HTTP/1.1 ' | tail -1 | cut -d' ' -f2)" = 404

	# An idle connection is closed after HTTPD_IDLE_MS.
	: >"$tmp/empty"
	out=$(raw "$addr" "$PORT" "$tmp/empty" 15)
	rc=$?
	check "$lbl: an idle connection is closed (HTTPD_IDLE_MS=$IDLE_MS)" test "$rc" = 0 -a -z "$out"

	# Fuzz: FUZZ (60) clients at once send random bytes, truncated
	# requests, long lines, and give up after 3 s; the server must stay up
	# and answer. Seeded by the PID, printed to replay.
	echo "  ..    $lbl: fuzzing, $FUZZ clients (seed $$)"
	RANDOM=$$
	local i n fz=()
	for i in $(seq "$FUZZ"); do
		case $((i % 6)) in
		0) head -c $((RANDOM % 4000 + 1)) /dev/urandom >"$tmp/fz$i" ;;
		1) { printf 'GET / HTTP/1.1\r\nHost: x\r\nX: '; head -c $((RANDOM % 12000)) /dev/urandom; } >"$tmp/fz$i" ;;
		2) printf 'GET /%s HTTP/1.1\r\nHost: x\r\n\r\n' "$(head -c $((RANDOM % 10000)) /dev/zero | tr '\0' b)" >"$tmp/fz$i" ;;
		3) printf 'GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n' | head -c $((RANDOM % 50 + 1)) >"$tmp/fz$i" ;;
		4) { printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n'; head -c $((RANDOM % 300)) /dev/urandom; } >"$tmp/fz$i" ;;
		5) { for n in $(seq $((RANDOM % 40))); do printf '\r\n'; done; printf 'GET / HTTP/1.1\r\n\r\n'; } >"$tmp/fz$i" ;;
		esac
		raw "$addr" "$PORT" "$tmp/fz$i" 3 >/dev/null &
		fz+=($!)
	done
	T_PIDS+=("${fz[@]}")
	wait "${fz[@]}"
	c=$(code "$base/")
	check "$lbl: still serving after the fuzzing" test "$c" = 200

	# wrk, then no leak once it is gone.
	httpd_load "$lbl" "$base"
}

# Graceful stop: an idle connection is closed, a request in flight (its head
# half sent before the signal, the rest after) is answered with "Connection:
# close", and the server exits 0.
graceful_checks()
{
	local pid=$T_SERVER log=$1
	mkfifo "$tmp/go"
	"${NSX[@]}" timeout 20 bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 3; cat <&3' "$addr" "$PORT" \
		>"$tmp/idle.out" 2>/dev/null &
	local idle=$!
	T_PIDS+=("$idle")
	"${NSX[@]}" timeout 20 bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 3
		printf "GET /stats HTTP/1.1\r\nHost: x\r\n" >&3
		read -r -t 15 _ <"$2"
		printf "\r\n" >&3
		cat <&3' "$addr" "$PORT" "$tmp/go" >"$tmp/flight.out" 2>/dev/null &
	local flight=$!
	T_PIDS+=("$flight")
	# Both are accepted before the signal: 2 plus the one asking.
	conns3() { [ "$(counter connections_open)" = 3 ]; }
	check "$lbl: stop: an idle connection and a half-sent request are open" wait_until 10 conns3
	kill -TERM "$pid"
	wait_until 10 grep -q '^httpd: signal' "$log"
	echo go >"$tmp/go" &
	local go=$!
	T_PIDS+=("$go")
	wait "$flight"
	local frc=$?
	wait "$idle"
	local irc=$?
	check "$lbl: stop: the idle connection is closed without an answer" \
		test "$irc" = 0 -a ! -s "$tmp/idle.out"
	check "$lbl: stop: the request in flight is answered 200 with Connection: close" \
		test "$frc" = 0 -a "$(head -1 "$tmp/flight.out" | tr -d '\r')" = "HTTP/1.1 200 OK" \
		-a "$(grep -ci '^connection: close' "$tmp/flight.out")" = 1
	stop_wait "$pid" 15
	check "$lbl: stop: httpd exits 0 (got $T_STATUS)" test "$T_STATUS" = 0
	check "$lbl: stop: httpd reports it stopped" grep -q '^httpd: stopped:' "$log"
	rm -f "$tmp/go"
}

# ---- lwIP over TAP ----------------------------------------------------------
lbl="lwip tap"
addr=10.77.0.2
base=http://$addr:$PORT
start_server "$tmp/lwip.log" env WEFT_NET=lwip WEFT_NETIF=tap:wt0 WEFT_IP=10.77.0.2/24 \
	HTTPD_PORT=$PORT HTTPD_IDLE_MS=$IDLE_MS HTTPD_GRACE_MS=5000 "$httpd"
if wait_ready "$tmp/lwip.log" '^httpd: serving' 20 && wait_until 10 nsx ip link show wt0 >/dev/null 2>&1; then
	ok "$lbl: $(grep '^httpd: serving' "$tmp/lwip.log")"
	nsx ip addr add 10.77.0.1/24 dev wt0
	nsx ip link set wt0 txqueuelen 20000 up
	if wait_until 20 test "$(code "$base/")" = 200; then
		http_checks
		graceful_checks "$tmp/lwip.log"
	else
		bad "$lbl: curl reaches $base/"
		kill_server
	fi
else
	bad "$lbl: httpd starts and creates wt0" "$(tail -3 "$tmp/lwip.log" | tr '\n' ' ')"
	kill_server
fi

# ---- kernel sockets on the namespace's loopback -----------------------------
lbl="kernel"
addr=127.0.0.1
base=http://$addr:$PORT
start_server "$tmp/kernel.log" env WEFT_NET=kernel HTTPD_ADDR=$addr HTTPD_PORT=$PORT \
	HTTPD_IDLE_MS=$IDLE_MS HTTPD_GRACE_MS=5000 "$httpd"
if wait_ready "$tmp/kernel.log" '^httpd: serving' 20; then
	ok "$lbl: $(grep '^httpd: serving' "$tmp/kernel.log")"
	http_checks
	graceful_checks "$tmp/kernel.log"
else
	bad "$lbl: httpd starts" "$(tail -3 "$tmp/kernel.log" | tr '\n' ' ')"
	kill_server
fi

# The grace period runs out: a request that never completes is cancelled and
# httpd still exits 0.
lbl="kernel grace"
start_server "$tmp/grace.log" env WEFT_NET=kernel HTTPD_ADDR=$addr HTTPD_PORT=$PORT \
	HTTPD_IDLE_MS=60000 HTTPD_GRACE_MS=1000 "$httpd"
if wait_ready "$tmp/grace.log" '^httpd: serving' 20; then
	"${NSX[@]}" timeout 30 bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 3
		printf "GET / HTTP/1.1\r\n" >&3; cat <&3' "$addr" "$PORT" >"$tmp/stuck.out" 2>/dev/null &
	stuck=$!
	T_PIDS+=("$stuck")
	conns2() { [ "$(counter connections_open)" = 2 ]; }
	if wait_until 10 conns2; then
		kill -TERM "$T_SERVER"
		stop_wait "$T_SERVER" 15
		check "$lbl: a stuck request is cancelled after HTTPD_GRACE_MS and httpd exits 0 (got $T_STATUS)" \
			test "$T_STATUS" = 0
		check "$lbl: httpd says the grace period ran out" grep -q 'grace period over' "$tmp/grace.log"
		wait "$stuck"
		check "$lbl: the stuck connection was closed" test $? = 0
	else
		bad "$lbl: the stuck connection is open"
		kill_server
	fi
else
	bad "$lbl: httpd starts" "$(tail -3 "$tmp/grace.log" | tr '\n' ' ')"
	kill_server
fi
t_done
