# SPDX-License-Identifier: MIT
# shellcheck shell=bash disable=SC2016,SC2034
# Helpers for the network scripts in tests/net/ (sourced, not run): checks
# and their tally, a network namespace that is always removed, servers
# started in it and stopped by their process id, raw TCP from bash.
# Every wait here is bounded. T_KEEP=1 keeps the logs (their directory is
# printed at the end).

# t_init NAME: start the tally; the last line will be "NAME: N passed, M failed".
t_init()
{
	T_NAME=$1
	T_PASSED=0
	T_FAILED=0
	T_PIDS=()
	T_SESSIONS=()
	T_NS=
	NSX=()
	T_TMP=$(mktemp -d "/tmp/weft-$1.XXXXXX")
	trap t_cleanup EXIT
	trap 'exit 130' INT TERM
}

t_cleanup()
{
	local p
	for p in "${T_SESSIONS[@]}"; do
		kill_session "$p" -9
	done
	# Only our own children: a pid already waited for may have been reused.
	for p in "${T_PIDS[@]}"; do
		[ "$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')" = "$$" ] &&
			kill -9 "$p" 2>/dev/null
	done
	for p in "${T_PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	if [ -n "$T_NS" ]; then
		ip netns del "$T_NS" 2>/dev/null
	fi
	if [ -n "${T_KEEP:-}" ]; then
		echo "$T_NAME: logs kept in $T_TMP" >&2
	else
		rm -rf "$T_TMP"
	fi
}

t_skip()
{
	echo "$T_NAME: skipped: $*"
	exit 0
}

ok()
{
	T_PASSED=$((T_PASSED + 1))
	echo "  ok    $1"
}

bad()
{
	T_FAILED=$((T_FAILED + 1))
	echo "  FAIL  $1${2:+: $2}"
}

# check WHAT CMD...: passes when CMD succeeds.
check()
{
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; fi
}

t_done()
{
	echo "$T_NAME: $T_PASSED passed, $T_FAILED failed"
	[ "$T_FAILED" -eq 0 ]
	exit $?
}

# t_tally LOG RC SKIP_OK NAME [LABEL [NOTE]]: a runner's account (mk/net-tests.sh,
# tests/net/rv_kernel.sh) of one script that wrote LOG and exited RC, added
# to TALLY_PASSED, TALLY_FAILED and TALLY_SKIPPED (start them at 0). Its
# tally is LOG's last line that looks like one (something may print after
# it), printed as "  LABEL<tally>NOTE". A script that skipped counts as
# skipped when SKIP_OK is yes, else as a failure (a machine that could have
# run it); one that crashed, hung or gave no tally fails. For a failure,
# LOG's FAIL lines and its tail follow.
t_tally()
{
	local log=$1 rc=$2 skip_ok=$3 name=$4 label=${5:-} note=${6:-} last p f
	last=$(grep -E '^[a-z_]+: ([0-9]+ passed, [0-9]+ failed$|skipped: )' "$log" | tail -1)
	[ -n "$last" ] || last="$name: no tally (exit $rc)"
	printf '  %s%s%s\n' "$label" "$last" "$note"
	case $last in
	*": skipped: "*)
		if [ "$skip_ok" = yes ]; then
			TALLY_SKIPPED=$((TALLY_SKIPPED + 1))
		else
			echo "  $name skipped where it can run (root, network namespaces): failed"
			TALLY_FAILED=$((TALLY_FAILED + 1))
		fi
		return
		;;
	esac
	p=$(printf '%s\n' "$last" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
	f=$(printf '%s\n' "$last" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
	if [ -z "$p" ] || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; }; then
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
	TALLY_PASSED=$((TALLY_PASSED + p)) TALLY_FAILED=$((TALLY_FAILED + f))
}

# needs TOOL...: fail the script (not skip) when a tool is missing.
needs()
{
	local t missing=
	for t in "$@"; do
		command -v "$t" >/dev/null 2>&1 || missing="$missing $t"
	done
	if [ -n "$missing" ]; then
		bad "tools present" "missing:$missing (apt-get install curl wrk iproute2)"
		t_done
	fi
}

# ns_add NAME: make the network namespace NAME, or print why this machine
# cannot (no root, no ip, namespaces refused) and return 1. ns_create skips
# by it; mk/net-tests.sh probes with it, and fails a script that skipped on a
# machine where it succeeds.
ns_add()
{
	local err
	if [ "$(id -u)" -ne 0 ]; then
		echo "needs root (network namespaces, TAP devices)"
		return 1
	fi
	if ! command -v ip >/dev/null 2>&1; then
		echo "no ip (iproute2)"
		return 1
	fi
	if ! err=$(ip netns add "$1" 2>&1); then
		echo "network namespaces unavailable (${err%%$'\n'*})"
		return 1
	fi
}

# Root and a namespace of our own, or skip.
ns_create()
{
	local why
	T_NS="weft-$T_NAME-$$"
	if ! why=$(ns_add "$T_NS"); then
		T_NS=
		t_skip "$why"
	fi
	NSX=(ip netns exec "$T_NS")
	"${NSX[@]}" ip link set lo up
}

