#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lwIP over AF_PACKET ("packet:IFNAME") or AF_XDP ("xdp:IFNAME"):
# examples/httpd, then examples/echo, on one end of a veth pair inside a
# network namespace this script creates and removes (the pair lives in the
# namespace and goes with it). The kernel's end, vk0, is 10.78.0.1/24, with
# segmentation offloads off (or the kernel hands the packet socket frames
# merged beyond the MTU, and lwIP drops them). For AF_PACKET its checksum
# offload is left on: the frames come with their TCP checksum left to the
# hardware, and the packet device completes it (kernel-shim/linux/csum.c;
# without that every check below fails). AF_XDP gets frames as the wire has
# them, with no word of an unfinished checksum, so for it the offload is off.
# The other end, vl0, is up with no kernel address, so the kernel ignores
# what comes for 10.78.0.2 and only lwIP (on vl0's MAC) answers. Clients:
# curl, raw bytes from bash, wrk, bench/echo_load. For AF_XDP also: the XDP
# program is on vl0 while a server runs and gone once it stops, on SIGTERM
# and on SIGKILL alike; a queue the interface lacks and a user without the
# right each end the server at once with a line naming the cause. One line
# per check, then "packet_veth: N passed, M failed" (xdp_veth for AF_XDP).
# xdp_netlink: AF_XDP as on a kernel without BPF links for XDP (before 5.9;
# WEFT_IO_MISSING=xdp_link hides them): the servers say so in one line and
# attach the program through netlink; it is gone once a server stops on
# SIGTERM, but stays after SIGKILL and refuses the next server, with a line
# saying how to remove it, until `ip link set dev vl0 xdp off`.
# Needs root, ip (iproute2), ethtool, curl, wrk; skips without root or
# namespaces.
# Usage: tests/net/packet_veth.sh [BUILD_DIR [packet|xdp|xdp_netlink]]
#        (default build/linux-x86_64 packet)
# Single-quoted scripts for bash -c are meant; checks call functions by name.
# shellcheck disable=SC2016,SC2317
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/net/lib.sh
. tests/net/lib.sh
kind=${2:-packet}
xdp=0 link=1
case $kind in
packet) ;;
xdp) xdp=1 ;;
xdp_netlink)
	xdp=1 link=0
	export WEFT_IO_MISSING=xdp_link
	;;
*)
	echo "usage: $0 [BUILD_DIR [packet|xdp|xdp_netlink]]" >&2
	exit 2
	;;
esac
t_init "${kind}_veth"
build=${1:-build/linux-x86_64}
httpd=$build/examples/httpd
echo=$build/examples/echo
load=$build/bench/echo_load
ns_create
needs curl wrk timeout ethtool
for b in "$httpd" "$echo" "$load"; do
	[ -x "$b" ] || { bad "$b exists" "build it first (make)"; t_done; }
done

KDEV=vk0 # the kernel's end, with an address
LDEV=vl0 # lwIP's end, through a packet socket, no kernel address
KADDR=10.78.0.1
addr=10.78.0.2
PORT=8080
EPORT=7
base=http://$addr:$PORT
tmp=$T_TMP
lbl="lwip $kind"
netif=$kind:$LDEV
[ "$xdp" = 1 ] && netif=xdp:$LDEV
# AF_PACKET completes checksums left to the device; AF_XDP cannot know of them.
csum=on
[ "$xdp" = 1 ] && csum=off

