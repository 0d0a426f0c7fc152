#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make bench`: weft beside Boost.Context, Boost.Fiber, Go, a hand-written
# epoll server and nginx, as ratios (docs/benchmarks.md). Installs the
# anchors (mk/deps.sh bench), builds weft (O=OUT/weft) and the peers
# (bench/peers/), then runs weft and each anchor alternately, REPS times
# interleaved (the order flips every repetition), and prints one table:
# benchmark, weft median, anchor median, ratio (the median of the
# per-repetition ratios weft/anchor), target, met. Every scheduler row runs
# weft at 1 and 2 workers beside Go at GOMAXPROCS 1 and 2; the rows that
# compare weft with itself take weft at the other worker count as the
# anchor: NAME_2v1 is 2 workers / 1 (target <= 1: never slower on serial
# work), NAME_speedup is 1 worker / 2 (target >= 1.6 on parallel work).
# Writes OUT/results.md (the table), OUT/results.csv, OUT/results.png
# (gnuplot), OUT/raw.tsv (every measurement: repetition, program.metric,
# value, CPU placement, load average) and OUT/logs/.
#
# The network rows run in a network namespace of their own (root; without
# root the kernel-socket rows use the host's loopback and the lwIP rows are
# skipped): echo and HTTP over kernel sockets (epoll, and io_uring with
# WEFT_IO=uring), and over lwIP on a TAP device (wb0, lwIP 10.79.0.2, the
# kernel's end 10.79.0.1), on a veth pair through AF_PACKET (vbk-vbl, lwIP
# 10.80.0.2 on vbl, the kernel's end vbk 10.80.0.1) and on a second veth
# pair through AF_XDP (vxk-vxl, lwIP 10.81.0.2 on vxl, the kernel's end vxk
# 10.81.0.1), each server pinned to one CPU and its client to the other; the
# CPUs each process really had (taskset -p, read by the process itself just
# before it starts) are recorded with every figure.
#
# Usage: mk/bench.sh            the full sizes (about 10-13 minutes on 2 CPUs)
#        mk/bench.sh --smoke    every row at tiny sizes, twice; checks that
#                               every row gave numbers and that the table,
#                               CSV and PNG were written (never a timing or
#                               target; rows of groups not in BENCH_GROUPS
#                               are skipped); last line "bench-smoke: N
#                               passed, M failed, S skipped"
# Environment: BENCH_OUT (build/bench, --smoke: build/bench-smoke),
# BENCH_REPS (5; --smoke 2) for the scheduler rows, BENCH_NET_REPS (3;
# --smoke 2) for the network rows, BENCH_HTTP_S (10; --smoke 1) seconds of
# wrk per run, BENCH_GROUPS ("sched echo http": which groups of rows run;
# the others print n/a). Exit 1 when something could not be built or
# (--smoke) a check failed; missed targets do not change the exit status.
# Single-quoted scripts for sh -c, bash -c and eval are meant.
# shellcheck disable=SC2016
set -u
cd "$(dirname "$0")/.." || exit 1

SMOKE=0
case "${1:-}" in
--smoke) SMOKE=1 ;;
"") ;;
*)
	sed -n '/^# Usage/,/^# (--smoke) a check/p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac

if [ "$SMOKE" = 1 ]; then
	OUT=${BENCH_OUT:-build/bench-smoke}
	REPS=${BENCH_REPS:-2} NET_REPS=${BENCH_NET_REPS:-2} HTTP_S=${BENCH_HTTP_S:-1}
	SWITCH_N=100000 SPAWN_N=10000 CHAN_N=10000 YIELD_F=10 YIELD_Y=100
	RING_R=100 RING_H=10000 TREE_D=10
	FIB_N=2000 FIB_D=15 FIB_Y=10 IDLE_N=2000
	ECHO_C=200 ECHO_M=10 ECHO_S=64 HTTP_C=20
	RUN_S=60 # a bound on any one run
else
	OUT=${BENCH_OUT:-build/bench}
	REPS=${BENCH_REPS:-5} NET_REPS=${BENCH_NET_REPS:-3} HTTP_S=${BENCH_HTTP_S:-10}
	SWITCH_N=10000000 SPAWN_N=1000000 CHAN_N=1000000 YIELD_F=100 YIELD_Y=1000
	RING_R=1000 RING_H=1000000 TREE_D=19
	FIB_N=100000 FIB_D=20 FIB_Y=10 IDLE_N=100000
	ECHO_C=10000 ECHO_M=100 ECHO_S=64 HTTP_C=100
	RUN_S=600
fi
W=$OUT/weft     # weft's build (make O=)
P=$OUT/peers    # the anchors' programs
RUN=$OUT/run    # pages, configurations, server logs
LOGS=$OUT/logs
RAW=$OUT/raw.tsv
started=$(date +%s)
GROUPS_RUN=" ${BENCH_GROUPS:-sched echo http} "
want() { [[ $GROUPS_RUN == *" $1 "* ]]; }

say() { echo "bench: $*"; }
die()
{
	echo "bench: error: $*" >&2
	exit 1
}

# ---- dependencies and builds ------------------------------------------------

mk/deps.sh host >/dev/null || die "mk/deps.sh host failed"
mk/deps.sh bench || die "mk/deps.sh bench failed"
rm -rf "$LOGS" "$RUN" "$RAW" "$OUT"/results.*
mkdir -p "$P" "$RUN" "$LOGS"
# nginx wants absolute paths, and BENCH_OUT may be either.
RUN=$(cd "$RUN" && pwd)
jobs=$(nproc 2>/dev/null || echo 2)

say "building weft (make O=$W)"
if ! make --no-print-directory -j"$jobs" O="$W" all >"$LOGS/build-weft.log" 2>&1; then
	tail -30 "$LOGS/build-weft.log" >&2
	die "building weft failed (log: $LOGS/build-weft.log)"
fi
say "building the peers (bench/peers/)"
build_peer()
{
	local what=$1
	shift
	if ! "$@" >>"$LOGS/build-peers.log" 2>&1; then
		tail -30 "$LOGS/build-peers.log" >&2
		die "building $what failed (log: $LOGS/build-peers.log)"
	fi
}
: >"$LOGS/build-peers.log"
build_peer echo_epoll gcc -std=c11 -O2 -g -Wall -Wextra -Werror -o "$P/echo_epoll" \
	bench/peers/echo_epoll.c