# nsx CMD...: run CMD in the namespace. A shell function run in the
# background is a subshell, whose pid is not CMD's: background jobs use
# "${NSX[@]}" CMD... instead, so that $! is CMD itself.
nsx()
{
	"${NSX[@]}" "$@"
}

# wait_until SECS CMD...: poll CMD every 0.1 s until it succeeds (0) or
# SECS pass (1).
wait_until()
{
	local i n=$(($1 * 10))
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# start_server LOG CMD...: run CMD in the namespace in the background;
# T_SERVER is its pid (ip netns exec and env exec, so it is the server's).
start_server()
{
	local log=$1
	shift
	"${NSX[@]}" "$@" >"$log" 2>&1 &
	T_SERVER=$!
	T_PIDS+=("$T_SERVER")
}

# wait_ready LOG PATTERN SECS: the server printed PATTERN (0), or died or
# did not within SECS (1).
wait_ready()
{
	local log=$1 pat=$2 i n=$(($3 * 10))
	for ((i = 0; i < n; i++)); do
		grep -q "$pat" "$log" 2>/dev/null && return 0
		kill -0 "$T_SERVER" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# kill_server: after a failed start, end the server (still our child).
kill_server()
{
	kill -9 "$T_SERVER" 2>/dev/null
	wait "$T_SERVER" 2>/dev/null
}

# kill_session SID SIGNAL: signal every process of session SID (one started
# with setsid, whose pid is SID), one by one by pid. (A process group is not
# enough: timeout(1) puts itself and its command in a group of their own.)
kill_session()
{
	local p
	for p in $(ps -o pid= -s "$1" 2>/dev/null); do
		kill "$2" "$p" 2>/dev/null
	done
}

# stop_wait PID SECS: wait for PID (a child of this shell) to exit by
# itself and set T_STATUS to its exit status, or kill it after SECS and set
# T_STATUS=timeout. (Not in $(...): a subshell cannot wait for it.)
stop_wait()
{
	local pid=$1 i n=$(($2 * 10))
	for ((i = 0; i < n; i++)); do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid" 2>/dev/null
			T_STATUS=$?
			return
		fi
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	T_STATUS=timeout
}

# raw HOST PORT FILE SECS: send FILE's bytes over one TCP connection from
# the namespace (or the host when T_NS is empty), then print everything the
# server sends until it closes. Exit 0 when the server closed within SECS,
# 124 when it did not, 3 when the connection failed.
raw()
{
	"${NSX[@]}" timeout "$4" bash -c \
		'exec 3<>"/dev/tcp/$0/$1" || exit 3; cat "$2" >&3; cat <&3' "$1" "$2" "$3" 2>/dev/null
}

# httpd_load LBL BASE: wrk with 20 connections for 3 s against BASE (from
# the namespace): every response 200, at most 20 socket errors (a connection
# or two cut at the end of the run); then, once wrk is gone, httpd's /stats
# shows one connection open (the one asking) and two sockets (it and the
# listener): nothing leaked. Two checks; wrk's output is kept in
# $T_TMP/wrk.
httpd_load()
{
	local lbl=$1 base=$2 reqs nonok sockerr rps
	nsx timeout 30 wrk -t1 -c20 -d3s --timeout 5s "$base/" >"$T_TMP/wrk" 2>&1
	reqs=$(sed -n 's/^ *\([0-9][0-9]*\) requests in .*/\1/p' "$T_TMP/wrk")
	nonok=$(sed -n 's/^ *Non-2xx or 3xx responses: *\([0-9]*\).*/\1/p' "$T_TMP/wrk")
	sockerr=$(sed -n 's/^ *Socket errors: connect \([0-9]*\), read \([0-9]*\), write \([0-9]*\), timeout \([0-9]*\).*/\1 \2 \3 \4/p' "$T_TMP/wrk" |
		awk '{ print $1 + $2 + $3 + $4 }')
	rps=$(sed -n 's/^Requests\/sec: *//p' "$T_TMP/wrk")
	reqs=${reqs:-0} nonok=${nonok:-0} sockerr=${sockerr:-0}
	echo "  ..    $lbl: wrk -t1 -c20 -d3s: $reqs requests, Requests/sec: ${rps:-?}, $sockerr socket errors, $nonok non-2xx"
	check "$lbl: wrk: requests served, all 200, socket errors <= 20" \
		test "$reqs" -gt 0 -a "$nonok" = 0 -a "$sockerr" -le 20
	HTTPD_LOAD_BASE=$base
	check "$lbl: after the load, 1 connection and 2 sockets open (no leak)" \
		wait_until 15 httpd_settled
}

# httpd_settled: httpd at $HTTPD_LOAD_BASE has one connection and two
# sockets open.
httpd_settled()
{
	local s
	s=$(nsx curl -s --max-time 5 "$HTTPD_LOAD_BASE/stats" 2>/dev/null)
	[ "$(printf '%s\n' "$s" | sed -n 's/^connections_open //p')" = 1 ] &&
		[ "$(printf '%s\n' "$s" | sed -n 's/^net_sockets_open //p')" = 2 ]
}