# ---- the veth pair -----------------------------------------------------------
# In the namespace: the kernel there forwards nothing (so it does not route
# frames for 10.78.0.2 back out) and speaks no IPv6 on the pair (no router
# solicitations or DAD for lwIP to drop).
veth_up()
{
	nsx sysctl -q -w net.ipv4.ip_forward=0 &&
		nsx sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 &&
		nsx sysctl -q -w net.ipv6.conf.default.disable_ipv6=1 &&
		nsx ip link add "$KDEV" type veth peer name "$LDEV" &&
		nsx ethtool -K "$KDEV" tx "$csum" tso off gso off >/dev/null &&
		nsx ip addr add "$KADDR/24" dev "$KDEV" &&
		nsx ip link set "$KDEV" up &&
		nsx ip link set "$LDEV" up
}
if ! veth_up 2>"$tmp/veth.err"; then
	bad "veth pair $KDEV/$LDEV created, $KDEV's segmentation offloads off" "$(head -3 "$tmp/veth.err" | tr '\n' ' ')"
	t_done
fi
ok "veth pair $KDEV ($KADDR/24, checksum offload $csum, tso/gso off) - $LDEV (no address)"
check "$LDEV has no kernel IPv4 address" \
	test -z "$(nsx ip -4 -o addr show dev "$LDEV")"
lmac=$(nsx cat "/sys/class/net/$LDEV/address")

# code URL [curl options]: print the status curl got ("000" when none).
code()
{
	local url=$1
	shift
	nsx curl -s -o "$tmp/body" -D "$tmp/head" --max-time 10 -w '%{http_code}' "$@" "$url" 2>/dev/null
}

# Nobody answers for 10.78.0.2 before lwIP does: not the kernel.
c=$(nsx curl -s -o /dev/null --max-time 2 -w '%{http_code}' "$base/" 2>/dev/null)
check "before the server starts, nothing answers at $addr (got ${c:-000})" test "${c:-000}" = 000

# xdp_on, xdp_off: an XDP program is (is not) attached to lwIP's end.
xdp_on() { nsx ip link show "$LDEV" | grep -q 'prog/xdp'; }
xdp_off() { ! xdp_on; }

# ---- httpd --------------------------------------------------------------------
httpd_checks()
{
	local c out rc i n

	c=$(code "$base/")
	check "$lbl: GET / is 200 with the page" \
		test "$c" = 200 -a "$(grep -c 'weft httpd' "$tmp/body")" -ge 1
	c=$(code "$base/stats")
	check "$lbl: GET /stats is 200, stack lwip, frames counted" \
		test "$c" = 200 -a "$(sed -n 's/^net_stack //p' "$tmp/body")" = lwip \
		-a "$(sed -n 's/^net_frames_in //p' "$tmp/body")" -gt 0 \
		-a "$(sed -n 's/^net_frames_out //p' "$tmp/body")" -gt 0
	# lwIP speaks with the interface's own MAC: the kernel's neighbour
	# entry for the server is vl0's address.
	check "$lbl: $KDEV's neighbour $addr is $LDEV's MAC ($lmac)" \
		test "$(nsx ip neigh show "$addr" dev "$KDEV" | awk '{ print $3 }')" = "$lmac"
	c=$(code "$base/nowhere")
	check "$lbl: GET /nowhere is 404" test "$c" = 404
	c=$(code "$base/" -X POST -d 'a=1')
	check "$lbl: POST / is 405 with Allow" \
		test "$c" = 405 -a "$(grep -ci '^allow: GET, HEAD' "$tmp/head")" = 1

	# Twenty requests one after the other, each on its own connection.
	n=0
	for i in $(seq 20); do
		[ "$(code "$base/stats")" = 200 ] && n=$((n + 1))
	done
	check "$lbl: 20 requests on 20 connections: all 200 (got $n)" test "$n" = 20

	# Keep-alive: curl reuses the connection for the second and third URL.
	nsx curl -sv --max-time 10 -o /dev/null -o /dev/null -o /dev/null \
		"$base/" "$base/stats" "$base/nowhere" >"$tmp/ka" 2>&1
	check "$lbl: keep-alive: 3 requests on one connection" \
		test "$(grep -Eci 're-using existing (http: )?connection' "$tmp/ka")" = 2 \
		-a "$(grep -c '^< HTTP/1.1 ' "$tmp/ka")" = 3

	printf 'HEAD / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >"$tmp/headreq"
	raw "$addr" "$PORT" "$tmp/headreq" 10 >"$tmp/head.out"
	rc=$?
	check "$lbl: HEAD / is 200 with a length and no body, then the server closes" \
		test "$rc" = 0 -a "$(head -1 "$tmp/head.out" | tr -d '\r')" = "HTTP/1.1 200 OK" \
		-a "$(grep -ci '^content-length: [1-9]' "$tmp/head.out")" = 1 \
		-a "$(tail -c 4 "$tmp/head.out" | od -An -tx1 | tr -d ' \n')" = 0d0a0d0a

	# 50 pipelined requests on one connection (answers span many frames),
	# the last asking to close.
	{
		for ((i = 0; i < 49; i++)); do printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n'; done
		printf 'GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
	} >"$tmp/pipe"
	out=$(raw "$addr" "$PORT" "$tmp/pipe" 20)
	rc=$?
	check "$lbl: 50 pipelined requests get 50 answers in order, then close" \
		test "$rc" = 0 -a "$(printf '%s' "$out" | grep -c '^HTTP/1.1 200 ')" = 49 \
		-a "$(printf '%s' "$out" | grep '^HTTP/1.1 ' | tail -1 | cut -d' ' -f2)" = 404

	# wrk, then no leak once it is gone.
	httpd_load "$lbl" "$base"
}