build_peer boost g++ -std=c++14 -O2 -g -Wall -Wextra -o "$P/boost" bench/peers/boost.cpp \
	-lboost_fiber -lboost_context
# Standard library only, no modules, nothing fetched; the caches stay in OUT.
abs_out=$(cd "$OUT" && pwd)
build_peer gobench env -C bench/peers/go GO111MODULE=off GOFLAGS= GOPROXY=off \
	GOPATH="$abs_out/go/path" GOCACHE="$abs_out/go/cache" go build -o "$abs_out/peers/gobench" .
GOB=$P/gobench
MICRO=$W/bench/micro

# ---- measurements -----------------------------------------------------------

# record KEY VALUE [PLACEMENT]: one measurement of repetition $rep.
# The fifth column is the load average when it was recorded: the machine
# is shared, and a run next to a busy neighbour shows there.
record()
{
	printf '%s\t%s\t%s\t%s\t%s\n' "$rep" "$1" "$2" "${3:-}" "$(cut -d' ' -f1 /proc/loadavg)" >>"$RAW"
}

# run_micro PREFIX CMD...: run a scheduler-row program; each "bench: NAME
# VALUE UNIT" line it prints becomes measurement PREFIX.NAME.
run_micro()
{
	local prefix=$1 log
	shift
	# The row's name: after the program, or after env VAR=value program.
	if [ "$1" = env ]; then log=$LOGS/$prefix.$4.$rep.log; else log=$LOGS/$prefix.$2.$rep.log; fi
	if ! timeout "$RUN_S" "$@" >"$log" 2>&1; then
		say "FAILED: $* (exit $?, log: $log)"
		return
	fi
	local name value
	while read -r _ name value _; do
		record "$prefix.$name" "$value"
	done < <(grep '^bench: ' "$log")
}

# Every group's jobs run in list order in odd repetitions, reversed in even
# ones, so that neither side always runs first.
run_group()
{
	local -a jobs=("$@") cmd
	local i j n=$#
	for ((i = 0; i < n; i++)); do
		j=$i
		((rep % 2 == 0)) && j=$((n - 1 - i))
		read -ra cmd <<<"${jobs[j]}"
		"${cmd[@]}"
	done
}

# Each scheduler row runs weft with 1 and 2 workers beside Go with
# GOMAXPROCS 1 and 2 in one group, so that the weft-vs-weft rows (2 workers
# against 1) compare runs made next to each other.
micro_rows()
{
	run_group "run_micro weft $MICRO switch $SWITCH_N" "run_micro weft $MICRO switchfp $SWITCH_N" \
		"run_micro boost $P/boost switch $SWITCH_N"
	run_group "run_micro weft1 $MICRO spawn $SPAWN_N 1" "run_micro boost $P/boost spawn $SPAWN_N" \
		"run_micro go1 env GOMAXPROCS=1 $GOB spawn $SPAWN_N" \
		"run_micro weft2 $MICRO spawn $SPAWN_N 2" "run_micro go2 env GOMAXPROCS=2 $GOB spawn $SPAWN_N" \
		"run_micro weft1 $MICRO spawnwg $SPAWN_N 1" "run_micro weft2 $MICRO spawnwg $SPAWN_N 2"
	local w row
	for row in "chan $CHAN_N" "yield $YIELD_F $YIELD_Y" "ring $RING_R $RING_H" "tree $TREE_D" \
		"fib $FIB_N $FIB_D $FIB_Y" "idle $IDLE_N"; do
		local -a jobs=()
		for w in 1 2; do
			jobs+=("run_micro weft$w $MICRO $row $w" "run_micro go$w env GOMAXPROCS=$w $GOB $row")
			# The same yields with a timer armed, beside the runs without.
			[ "${row%% *}" = yield ] && jobs+=("run_micro weft$w $MICRO yieldt ${row#yield } $w")
		done
		run_group "${jobs[@]}"
	done
}

# ---- the network rows -------------------------------------------------------

NS='' NSX=() SRV_PID=
if [ "$(nproc)" -ge 2 ]; then SRV_CPU=1 CLI_CPU=0; else SRV_CPU=0 CLI_CPU=0; fi
# PIN CPU CMD...: CMD pinned to CPU; it first prints "bench-cpus: LIST", the
# affinity it really has, then becomes CMD (same pid).
PIN=(sh -c 'echo "bench-cpus: $(taskset -pc $$ | sed "s/.*: //")"; exec "$@"' sh)

# lwIP over AF_PACKET: a veth pair in the namespace, the kernel's end
# (VETH_K, 10.80.0.1/24) for the clients, lwIP's end (VETH_L) with no kernel
# address, as tests/net/packet_veth.sh makes it. The kernel there forwards
# nothing and speaks no IPv6 on the pair; segmentation offloads are off
# (frames merged beyond the MTU would be lost to lwIP), checksum offload
# stays on (the packet device completes those checksums).
VETH_K=vbk VETH_L=vbl PACKET_OK=0
# lwIP over AF_XDP: a second pair (XVETH_K 10.81.0.1/24, XVETH_L) made the
# same way but with checksum offload off: AF_XDP gets frames as the wire has
# them, with nothing to say a checksum was left to the device.
XVETH_K=vxk XVETH_L=vxl XDP_OK=0
# pair_up KDEV LDEV KADDR CSUM: a veth pair in the namespace, the kernel's
# end KDEV at KADDR/24 with checksum offload CSUM (on or off) and TSO and GSO
# off, lwIP's end LDEV up with no address; errors in $LOGS/LDEV.err.
pair_up()
{
	"${NSX[@]}" ip link add "$1" type veth peer name "$2" &&
		"${NSX[@]}" ethtool -K "$1" tx "$4" tso off gso off >/dev/null &&
		"${NSX[@]}" ip addr add "$3/24" dev "$1" &&
		"${NSX[@]}" ip link set "$1" up &&
		"${NSX[@]}" ip link set "$2" up
} 2>"$LOGS/$2.err"

