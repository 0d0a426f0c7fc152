#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# httpd's limits against clients that hold it up, on kernel sockets on the
# host's loopback (no root, no namespace): a request whose body trickles in
# a byte at a time, each byte well within the idle time, gets 408 once its
# one deadline (HTTPD_REQUEST_MS from its first byte) has passed, not the
# 405 it would get had every read a fresh deadline; and a connection over
# HTTPD_MAX_CONNS gets a 503 while the refusal is logged once for the burst.
# Usage: tests/net/httpd_limits.sh BUILD_DIR (build/linux-x86_64)
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/net/lib.sh
. tests/net/lib.sh
t_init httpd_limits
b=${1:-build/linux-x86_64}
tmp=$T_TMP

# start NAME ENV...: httpd on kernel sockets on 127.0.0.1, a free port.
start()
{
	local name=$1
	shift
	start_server "$tmp/$name.log" env WEFT_NET=kernel HTTPD_ADDR=127.0.0.1 HTTPD_PORT=0 "$@" \
		"$b/examples/httpd"
	if ! wait_ready "$tmp/$name.log" '^httpd: serving' 20; then
		bad "httpd ($name) starts" "$(tail -3 "$tmp/$name.log" | tr '\n' ' ')"
		t_done
	fi
	port=$(sed -n 's|^httpd: serving http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$tmp/$name.log")
}

stop()
{
	kill -TERM "$T_SERVER" 2>/dev/null
	stop_wait "$T_SERVER" 10
	check "httpd ($1) exits 0 on SIGTERM (status $T_STATUS)" [ "$T_STATUS" = 0 ]
}

# ---- One deadline per request: HTTPD_REQUEST_MS=1000 -------------------------
start idle HTTPD_IDLE_MS=1000 HTTPD_REQUEST_MS=1000
# A POST to / whose 20-byte body comes a byte every 0.2 s: 4 s in all. Its
# status line is read once the server closes (bounded at 15 s).
st=$(timeout 15 bash -c '
	trap "" PIPE
	exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 3
	printf "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 20\r\n\r\n" >&3
	for i in $(seq 20); do printf x >&3 2>/dev/null || break; sleep 0.2; done
	head -1 <&3' "$port" 2>/dev/null | tr -d '\r')
case "$st" in
"HTTP/1.1 408"*) ok "a body trickled in over 4 s gets 408 at the request's 1 s deadline" ;;
*) bad "a body trickled in over 4 s gets 408" "got '${st:-nothing}'" ;;
esac
stop idle

# ---- Refusals: HTTPD_MAX_CONNS=1, a long idle time ---------------------------
start busy HTTPD_MAX_CONNS=1 HTTPD_IDLE_MS=60000
# The one connection httpd takes is held open (accepted first: it is first
# in the queue); the next two are refused with a 503, logged once.
exec 4<>"/dev/tcp/127.0.0.1/$port"
printf 'GET / HTTP/1.1\r\nHost: t\r\n\r\n' >"$tmp/get"
s1=$(raw 127.0.0.1 "$port" "$tmp/get" 10 | head -1 | tr -d '\r')
s2=$(raw 127.0.0.1 "$port" "$tmp/get" 10 | head -1 | tr -d '\r')
case "$s1|$s2" in
"HTTP/1.1 503 Service Unavailable|HTTP/1.1 503 Service Unavailable")
	ok "connections over HTTPD_MAX_CONNS get 503" ;;
*) bad "connections over HTTPD_MAX_CONNS get 503" "got '$s1' and '$s2'" ;;
esac
n=$(grep -c 'refusing connections: HTTPD_MAX_CONNS' "$tmp/busy.log")
if [ "$n" -eq 1 ]; then
	ok "the burst of refusals is logged once, with its reason"
else
	bad "the burst of refusals is logged once" "$n log lines"
fi
exec 4>&-
# Once the held connection is gone, httpd serves again.
code() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/")" = 200 ]; }
check "after the held connection closes, a request gets 200" wait_until 10 code
stop busy
t_done