start_server "$tmp/httpd.log" env WEFT_NET=lwip WEFT_NETIF="$netif" WEFT_IP="$addr/24" \
	HTTPD_PORT=$PORT HTTPD_IDLE_MS=5000 HTTPD_GRACE_MS=5000 "$httpd"
if wait_ready "$tmp/httpd.log" '^httpd: serving' 20; then
	ok "$lbl: $(grep '^httpd: serving' "$tmp/httpd.log")"
	if wait_until 20 test "$(code "$base/")" = 200; then
		httpd_checks
		[ "$xdp" = 1 ] && check "$lbl: the XDP program is on $LDEV while httpd runs" xdp_on
		[ "$link" = 0 ] && check "$lbl: httpd said it attaches through netlink, in one line" \
			test "$(grep -c '^weft: WEFT_NETIF=xdp: no XDP through a BPF link (BPF_LINK_CREATE: WEFT_IO_MISSING=xdp_link); the program is attached through netlink instead' "$tmp/httpd.log")" = 1
		kill -TERM "$T_SERVER"
		stop_wait "$T_SERVER" 15
		check "$lbl: httpd stops on SIGTERM and exits 0 (got $T_STATUS)" \
			test "$T_STATUS" = 0 -a "$(grep -c '^httpd: stopped:' "$tmp/httpd.log")" = 1
		[ "$xdp" = 1 ] && check "$lbl: the XDP program is gone from $LDEV once httpd stopped" \
			wait_until 5 xdp_off
	else
		bad "$lbl: curl reaches $base/"
		kill_server
	fi
else
	bad "$lbl: httpd starts on $netif" "$(tail -3 "$tmp/httpd.log" | tr '\n' ' ')"
	kill_server
fi

# refused WHAT NETIF PATTERN [PREFIX...]: echo on NETIF (run under PREFIX)
# exits non-zero within 10 s, its output matching PATTERN (grep -E).
refused()
{
	local what=$1 spec=$2 pat=$3
	shift 3
	"${NSX[@]}" "$@" env WEFT_NET=lwip WEFT_NETIF="$spec" WEFT_IP="$addr/24" \
		ECHO_PORT=$((EPORT + 1)) "$echo" >"$tmp/refused.log" 2>&1 &
	stop_wait $! 10
	check "$lbl: $what: refused at once (exit $T_STATUS): $(grep -m1 '^weft: ' "$tmp/refused.log")" \
		test "$T_STATUS" != 0 -a "$T_STATUS" != timeout \
		-a "$(grep -cE "$pat" "$tmp/refused.log")" -ge 1
}