veth_up()
{
	if "${NSX[@]}" sysctl -q -w net.ipv4.ip_forward=0 &&
		"${NSX[@]}" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 &&
		"${NSX[@]}" sysctl -q -w net.ipv6.conf.default.disable_ipv6=1 &&
		pair_up "$VETH_K" "$VETH_L" 10.80.0.1 on; then
		PACKET_OK=1
	else
		say "FAILED: no veth pair for the AF_PACKET rows ($(head -1 "$LOGS/$VETH_L.err" 2>/dev/null))"
	fi
	if pair_up "$XVETH_K" "$XVETH_L" 10.81.0.1 off; then
		XDP_OK=1
	else
		say "FAILED: no veth pair for the AF_XDP rows ($(head -1 "$LOGS/$XVETH_L.err" 2>/dev/null))"
	fi
}

cleanup()
{
	stop_server
	[ -n "$NS" ] && ip netns del "$NS" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null; then
	NS=weft-bench-$$
	if ip netns add "$NS" 2>"$LOGS/netns.err"; then
		NSX=(ip netns exec "$NS")
		"${NSX[@]}" ip link set lo up
		veth_up
	else
		say "no network namespace ($(head -1 "$LOGS/netns.err")): kernel rows on the host's loopback"
		NS=
	fi
else
	say "not root: kernel rows on the host's loopback, lwIP over TAP skipped"
fi

# Each run listens on a port of its own: the client's TIME_WAIT sockets of
# one run never collide with the next run's connections.
port=20000
next_port() { port=$((port + 1)); }

cpus_of() { sed -n 's/^bench-cpus: //p' "$1" | head -1; }

# start_server LOG PATTERN CMD...: CMD in the namespace, pinned to SRV_CPU;
# 0 once it printed PATTERN, 1 if it died or did not within 20 s.
start_server()
{
	local log=$1 pat=$2 i
	shift 2
	"${NSX[@]}" taskset -c "$SRV_CPU" "${PIN[@]}" "$@" >"$log" 2>&1 &
	SRV_PID=$!
	for ((i = 0; i < 200; i++)); do
		grep -q "$pat" "$log" 2>/dev/null && return 0
		kill -0 "$SRV_PID" 2>/dev/null || break
		sleep 0.1
	done
	say "FAILED: server did not start: $* (log: $log)"
	stop_server
	return 1
}

stop_server()
{
	[ -n "$SRV_PID" ] || return 0
	local i
	kill -TERM "$SRV_PID" 2>/dev/null
	for ((i = 0; i < 50; i++)); do
		kill -0 "$SRV_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
	SRV_PID=
}

# Where a network row's time goes: beside each figure, the CPU time per
# message (or request) of the server and of the whole machine, so that a
# row limited by the client or the kernel says so. proc_cpu_ns PID: the
# time on a CPU, in ns, of every thread of PID and of its descendants
# (/proc/PID/task/*/schedstat, field 1; nginx's worker is the master's
# child); a thread that ends during the run takes its time with it, which
# none of the servers here does. machine_ticks: the busy time of every CPU
# in clock ticks, the kernel's interrupt and softirq time (where the
# network stack runs) included (/proc/stat: user nice system irq softirq
# steal). cpu_mark: both, for cpu_record after the run.
TICK_NS=$((1000000000 / $(getconf CLK_TCK)))
proc_cpu_ns()
{
	local sum=0 t c
	for t in /proc/"$1"/task/*/schedstat; do
		read -r c _ <"$t" 2>/dev/null && sum=$((sum + c))
	done
	for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
		sum=$((sum + $(proc_cpu_ns "$c")))
	done
	echo "$sum"
}
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }
CPU_MARK_SRV=0 CPU_MARK_ALL=0
cpu_mark()
{
	CPU_MARK_SRV=$(proc_cpu_ns "$SRV_PID")
	CPU_MARK_ALL=$(machine_ticks)
}
# cpu_record KEY COUNT: since cpu_mark, the server's and the machine's CPU
# time per message in microseconds, as measurements KEY_srv and KEY_all.
cpu_record()
{
	local srv all
	srv=$(($(proc_cpu_ns "$SRV_PID") - CPU_MARK_SRV))
	all=$((($(machine_ticks) - CPU_MARK_ALL) * TICK_NS))
	record "$1_srv" "$(awk -v t="$srv" -v n="$2" 'BEGIN { printf "%.3f", (n > 0 ? t / n / 1000 : 0) }')"
	record "$1_all" "$(awk -v t="$all" -v n="$2" 'BEGIN { printf "%.3f", (n > 0 ? t / n / 1000 : 0) }')"
}

# client LOG CMD...: CMD in the namespace pinned to CLI_CPU, bounded in time.
client()
{
	local log=$1
	shift
	"${NSX[@]}" taskset -c "$CLI_CPU" "${PIN[@]}" timeout "$RUN_S" "$@" >"$log" 2>&1
}

# echo_client KEY ADDR PORT SRVLOG: bench/echo_load against a started server.
echo_client()
{
	local key=$1 addr=$2 p=$3 slog=$4 log=$LOGS/$1.client.$rep.log
	cpu_mark
	client "$log" env ECHO_LOAD_TIMEOUT_S="$RUN_S" "$W/bench/echo_load" "$addr" "$p" \
		"$ECHO_C" "$ECHO_M" "$ECHO_S"
	local rc=$? line
	line=$(grep '^echo_load: .* errors$' "$log")
	if [ "$rc" -ne 0 ] || [ -z "$line" ]; then
		say "FAILED: $key: echo_load exit $rc: ${line:-no result} (log: $log)"
		return
	fi
	# Messages echoed: the run's seconds times its rate.
	cpu_record "$key.echo" "$(echo "$line" |
		sed 's/.*: \([0-9.]*\) s, \([0-9.]*\) msgs\/s.*/\1 \2/' | awk '{ printf "%.0f", $1 * $2 }')"
	record "$key.echo" "$(echo "$line" | sed 's/.* s, \([0-9.]*\) msgs\/s.*/\1/')" \
		"server cpu $(cpus_of "$slog"), client cpu $(cpus_of "$log")"
}

# uring_said LOG: a server asked for io_uring and fell back to epoll says
# so in its log (kernel-shim/linux/io.c); the row then measured epoll.
uring_said()
{
	grep -q 'WEFT_IO=uring: .*using epoll' "$1" && say "NOTE: io_uring unavailable, the uring row ran on epoll ($(grep -m1 'WEFT_IO=uring' "$1"))"
	return 0
}

echo_kernel()
{
	local key=$1 log=$LOGS/$1.server.$rep.log
	shift
	next_port
	case $key in
	weft) start_server "$log" '^echo: listening' env WEFT_NET=kernel WEFT_WORKERS=1 \
		ECHO_ADDR=127.0.0.1 ECHO_PORT=$port "$W/examples/echo" || return ;;
	uring)
		start_server "$log" '^echo: listening' env WEFT_NET=kernel WEFT_IO=uring \
			WEFT_WORKERS=1 ECHO_ADDR=127.0.0.1 ECHO_PORT=$port "$W/examples/echo" || return
		uring_said "$log"
		;;
	epoll) start_server "$log" '^echo_epoll: listening' "$P/echo_epoll" 127.0.0.1 $port ||
		return ;;
	go) start_server "$log" '^gobench: echo listening' env GOMAXPROCS=1 "$GOB" echo \
		127.0.0.1:$port || return ;;
	esac
	echo_client "$key" 127.0.0.1 "$port" "$log"
	stop_server
}