# ---- echo, on the same interface once httpd has let it go --------------------
lbl="lwip $kind echo"

# run_load WHAT ARGS...: echo_load in the namespace; passes when it exits 0.
run_load()
{
	local what=$1
	shift
	nsx timeout 120 "$load" "$@" >"$tmp/load" 2>&1
	local rc=$?
	local line
	line=$(grep '^echo_load: .* errors$' "$tmp/load")
	echo "  ..    $lbl: ${line:-echo_load printed no result (exit $rc)}"
	[ "$rc" = 0 ] || sed -n '1,10s/^/        /p' "$tmp/load"
	check "$lbl: $what" test "$rc" = 0
}

start_server "$tmp/echo.log" env WEFT_NET=lwip WEFT_NETIF="$netif" WEFT_IP="$addr/24" \
	ECHO_PORT=$EPORT ECHO_IDLE_MS=10000 "$echo"
if wait_ready "$tmp/echo.log" '^echo: listening' 20; then
	ok "$lbl: $(grep '^echo: listening' "$tmp/echo.log")"
	printf 'hello, echo\n' >"$tmp/hello"
	hello()
	{
		"${NSX[@]}" timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1" || exit 3
			cat "$2" >&3; head -c 12 <&3' "$addr" "$EPORT" "$tmp/hello" >"$tmp/hello.out" 2>/dev/null &&
			cmp -s "$tmp/hello" "$tmp/hello.out"
	}
	check "$lbl: a line comes back as it was sent" wait_until 20 hello
	run_load "50 connections x 20 messages of 64 B echoed intact" "$addr" "$EPORT" 50 20 64
	run_load "bulk: 4 connections x 3 messages of 200000 B echoed intact" "$addr" "$EPORT" 4 3 200000
	check "$lbl: the server is still running" kill -0 "$T_SERVER"
	if [ "$xdp" = 1 ]; then
		# A second server on the same queue while this one holds it.
		refused "a second server on $netif" "$netif" 'weft: WEFT_NETIF=xdp:vl0: .*busy'
		kill -KILL "$T_SERVER"
		stop_wait "$T_SERVER" 10
		if [ "$link" = 1 ]; then
			# Killed outright: the kernel closes its BPF link, which
			# detaches the program; nothing of it stays on the interface.
			check "$lbl: the XDP program is gone from $LDEV after SIGKILL" wait_until 5 xdp_off
		else
			# Attached through netlink, it outlives its process, and
			# the next server is told how to remove it.
			check "$lbl: the XDP program stays on $LDEV after SIGKILL" xdp_on
			refused "a server after the killed one" "$netif" \
				'weft: WEFT_NETIF=xdp:vl0: another XDP program .*ip link set dev IFNAME xdp off.*busy'
			nsx ip link set dev "$LDEV" xdp off
			check "$lbl: ip link set dev $LDEV xdp off removes it" xdp_off
		fi
	else
		kill -TERM "$T_SERVER"
		stop_wait "$T_SERVER" 10
	fi
else
	bad "$lbl: echo starts on $netif" "$(tail -3 "$tmp/echo.log" | tr '\n' ' ')"
	kill_server
fi

if [ "$xdp" = 1 ]; then
	lbl="lwip $kind errors"
	refused "a queue $LDEV lacks (xdp:$LDEV:7)" "xdp:$LDEV:7" 'no such receive queue'
	refused "an interface that does not exist (xdp:weft-none0)" "xdp:weft-none0" \
		'no such interface'
	if command -v setpriv >/dev/null; then
		refused "a user without CAP_NET_RAW (nobody)" "$netif" \
			'no AF_XDP socket \(Operation not permitted\)' \
			setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all
	else
		echo "  skip  $lbl: no setpriv, the unprivileged case is not run"
	fi
	check "$lbl: nothing is left on $LDEV" xdp_off
fi
t_done