# The address lwIP answers on: over the TAP device its server creates
# (10.79.0.2, the kernel's end 10.79.0.1), on the AF_PACKET veth pair
# (10.80.0.2) or on the AF_XDP one (10.81.0.2).
LWIP_TAP_ADDR=10.79.0.2 LWIP_PACKET_ADDR=10.80.0.2 LWIP_XDP_ADDR=10.81.0.2

# lwip_env KIND: the environment of a weft server on lwIP over KIND (tap,
# packet or xdp), one worker.

# lwip_addr KIND: the address lwIP answers on over KIND; lwip_ok KIND: its
# device can be had (the veth pairs were made).
lwip_addr()
{
	case $1 in
	tap) echo "$LWIP_TAP_ADDR" ;;
	packet) echo "$LWIP_PACKET_ADDR" ;;
	xdp) echo "$LWIP_XDP_ADDR" ;;
	esac
}
lwip_ok()
{
	case $1 in
	packet) [ "$PACKET_OK" = 1 ] ;;
	xdp) [ "$XDP_OK" = 1 ] ;;
	*) true ;;
	esac
}
lwip_env()
{
	case $1 in
	tap) echo "WEFT_NET=lwip WEFT_NETIF=tap:wb0 WEFT_IP=$LWIP_TAP_ADDR/24 WEFT_WORKERS=1" ;;
	packet) echo "WEFT_NET=lwip WEFT_NETIF=packet:$VETH_L WEFT_IP=$LWIP_PACKET_ADDR/24 WEFT_WORKERS=1" ;;
	xdp) echo "WEFT_NET=lwip WEFT_NETIF=xdp:$XVETH_L WEFT_IP=$LWIP_XDP_ADDR/24 WEFT_WORKERS=1" ;;
	esac
}

# lwip_ready KIND LOG: after a lwIP server started, give its TAP device the
# kernel's address (tap); 0 once the server's address answers on a TCP
# port that echoes (PROBE_PORT) or accepts (otherwise), 1 if not in 10 s.
lwip_ready()
{
	local kind=$1 log=$2 addr i
	if [ "$kind" = tap ]; then
		addr=$LWIP_TAP_ADDR
		for ((i = 0; i < 100; i++)); do
			"${NSX[@]}" ip link show wb0 >/dev/null 2>&1 && break
			sleep 0.1
		done
		if ! "${NSX[@]}" ip addr add 10.79.0.1/24 dev wb0 ||
			! "${NSX[@]}" ip link set wb0 txqueuelen 20000 up; then
			say "FAILED: lwIP: no wb0 (log: $log)"
			return 1
		fi
	else
		addr=$(lwip_addr "$kind")
	fi
	for ((i = 0; i < 100; i++)); do
		"${NSX[@]}" timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$addr" "$port" 2>/dev/null &&
			return 0
		sleep 0.1
	done
	say "FAILED: lwIP over $kind: nothing answers at $addr:$port (log: $log)"
	return 1
}

# weft's echo on lwIP, over a TAP device it creates in the namespace (key
# lwip), an AF_PACKET socket on the veth pair (key packet) or an AF_XDP
# socket on the other pair (key xdp).
echo_lwip()
{
	local kind=$1 key=${2:-lwip} log addr
	[ -n "$NS" ] || return 0
	lwip_ok "$kind" || return 0
	log=$LOGS/$key.server.$rep.log
	addr=$(lwip_addr "$kind")
	next_port
	# shellcheck disable=SC2046
	start_server "$log" '^echo: listening' env $(lwip_env "$kind") ECHO_PORT=$port \
		"$W/examples/echo" || return
	lwip_ready "$kind" "$log" && echo_client "$key" "$addr" "$port" "$log"
	stop_server
}

echo_rows()
{
	run_group "echo_kernel weft" "echo_kernel epoll" "echo_kernel go" "echo_kernel uring" \
		"echo_lwip tap" \
		"echo_lwip packet packet" "echo_lwip xdp xdp"
}

# The page every HTTP server sends: weft's httpd's own, fetched once.
PAGE=$RUN/page.html
fetch_page()
{
	next_port
	start_server "$LOGS/page.server.log" '^httpd: serving' env WEFT_NET=kernel \
		WEFT_WORKERS=1 HTTPD_ADDR=127.0.0.1 HTTPD_PORT=$port "$W/examples/httpd" || return 1
	"${NSX[@]}" curl -sf -o "$PAGE" "http://127.0.0.1:$port/"
	local rc=$?
	stop_server
	[ "$rc" -eq 0 ] && [ -s "$PAGE" ]
}

# nginx, Debian's, with one worker process; it answers with the page from
# memory (return), as weft's httpd and Go's net/http do.
nginx_conf()
{
	local d=$RUN/nginx
	# The page goes into a single-quoted string: \ and ' are escaped; nginx
	# would expand a $ (it has no escape for it).
	if grep -q '[$]' "$PAGE"; then
		say "FAILED: the page has a \$: it cannot go into nginx.conf as it is"
		return 1
	fi
	mkdir -p "$d/tmp"
	cat >"$d/nginx.conf" <<-EOF
	# written by mk/bench.sh
	daemon off;
	worker_processes 1;
	pid $d/nginx.pid;
	error_log $d/error.log warn;
	events { worker_connections 4096; }
	http {
	    access_log off;
	    keepalive_requests 100000;
	    client_body_temp_path $d/tmp;
	    proxy_temp_path $d/tmp;
	    fastcgi_temp_path $d/tmp;
	    uwsgi_temp_path $d/tmp;
	    scgi_temp_path $d/tmp;
	    server {
	        listen 127.0.0.1:NGINX_PORT;
	        location / {
	            default_type "text/html; charset=utf-8";
	            return 200 '$(sed "s/[\\']/\\\\&/g" "$PAGE")
	';
	        }
	    }
	}
	EOF
}

http_row()
{
	local key=$1 log=$LOGS/$1.server.$rep.log host=127.0.0.1 kind
	case $key in
	lwip | packet | xdp)
		[ -n "$NS" ] || return 0
		kind=tap
		[ "$key" != lwip ] && kind=$key
		lwip_ok "$kind" || return 0
		host=$(lwip_addr "$kind")
		;;
	esac
	next_port
	case $key in
	weft) start_server "$log" '^httpd: serving' env WEFT_NET=kernel WEFT_WORKERS=1 \
		HTTPD_ADDR=127.0.0.1 HTTPD_PORT=$port "$W/examples/httpd" || return ;;
	uring)
		start_server "$log" '^httpd: serving' env WEFT_NET=kernel WEFT_IO=uring \
			WEFT_WORKERS=1 HTTPD_ADDR=127.0.0.1 HTTPD_PORT=$port "$W/examples/httpd" ||
			return
		uring_said "$log"
		;;
	lwip | packet | xdp)
		# shellcheck disable=SC2046
		start_server "$log" '^httpd: serving' env $(lwip_env "$kind") HTTPD_PORT=$port \
			"$W/examples/httpd" || return
		lwip_ready "$kind" "$log" || {
			stop_server
			return
		}
		;;
	nginx)
		sed "s/NGINX_PORT/$port/" "$RUN/nginx/nginx.conf" >"$RUN/nginx/run.conf"
		start_server "$log" '^bench-cpus' nginx -p "$RUN/nginx" -e "$RUN/nginx/error.log" \
			-c "$RUN/nginx/run.conf" ||
			return
		local i
		for ((i = 0; i < 100; i++)); do
			"${NSX[@]}" curl -s -o /dev/null "http://127.0.0.1:$port/" && break
			sleep 0.1
		done
		;;
	go) start_server "$log" '^gobench: http listening' env GOMAXPROCS=1 "$GOB" http \
		127.0.0.1:$port "$PAGE" || return ;;
	esac
	# The same bytes from every server, or the comparison is void.
	if ! "${NSX[@]}" curl -sf "http://$host:$port/" | cmp -s - "$PAGE"; then
		say "FAILED: $key: its page differs from weft's (log: $log)"
		stop_server
		return
	fi
	local clog=$LOGS/$key.wrk.$rep.log
	cpu_mark
	client "$clog" wrk -t1 -c"$HTTP_C" -d"${HTTP_S}s" "http://$host:$port/"
	local rc=$? rps
	rps=$(sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p' "$clog")
	if [ "$rc" -ne 0 ] || [ -z "$rps" ]; then
		say "FAILED: $key: wrk exit $rc (log: $clog)"
	else
		grep -E 'Non-2xx|Socket errors' "$clog" | sed "s/^ */bench: note: $key run $rep: /" |
			tee -a "$OUT/notes.txt"
		cpu_record "$key.http" "$(sed -n 's/^ *\([0-9]*\) requests in .*/\1/p' "$clog")"
		record "$key.http" "$rps" "server cpu $(cpus_of "$log"), client cpu $(cpus_of "$clog")"
	fi
	stop_server
}

http_rows()
{
	run_group "http_row weft" "http_row nginx" "http_row go" "http_row uring" "http_row lwip" \
		"http_row packet" \
		"http_row xdp"
}

# ---- the runs ---------------------------------------------------------------

: >"$RAW"
: >"$OUT/notes.txt"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((rep = 1; rep <= REPS; rep++)); do
	want sched || break
	say "scheduler rows, repetition $rep of $REPS"
	micro_rows
done
HTTP_OK=0
if want http; then
	if fetch_page && nginx_conf; then
		HTTP_OK=1
	else
		say "FAILED: could not fetch weft's page: no HTTP rows"
	fi
fi
for ((rep = 1; rep <= NET_REPS; rep++)); do
	want echo || [ "$HTTP_OK" = 1 ] || break
	say "network rows, repetition $rep of $NET_REPS"
	want echo && echo_rows
	[ "$HTTP_OK" = 1 ] && http_rows
done
stop_server
load1=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- the table --------------------------------------------------------------

k() { printf '%s' "$1" | sed 's/000000$/M/; s/000$/k/'; }
LWIP_NOTE=
[ -n "$NS" ] || LWIP_NOTE=" (skipped: needs root)"
ROWS=$OUT/rows.tsv
# id, benchmark, weft key, anchor key, anchor, direction, target, unit
cat >"$ROWS" <<EOF
switch	one-way switch, the default (FP control the worker's), $(k $SWITCH_N) ping-pongs	weft.switch	boost.switch	Boost.Context jump_fcontext	le	0.5	ns
switch_fp	one-way switch keeping the FP control state (WEFT_ATTR_FPENV), $(k $SWITCH_N) ping-pongs	weft.switchfp	boost.switch	Boost.Context jump_fcontext	le	1.0	ns
spawn_boost	spawn + run + join, $(k $SPAWN_N), 1 worker	weft1.spawn	boost.spawn	Boost.Fiber, pooled stacks	le	0.6	ns
spawn_go1	spawn + run + join, $(k $SPAWN_N), 1 worker	weft1.spawn	go1.spawn	Go go + WaitGroup, GOMAXPROCS=1	le	0.25	ns
spawn_go2	spawn + run + join, $(k $SPAWN_N), 2 workers	weft2.spawn	go2.spawn	Go go + WaitGroup, GOMAXPROCS=2	le	0.25	ns
spawn_2v1	spawn + run + join, $(k $SPAWN_N): 2 workers / 1 (serial: one spawner)	weft2.spawn	weft1.spawn	weft, 1 worker	le	1.0	ns
spawnwg_go1	spawn + run, detached, one wait group per batch (Go's shape), $(k $SPAWN_N), 1 worker	weft1.spawnwg	go1.spawn	Go go + WaitGroup, GOMAXPROCS=1	le	0.25	ns
spawnwg_go2	spawn + run, detached, one wait group per batch (Go's shape), $(k $SPAWN_N), 2 workers	weft2.spawnwg	go2.spawn	Go go + WaitGroup, GOMAXPROCS=2	le	0.25	ns
chan1	unbuffered channel round trip, $(k $CHAN_N), 1 worker	weft1.chan	go1.chan	Go, GOMAXPROCS=1	le	0.35	ns
chan2	unbuffered channel round trip, $(k $CHAN_N), 2 workers	weft2.chan	go2.chan	Go, GOMAXPROCS=2	le	0.35	ns
chan_2v1	unbuffered channel round trip, $(k $CHAN_N): 2 workers / 1 (serial)	weft2.chan	weft1.chan	weft, 1 worker	le	1.0	ns
yield1	$YIELD_F fibers x $(k $YIELD_Y) yields, 1 worker	weft1.yield	go1.yield	Go runtime.Gosched, GOMAXPROCS=1	le	0.4	ns
yield2	$YIELD_F fibers x $(k $YIELD_Y) yields, 2 workers	weft2.yield	go2.yield	Go runtime.Gosched, GOMAXPROCS=2	le	0.4	ns
yield_2v1	$YIELD_F fibers x $(k $YIELD_Y) yields: 2 workers / 1	weft2.yield	weft1.yield	weft, 1 worker	le	1.0	ns
yield_timer1	$YIELD_F fibers x $(k $YIELD_Y) yields, a timer armed (one more fiber asleep), 1 worker	weft1.yieldt	weft1.yield	weft, no timer armed	le	1.1	ns
yield_timer2	$YIELD_F fibers x $(k $YIELD_Y) yields, a timer armed (one more fiber asleep), 2 workers	weft2.yieldt	weft2.yield	weft, no timer armed	le	1.1	ns
ring1	token ring of $(k $RING_R) fibers, $(k $RING_H) hops over unbuffered channels, 1 worker: per hop	weft1.ring	go1.ring	Go, GOMAXPROCS=1	le	0.35	ns
ring2	token ring of $(k $RING_R) fibers, $(k $RING_H) hops over unbuffered channels, 2 workers: per hop	weft2.ring	go2.ring	Go, GOMAXPROCS=2	le	0.35	ns
ring_2v1	token ring of $(k $RING_R) fibers, $(k $RING_H) hops: 2 workers / 1 (serial)	weft2.ring	weft1.ring	weft, 1 worker	le	1.0	ns
tree1	spawn tree, depth $TREE_D (2^$((TREE_D + 1)) - 1 fibers, each joining its 2 children), 1 worker: per fiber	weft1.tree	go1.tree	Go go + WaitGroup, GOMAXPROCS=1	le	0.25	ns
tree2	spawn tree, depth $TREE_D (2^$((TREE_D + 1)) - 1 fibers, each joining its 2 children), 2 workers: per fiber	weft2.tree	go2.tree	Go go + WaitGroup, GOMAXPROCS=2	le	0.25	ns
tree_speedup	spawn tree, depth $TREE_D: speedup, 1 worker's time / 2 workers' (parallel)	weft1.tree	weft2.tree	weft, 2 workers	ge	1.6	ns
fib_time1	$(k $FIB_N) fibers x (fib($FIB_D) + $FIB_Y yields), 1 worker: wall	weft1.fib_ms	go1.fib_ms	Go, GOMAXPROCS=1	le	1.0	ms
fib_time2	$(k $FIB_N) fibers x (fib($FIB_D) + $FIB_Y yields), 2 workers: wall	weft2.fib_ms	go2.fib_ms	Go, GOMAXPROCS=2	le	1.0	ms
fib_speedup	$(k $FIB_N) fibers x (fib($FIB_D) + $FIB_Y yields): speedup, 1 worker's wall / 2 workers' (parallel)	weft1.fib_ms	weft2.fib_ms	weft, 2 workers	ge	1.6	ms
fib_rss1	$(k $FIB_N) fibers x (fib($FIB_D) + $FIB_Y yields), 1 worker: peak RSS	weft1.fib_rss	go1.fib_rss	Go, GOMAXPROCS=1	le	1.0	MB
fib_rss2	$(k $FIB_N) fibers x (fib($FIB_D) + $FIB_Y yields), 2 workers: peak RSS	weft2.fib_rss	go2.fib_rss	Go, GOMAXPROCS=2	le	1.0	MB
fib_even	the same, 2 workers: least busy worker's runs / an even share	weft2.fib_even	-	(within 2x of even)	ge	0.5	x
idle1	$(k $IDLE_N) idle parked fibers, 1 worker: RSS per fiber	weft1.idle	go1.idle	Go goroutines, GOMAXPROCS=1	le	1.56	B
idle2	$(k $IDLE_N) idle parked fibers, 2 workers: RSS per fiber	weft2.idle	go2.idle	Go goroutines, GOMAXPROCS=2	le	1.56	B
echo_epoll	echo, $(k $ECHO_C) conns x $ECHO_M x $ECHO_S B, kernel sockets	weft.echo	epoll.echo	C epoll server (bench/peers)	ge	1.0	msg/s
echo_go	echo, $(k $ECHO_C) conns x $ECHO_M x $ECHO_S B, kernel sockets	weft.echo	go.echo	Go net, GOMAXPROCS=1	ge	1.2	msg/s
echo_uring	the same echo, kernel sockets through io_uring (WEFT_IO=uring)	uring.echo	epoll.echo	C epoll server (bench/peers)	ge	1.0	msg/s
echo_lwip	the same echo over lwIP + TAP$LWIP_NOTE	lwip.echo	epoll.echo	C epoll server, loopback	ge	0.8	msg/s
echo_packet	the same echo over lwIP + AF_PACKET (veth)$LWIP_NOTE	packet.echo	epoll.echo	C epoll server, loopback	ge	0.8	msg/s
echo_xdp	the same echo over lwIP + AF_XDP (veth)$LWIP_NOTE	xdp.echo	epoll.echo	C epoll server, loopback	ge	0.8	msg/s
http_nginx	HTTP keep-alive hello, wrk, $HTTP_C conns, ${HTTP_S} s	weft.http	nginx.http	nginx, 1 worker	ge	1.0	req/s
http_go	HTTP keep-alive hello, wrk, $HTTP_C conns, ${HTTP_S} s	weft.http	go.http	Go net/http, GOMAXPROCS=1	ge	1.0	req/s
http_uring	the same HTTP, kernel sockets through io_uring (WEFT_IO=uring)	uring.http	nginx.http	nginx, 1 worker	ge	1.0	req/s
http_lwip	the same HTTP over lwIP + TAP$LWIP_NOTE	lwip.http	nginx.http	nginx, 1 worker, loopback	ge	0.8	req/s
http_packet	the same HTTP over lwIP + AF_PACKET (veth)$LWIP_NOTE	packet.http	nginx.http	nginx, 1 worker, loopback	ge	0.8	req/s
http_xdp	the same HTTP over lwIP + AF_XDP (veth)$LWIP_NOTE	xdp.http	nginx.http	nginx, 1 worker, loopback	ge	0.8	req/s
EOF

# One line per row: the medians, the median of the per-repetition ratios,
# the placements seen. Writes the CSV and gnuplot's data; prints Markdown.
awk -F'\t' -v raw="$RAW" -v csv="$OUT/results.csv" -v dat="$OUT/plot.dat" '
function median(a, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	if (n == 0) return ""
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function fmt(v, unit) {
	if (v == "") return "n/a"
	if (unit == "msg/s" || unit == "req/s" || unit == "B") return sprintf("%.0f %s", v, unit)
	if (unit == "x") return sprintf("%.2f", v)
	if (v >= 100) return sprintf("%.0f %s", v, unit)
	return sprintf("%.1f %s", v, unit)
}
function med(k,   r, m, a) {
	m = 0
	for (r = 1; r <= maxrep; r++) if ((r, k) in val) a[++m] = val[r, k]
	return median(a, m)
}
function us(v) { return v == "" ? "n/a" : sprintf("%.2f", v) }
function list(k,   r, s) {
	s = ""
	for (r = 1; r <= maxrep; r++) if ((r, k) in val) s = s (s == "" ? "" : " ") val[r, k]
	return s
}
BEGIN {
	print "id,benchmark,anchor,unit,weft_median,anchor_median,ratio,target_op,target,met,runs,weft_runs,anchor_runs,placement,weft_server_us,weft_machine_us,anchor_server_us,anchor_machine_us" > csv
}
FILENAME == raw {
	val[$1, $2] = $3; if ($1 > maxrep) maxrep = $1
	if ($4 != "" && !(($2, $4) in seen)) { seen[$2, $4] = 1; place[$2] = place[$2] (place[$2] == "" ? "" : "; ") $4 }
	next
}
{
	id = $1; bench = $2; wk = $3; ak = $4; anchor = $5; dir = $6; target = $7; unit = $8
	nw = na = nr = 0; delete w; delete an; delete rt
	for (r = 1; r <= maxrep; r++) {
		if ((r, wk) in val) w[++nw] = val[r, wk]
		if (ak != "-" && (r, ak) in val) an[++na] = val[r, ak]
		if (ak == "-" && (r, wk) in val) rt[++nr] = val[r, wk]
		else if ((r, wk) in val && (r, ak) in val && val[r, ak] > 0) rt[++nr] = val[r, wk] / val[r, ak]
	}
	mw = median(w, nw); ma = median(an, na); mr = median(rt, nr)
	met = mr == "" ? "n/a" : (dir == "le" ? (mr <= target + 1e-9) : (mr >= target - 1e-9)) ? "yes" : "NO"
	op = dir == "le" ? "<=" : ">="
	pl = place[wk]; if (ak != "-" && place[ak] != "") pl = "weft: " pl "; anchor: " place[ak]
	if (pl == "") pl = "-"
	n++
	row[n] = sprintf("| %s | %s | %s | %s | %s | %s %s | %s |", bench, fmt(mw, unit),
		ak == "-" ? "-" : fmt(ma, unit), anchor, mr == "" ? "n/a" : sprintf("%.3f", mr),
		op, target, met)
	placerow[n] = sprintf("| %s | %s |", bench " vs " anchor, pl)
	isnet[n] = ak ~ /(echo|http)$/
	cs = ca = xs = xa = ""
	if (isnet[n]) {
		cs = med(wk "_srv"); ca = med(wk "_all"); xs = med(ak "_srv"); xa = med(ak "_all")
		cpurow[n] = sprintf("| %s | %s | %s | %s | %s |", bench " vs " anchor, us(cs), us(ca),
			us(xs), us(xa))
	}
	gsub(/"/, "\"\"", bench)
	printf "%s,\"%s\",\"%s\",%s,%s,%s,%s,%s,%s,%s,%s,\"%s\",\"%s\",\"%s\",%s,%s,%s,%s\n", id, bench,
		anchor, unit, mw, ma, mr == "" ? "" : sprintf("%.4f", mr), op, target, met, nr, list(wk),
		ak == "-" ? "" : list(ak), (pl == "-" ? "" : pl), cs, ca, xs, xa > csv
	printf "%d\t\"%s (%s %s)\"\t%s\t%s\t%d\n", n, id, op, target, mr == "" ? "NaN" : mr, target,
		(met == "yes") > dat
}
END {
	print "| benchmark | weft | anchor | compared with | ratio | target | met |"
	print "|---|---:|---:|---|---:|---:|---|"
	for (i = 1; i <= n; i++) print row[i]
	print ""
	print "CPU placement of every network figure (server and client, as taskset -p reported it):"
	print ""
	print "| row | placement |"
	print "|---|---|"
	for (i = 1; i <= n; i++) if (isnet[i]) print placerow[i]
	print ""
	print "CPU time per message (echo) or request (HTTP), in microseconds, medians: the server process (all its threads and child processes) and the whole machine (every CPU busy, the softirq time of the kernel included, so the client and the network work of the kernel too):"
	print ""
	print "| row | weft server | weft machine | anchor server | anchor machine |"
	print "|---|---:|---:|---:|---:|"
	for (i = 1; i <= n; i++) if (isnet[i]) print cpurow[i]
}
' "$RAW" "$ROWS" >"$OUT/table.md"

{
	echo "weft bench$([ "$SMOKE" = 1 ] && echo ' (smoke: tiny sizes, numbers mean nothing)'), $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo '+changes')"
	echo "$(nproc) CPUs ($(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)), kernel $(uname -r); load average $load0 at the start, $load1 at the end"
	echo "medians of $REPS interleaved runs (scheduler rows) and $NET_REPS (network rows); ratio = the median of the per-run ratios weft / anchor"
	echo
	cat "$OUT/table.md"
	if [ -s "$OUT/notes.txt" ]; then
		echo
		sed 's/^bench: note: /note: /' "$OUT/notes.txt"
	fi
} >"$OUT/results.md"
rm -f "$OUT/table.md"
echo
cat "$OUT/results.md"

# ---- the plot ---------------------------------------------------------------

gnuplot >"$LOGS/gnuplot.log" 2>&1 <<EOF
set terminal pngcairo noenhanced size 1400,700 font "sans,10"
set output "$OUT/results.png"
set datafile missing "NaN"
set title "weft / anchor per row, median of interleaved runs (bars) against the target (black); _2v1 rows: weft at 2 workers / weft at 1, _speedup rows: 1 worker / 2\nrows with <= : lower is better (time, memory); rows with >= : higher is better (throughput, speedup)"
set ylabel "ratio weft / anchor (log scale)"
set logscale y
set yrange [0.05:20]
set grid ytics
set key top left
set style fill solid 0.85 border -1
set boxwidth 0.6
set xtics rotate by -40 left nomirror
set bmargin 9
set rmargin 10
set xrange [0.3:*]
plot "$OUT/plot.dat" using 1:(\$5 > 0 && \$3 > 0 ? \$3 : 1/0) \
	with boxes lc rgb "#2ca02c" title "ratio, target met", \
     "" using 1:(\$5 == 0 && \$3 > 0 ? \$3 : 1/0) with boxes lc rgb "#d62728" title "ratio, target missed", \
     "" using 1:4:(0.38):xtic(2) with xerrorbars pt 0 lw 3 lc rgb "black" title "target"
EOF
[ -s "$OUT/results.png" ] || say "FAILED: gnuplot drew nothing (log: $LOGS/gnuplot.log)"
say "table: $OUT/results.md, CSV: $OUT/results.csv, plot: $OUT/results.png, runs: $RAW, logs: $LOGS"
say "took $(($(date +%s) - started)) s"

[ "$SMOKE" = 1 ] || exit 0

# ---- smoke checks: the harness works end to end -----------------------------

passed=0 failed=0 skipped=0
check()
{
	local what=$1
	shift
	if "$@"; then
		passed=$((passed + 1))
		echo "  ok    $what"
	else
		failed=$((failed + 1))
		echo "  FAIL  $what"
	fi
}
numeric() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; }
while IFS=$'\t' read -r id _; do
	line=$(grep "^$id," "$OUT/results.csv")
	case $id in echo_*) group="echo" ;; http_*) group="http" ;; *) group="sched" ;; esac
	if ! want "$group"; then
		skipped=$((skipped + 1))
		echo "  skip  $id: group $group is not in BENCH_GROUPS"
		continue
	fi
	case $id in echo_lwip | echo_packet | echo_xdp | http_lwip | http_packet | http_xdp) lwip_row=1 ;; *) lwip_row=0 ;; esac
	if [ "$lwip_row" = 1 ] && [ -z "$NS" ]; then
		skipped=$((skipped + 1))
		echo "  skip  $id: needs root and a network namespace"
		continue
	fi
	# weft_median, anchor_median, ratio: fields 5-7 once the quoted ones are out.
	# shellcheck disable=SC2001
	f=$(echo "$line" | sed 's/"[^"]*"/q/g')
	wm=$(echo "$f" | cut -d, -f5) am=$(echo "$f" | cut -d, -f6) r=$(echo "$f" | cut -d, -f7)
	[ "$id" = fib_even ] && am=0
	check "$id: weft $wm, anchor $am, ratio $r" eval 'numeric "$wm" && numeric "$am" && numeric "$r"'
	if [ "$group" != sched ]; then
		# The four CPU figures: fields 15-18. A server that answered
		# used some CPU: its figures are above 0.
		ws=$(echo "$f" | cut -d, -f15) wa=$(echo "$f" | cut -d, -f16)
		as=$(echo "$f" | cut -d, -f17) aa=$(echo "$f" | cut -d, -f18)
		check "$id: CPU per message: weft server $ws, machine $wa; anchor server $as, machine $aa us" \
			eval 'numeric "$ws" && numeric "$wa" && numeric "$as" && numeric "$aa" &&
				awk -v a="$ws" -v b="$as" "BEGIN { exit !(a > 0 && b > 0) }"'
	fi
done <"$ROWS"
check "the table has every row ($(wc -l <"$ROWS"))" \
	test "$(grep -c '^| ' "$OUT/results.md")" -ge "$(($(wc -l <"$ROWS") + 2))"
check "the CSV has every row" test "$(($(wc -l <"$OUT/results.csv") - 1))" -eq "$(wc -l <"$ROWS")"
check "the PNG was drawn" eval '[ "$(head -c 4 "$OUT/results.png" | tail -c 3)" = PNG ]'
echo "bench-smoke: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
