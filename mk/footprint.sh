#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make footprint`: what a connection costs on a 64 MB board (issue 16 item
# 5), on qemu-virt with -m 64M: examples/echo boots with a virtio-net device
# on a TAP device in a network namespace this script makes and removes
# (QEMU's user network would limit and alter the connections itself), and
# bench/echo_load (the linux-x86_64 build's) holds connections open from the
# namespace's side in rounds (ECHO_LOAD_HOLD=1): every connection opened and
# echoing one message, all of them kept open, then a second message over
# every one. For a fiber per connection and for a step-process per
# connection (ECHO_MODE=step) it finds the most connections held at once
# with every one still echoing: a probe beyond what fits (how many were held,
# how many the guest refused), then fresh boots at that figure (rounded down
# to 100, lower by 5% up to 3 times) of which FOOTPRINT_CONFIRM (2) in a
# row must pass with no error. Every run connects from a fresh client
# address (10.78.0.10 and up, the route's source), so no run meets the
# TIME_WAIT sockets of an earlier one, and the namespace's ports are
# 1024-65535. echo_load sums its failures by cause; they are counted as the
# guest's refusals (a reset or a refusal), stalls, or the client's own
# (no port, no descriptor, no memory): a run that failed only by the
# client's own is run again (once) rather than counted against the guest.
# Connections stall (fail) when no echo at all has come back for
# FOOTPRINT_STALL_S (120) seconds (ECHO_LOAD_STALL_ALL: a guest slowed by a
# loaded host, still echoing, is slow, not stalled; a frame lost on the way
# is sent again by TCP, seconds later), or when the run's bound,
# FOOTPRINT_LOAD_S, passes first (by default 600 s, or 60 ms a connection
# where that is more: a step-process echoes some 75 messages a second on a
# 2-core host, so 21,000 connections' two rounds take about 570 s). The guest prints its memory every second
# (WEFT_MEMSTAT_MS, kernel-shim/bare/memstat.c): RAM per connection is the
# pages and the malloc'd bytes that all the connections took while held
# idle between the rounds, beyond the idle server's, divided by their
# count; the peak (fewest free pages, most malloc'd) is shown too. Also
# the text, data and bss of the httpd and echo images, and the boot time
# from OpenSBI's hand-off to main on the guest clock (WEFT_BOOT_TIME).
# Builds nothing. Needs root (the namespace and the TAP device): skips
# otherwise, saying why. Prints a table (also in build/footprint/results.md)
# and ends with "footprint: N passed, M failed". Logs: build/footprint/.
#
# Usage: mk/footprint.sh [--check] [LINUX_BUILD_DIR [QEMU_VIRT_BUILD_DIR]]
#   (default build/linux-x86_64 and build/qemu-virt)
#   --check  the short version for mk/net-tests.sh: FOOTPRINT_CHECK_CONNS
#            (1000) connections held in each mode, the memory and boot-time
#            lines present, httpd's text+data under 256 KiB; no search.
# Environment: FOOTPRINT_FIBER_PROBE (13000) and FOOTPRINT_STEP_PROBE (22000),
# the probes' connection counts (beyond what one process's descriptors
# allow, RLIMIT_NOFILE, raised to 65536 where root may, echo_load holds them
# in several processes kept in step); FOOTPRINT_MEM (64M), QEMU's -m;
# FOOTPRINT_STALL_S (120); FOOTPRINT_LOAD_S (above); FOOTPRINT_CONFIRM (2); FOOTPRINT_MODES ("fiber step"), which to measure;
# FOOTPRINT_BOOTARGS, more NAME=value words for the guest (WEFT_NET_MEM_KB=...).
# Single-quoted scripts for bash -c are meant; checks call functions by name.
# shellcheck disable=SC2016,SC2317
set -u
cd "$(dirname "$0")/.." || exit 1
CHECK=0
if [ "${1:-}" = --check ]; then
	CHECK=1
	shift
fi
# shellcheck source=tests/net/lib.sh
. tests/net/lib.sh
t_init footprint
linux=${1:-build/linux-x86_64}
bare=${2:-build/qemu-virt}
echo_img=$bare/examples/echo
httpd_img=$bare/examples/httpd
load=$linux/bench/echo_load
out=build/footprint
[ "$CHECK" = 1 ] && out=build/footprint-check
mkdir -p "$out"
rm -f "$out"/*.log "$out/results.md"
MEM=${FOOTPRINT_MEM:-64M}
PORT=7
GUEST=10.78.0.2 HOST=10.78.0.1 TAP=wf0
# Long enough for the slowest run: the first connections wait through the
# whole opening round and the pause.
IDLE_MS=900000
# load_s CONNS: a run's bound (echo_load's ECHO_LOAD_TIMEOUT_S; QEMU's is
# longer), into LOAD_S.
load_s()
{
	LOAD_S=${FOOTPRINT_LOAD_S:-$(($1 * 6 / 100 > 600 ? $1 * 6 / 100 : 600))}
}
load_s 0

needs timeout setsid qemu-system-riscv64 riscv64-unknown-elf-size
for b in "$echo_img" "$httpd_img" "$load"; do
	[ -f "$b" ] || { bad "$b exists" "build it first (make footprint builds both)"; t_done; }
done

# ---- image sizes ------------------------------------------------------------
# size's Berkeley columns: text (code and read-only data), data, bss.
sizes()
{
	riscv64-unknown-elf-size "$1" | awk 'NR == 2 { print $1, $2, $3 }'
}
read -r h_text h_data h_bss <<<"$(sizes "$httpd_img")"
read -r e_text e_data e_bss <<<"$(sizes "$echo_img")"
echo "  ..    httpd image: text $h_text, data $h_data, bss $h_bss bytes"
echo "  ..    echo image: text $e_text, data $e_data, bss $e_bss bytes"
check "httpd's text+data ($((h_text + h_data)) B) is under 256 KiB" \
	test "$((h_text + h_data))" -lt 262144

# ---- the namespace and the TAP device ---------------------------------------
ns_create
nsx sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 >/dev/null 2>&1
nsx sysctl -q -w net.ipv6.conf.default.disable_ipv6=1 >/dev/null 2>&1
nsx sysctl -q -w net.ipv4.ip_local_port_range="1024 65535" >/dev/null 2>&1
if ! { nsx ip tuntap add dev "$TAP" mode tap &&
	nsx ip addr add "$HOST/24" dev "$TAP" &&
	nsx ip link set "$TAP" txqueuelen 20000 up; }; then
	bad "a TAP device $TAP in the namespace"
	t_done
fi

# fresh_source: the next client address (10.78.0.10 to .250) on the TAP
# device, and the route to the guest from it, so that this run's
# connections share no address and port with an earlier run's (its
# TIME_WAIT sockets stay with the old address). Sets SRC.
SRC_N=9
fresh_source()
{
	SRC_N=$((SRC_N + 1))
	[ "$SRC_N" -le 250 ] || SRC_N=10
	SRC=10.78.0.$SRC_N
	nsx ip addr add "$SRC/24" dev "$TAP" 2>/dev/null
	nsx ip route replace "$GUEST/32" dev "$TAP" src "$SRC"
}

# causes LOAD_LOG: the failures echo_load summed by cause ("echo_load:
# failed: N: WHAT[: ERROR]"), counted as the guest's refusals (REFUSED: a
# reset, a refusal, a close before the echo), the client's own (OWN: no
# local address or port, no descriptor, no memory, its own epoll), and
# stalls or anything else (STALLED); CAUSES, the lines in one.
causes()
{
	read -r REFUSED OWN STALLED <<<"$(awk '
		/^echo_load: failed: / {
			n = $3 + 0; sub(/^echo_load: failed: [0-9]+: /, "")
			if (/Connection reset by peer|Connection refused|closed by the server/) r += n
			else if (/^(socket|epoll_ctl)|Cannot assign requested address|Too many open files|No buffer space|Cannot allocate memory|Address already in use/) o += n
			else s += n
		}
		END { print r + 0, o + 0, s + 0 }' "$1")"
	CAUSES=$(sed -n 's/^echo_load: failed: //p' "$1" | paste -sd ';' | sed 's/;/; /g')
}

# boot LOG MODE: echo on qemu-virt in the namespace, on the TAP device, in
# a session of its own (T_QEMU), until it listens and answers (0) or not (1).
boot()
{
	local log=$1 mode=$2
	# shellcheck disable=SC2086 # FOOTPRINT_BOOTARGS is words
	"${NSX[@]}" setsid env QEMU_MEM="$MEM" QEMU_TIMEOUT=$((LOAD_S + 300)) \
		QEMU_NETDEV="tap,ifname=$TAP,script=no,downscript=no" \
		qemu/run-qemu-virt.sh "$echo_img" WEFT_NETIF=virtio WEFT_IP="$GUEST/24" \
		WEFT_GW="$HOST" ECHO_PORT=$PORT ECHO_IDLE_MS=$IDLE_MS ECHO_MODE="$mode" ECHO_MAX_CONNS=1000000 \
		ECHO_POLL_MAX_MS=2000 WEFT_MEMSTAT_MS=1000 WEFT_BOOT_TIME=1 ${FOOTPRINT_BOOTARGS:-} \
		>"$log" 2>&1 &
	T_QEMU=$!
	T_PIDS+=("$T_QEMU")
	T_SESSIONS+=("$T_QEMU")
	T_SERVER=$T_QEMU
	wait_ready "$log" '^echo: listening' 60 || return 1
	reach() { [ "$("${NSX[@]}" timeout 3 bash -c 'exec 3<>"/dev/tcp/$0/$1" && printf x >&3 && head -c 1 <&3' "$GUEST" "$PORT" 2>/dev/null)" = x ]; }
	wait_until 30 reach || return 1
	# The idle server's memory line, after that connection has gone.
	sleep 1.5
	wait_until 5 grep -q '^weft: mem: ' "$log"
}

# halt: stop QEMU alone (the pipe behind it then flushes the console), then
# whatever is left of its session.
halt()
{
	local p
	for p in $(ps -o pid=,comm= -s "$T_QEMU" 2>/dev/null | awk '$2 ~ /^qemu-system/ { print $1 }'); do
		kill -TERM "$p"
	done
	stop_wait "$T_QEMU" 15
	kill_session "$T_QEMU" -9
}

# hold LOG QEMU_LOG CONNS: echo_load holds CONNS connections, 2 rounds of
# 64 B, 3 s apart; 2 s into that pause the guest's last memory line is
# taken (HOLD_MEM: every connection open and idle) with the count open
# (HOLD_OPEN). Sets HELD (connections that echoed both rounds), ERRS,
# LOAD_RC, LOAD_LINE.
hold()
{
	local log=$1 qlog=$2 conns=$3 pid i
	HOLD_MEM='' HOLD_OPEN=0
	fresh_source
	: >"$log" # the loop below reads it before echo_load may have written
	"${NSX[@]}" env ECHO_LOAD_HOLD=1 ECHO_LOAD_PAUSE_S=3 ECHO_LOAD_STALL_S="${FOOTPRINT_STALL_S:-120}" ECHO_LOAD_STALL_ALL=1 \
		ECHO_LOAD_TIMEOUT_S=$LOAD_S timeout $((LOAD_S + 60)) "$load" "$GUEST" "$PORT" \
		"$conns" 2 64 >"$log" 2>&1 &
	pid=$!
	T_PIDS+=("$pid")
	for ((i = 0; i < (LOAD_S + 60) * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		HOLD_OPEN=$(sed -n 's/^echo_load: round 0: \([0-9]*\) connections open.*/\1/p' "$log")
		if [ -n "$HOLD_OPEN" ]; then
			sleep 2
			HOLD_MEM=$(grep '^weft: mem: ' "$qlog" | tail -1)
			break
		fi
		sleep 0.1
	done
	stop_wait "$pid" $((LOAD_S + 60))
	LOAD_RC=$T_STATUS
	HELD=$(sed -n 's/^echo_load: held \([0-9]*\) of .*/\1/p' "$log")
	ERRS=$(sed -n 's/^echo_load: .* \([0-9]*\) errors$/\1/p' "$log")
	LOAD_LINE=$(grep '^echo_load: held' "$log")
	HELD=${HELD:-0} ERRS=${ERRS:-?} HOLD_OPEN=${HOLD_OPEN:-0}
	causes "$log"
}

# mem_figures QEMU_LOG: from the memory lines, the idle server's (the last
# before the load, T_BASE lines into the log) and the peak (most pages
# taken, most malloc'd) while loaded: sets M_PAGES (pages taken for stacks
# and page tables) and M_HEAP (KiB malloc'd), M_FREE_MIN (free pages left at
# the peak), M_TOTAL, M_HEAPKB, M_SBRK (KiB sbrk took at the end). The heap
# and the pages share the free RAM (kernel-shim/bare/page.c), so the free
# pages fall as sbrk takes more too: the pages taken are the fall of the
# free pages plus sbrk's growth, in pages.
mem_figures()
{
	local log=$1
	read -r M_PAGES M_HEAP M_FREE_MIN M_TOTAL M_HEAPKB M_SBRK <<<"$(awk -v base="$T_BASE" '
		function val(k,   i) { for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2) + 0; return -1 }
		/^weft: mem: / {
			f = val("pages_free"); m = val("malloc_kb"); g = f + val("sbrk_kb") / 4
			if (NR <= base) { bf = f; bg = g; bm = m; next }
			if (!seen || f < minf) minf = f
			if (!seen || g < ming) ming = g
			if (!seen || m > maxm) maxm = m
			seen = 1; total = val("pages_total"); heap = val("heap_kb"); sbrk = val("sbrk_kb")
		}
		END { if (!seen || bf == "") print "? ? ? ? ? ?"; else print int(bg - ming), maxm - bm, minf, total, heap, sbrk }' "$log")"
	# The same from the line taken while every connection was held idle,
	# and the demand faults (stack pages first touched) since the idle
	# server's line (H_FAULTS).
	read -r H_PAGES H_HEAP H_FAULTS <<<"$(printf '%s\n' "$HOLD_MEM" | awk -v base="$T_BASE" -v qf="$log" '
		function val(s, k,   i, n, f) { n = split(s, f, " "); for (i = 1; i <= n; i++) if (index(f[i], k "=") == 1) return substr(f[i], length(k) + 2) + 0; return -1 }
		/^weft: mem: / { hf = val($0, "pages_free") + val($0, "sbrk_kb") / 4; hm = val($0, "malloc_kb"); hd = val($0, "faults") }
		END {
			while ((getline l < qf) > 0 && ++nr <= base)
				if (l ~ /^weft: mem: /) { bf = val(l, "pages_free") + val(l, "sbrk_kb") / 4; bm = val(l, "malloc_kb"); bd = val(l, "faults") }
			if (hf == "" || bf == "") print "? ? ?"; else print int(bf - hf), hm - bm, hd - bd
		}')"
}

# run_mode MODE CONNS: one boot, CONNS held; sets HELD, ERRS, the memory
# figures, BOOT_LINE; the logs are $out/MODE-CONNS-N.{qemu,load}.log (N:
# the run's number, so that repeated runs at one count keep each its own).
RUN_N=0
run_mode()
{
	RUN_N=$((RUN_N + 1))
	local mode=$1 conns=$2 q=$out/$1-$2-$RUN_N.qemu.log l=$out/$1-$2-$RUN_N.load.log
	HELD=0 ERRS='?' LOAD_LINE='' M_PAGES='?' H_PAGES='?' H_FAULTS='?' HOLD_OPEN=0 REFUSED=0 OWN=0 STALLED=0 CAUSES=''
	load_s "$conns"
	if ! boot "$q" "$mode"; then
		bad "$mode: echo boots on qemu-virt -m $MEM and answers on $GUEST:$PORT" \
			"$(tail -3 "$q" | tr '\n' ' ')"
		halt
		return 1
	fi
	T_BASE=$(wc -l <"$q")
	hold "$l" "$q" "$conns"
	sleep 1.5 # one more memory line after the load
	halt
	mem_figures "$q"
	BOOT_LINE=$(grep -m1 '^weft: boot time:' "$q")
	echo "  ..    $mode, $conns connections from $SRC: ${LOAD_LINE:-echo_load printed no result (exit $LOAD_RC)}, $ERRS errors"
	[ -z "$CAUSES" ] ||
		echo "  ..    $mode, $conns: $REFUSED refused by the guest, $STALLED stalled, $OWN the client's own failures ($CAUSES)"
	echo "  ..    $mode, $HOLD_OPEN held idle: $H_PAGES pages ($H_FAULTS stack pages first touched) and $H_HEAP KiB malloc'd beyond the idle server's; at the peak $M_PAGES pages and $M_HEAP KiB (free pages then $M_FREE_MIN of $M_TOTAL; sbrk took $M_SBRK of $M_HEAPKB KiB)"
	if [ "$LOAD_RC" != 0 ]; then
		grep -v '^echo_load: round' "$l" | head -6 | sed 's/^/        /'
		grep -E '^weft: (out of|unexpected)|^echo: ' "$q" | grep -v listening | head -4 | sed 's/^/        /'
	fi
	return 0
}

# per_conn: RAM per connection while all were held idle, bytes (pages and
# malloc'd), or "?".
per_conn()
{
	if [ "$HOLD_OPEN" -gt 0 ] 2>/dev/null && [ "$H_PAGES" != "?" ]; then
		echo $(((H_PAGES * 4096 + H_HEAP * 1024) / HOLD_OPEN)) $((H_PAGES * 4096 / HOLD_OPEN)) \
			$((H_HEAP * 1024 / HOLD_OPEN))
	else
		echo "? ? ?"
	fi
}

rows=()
row() { rows+=("| $1 | $2 |"); }

if [ "$CHECK" = 1 ]; then
	n=${FOOTPRINT_CHECK_CONNS:-1000}
	for mode in ${FOOTPRINT_MODES:-fiber step}; do
		run_mode "$mode" "$n" || continue
		check "$mode: $n connections held open at once, each echoing twice, no error" \
			test "$HELD" = "$n" -a "$ERRS" = 0
		check "$mode: the guest printed its memory (WEFT_MEMSTAT_MS), also while all were held" \
			test "$M_PAGES" != "?" -a "$H_PAGES" != "?"
		check "$mode: the boot time was printed (WEFT_BOOT_TIME)" test -n "$BOOT_LINE"
		# A fiber stays within its stack's top page (examples/echo/conn.h,
		# issue 34): one page first touched a connection, a sixteenth
		# more for the service fibers' and the caches' own (a fiber that
		# reached a second page makes it about two).
		one_page() { [ "$H_FAULTS" != "?" ] && [ "$HOLD_OPEN" -gt 0 ] &&
			[ "$H_FAULTS" -le $((HOLD_OPEN + HOLD_OPEN / 16)) ]; }
		[ "$mode" = fiber ] &&
			check "fiber: $H_FAULTS stack pages first touched for $HOLD_OPEN connections: one each at most (and a sixteenth)" one_page
		read -r all pg hp <<<"$(per_conn)"
		echo "  ..    $mode: $all B per connection ($pg in pages, $hp malloc'd); $BOOT_LINE"
	done
	t_done
fi

# confirm MODE CONNS [RUNS]: RUNS (FOOTPRINT_CONFIRM, 2) runs at CONNS,
# every one with all held and no error; a run that failed only by the
# client's own failures (OWN) is run again, once. 0 when confirmed.
confirm()
{
	local mode=$1 c=$2 runs=${3:-${FOOTPRINT_CONFIRM:-2}} k again
	for ((k = 0; k < runs; k++)); do
		for again in 1 0; do
			run_mode "$mode" "$c" || return 1
			[ "$HELD" = "$c" ] && [ "$ERRS" = 0 ] && break
			if [ "$again" = 1 ] && [ "$REFUSED" = 0 ] && [ "$STALLED" = 0 ] && [ "$OWN" -gt 0 ]; then
				echo "  ..    $mode, $c: only the client's own failures: once more"
				continue
			fi
			CONFIRM_FAIL="$c: $HELD held, $REFUSED refused, $STALLED stalled, $OWN the client's"
			return 1
		done
	done
	return 0
}

# search MODE PROBE: the probe, then confirmations; sets BEST (0: none
# confirmed), PROBE_HELD, PROBE_ERRS, PROBE_REFUSED, and the confirmed
# run's figures.
search()
{
	local mode=$1 probe=$2 c i
	CONFIRM_FAIL=''
	run_mode "$mode" "$probe" || { BEST=0; return; }
	PROBE_HELD=$HELD PROBE_ERRS=$ERRS PROBE_MIN=$M_FREE_MIN PROBE_REFUSED=$REFUSED
	PROBE_STALLED=$STALLED PROBE_OWN=$OWN
	if [ "$HELD" = "$probe" ] && [ "$ERRS" = 0 ]; then
		# All held: the figure is at least the probe's, once the runs
		# after it hold all too (the probe counts as the first).
		if confirm "$mode" "$probe" $((${FOOTPRINT_CONFIRM:-2} - 1)); then
			BEST=$probe
			return
		fi
		echo "  ..    $mode: the probe held all, then not: $CONFIRM_FAIL"
		HELD=$((probe * 95 / 100))
	fi
	# Below what the probe held (a probe that held none, the guest having
	# failed, starts the confirmations at half of it).
	c=$((HELD / 100 * 100))
	[ "$c" -gt 0 ] || c=$((probe / 2 / 100 * 100))
	for ((i = 0; i < 4 && c > 0; i++)); do
		if confirm "$mode" "$c"; then
			BEST=$c
			return
		fi
		echo "  ..    $mode: not confirmed at $CONFIRM_FAIL"
		c=$((c * 95 / 100 / 100 * 100))
	done
	BEST=0
}

# The client holds every connection open at once: one descriptor each,
# in as many processes as its RLIMIT_NOFILE asks (bench/echo_load.c).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
boot_line=
for mode in ${FOOTPRINT_MODES:-fiber step}; do
	if [ "$mode" = fiber ]; then probe=${FOOTPRINT_FIBER_PROBE:-13000}; else probe=${FOOTPRINT_STEP_PROBE:-22000}; fi
	search "$mode" "$probe"
	boot_line=${boot_line:-$BOOT_LINE}
	check "$mode: a figure confirmed by ${FOOTPRINT_CONFIRM:-2} runs in a row with no error" test "$BEST" -gt 0
	read -r all pg hp <<<"$(per_conn)"
	what="a fiber per connection"
	[ "$mode" = step ] && what="a step-process per connection"
	if [ "$BEST" = "$probe" ]; then
		row "echo, $what: connections held at once, every one echoing" "at least $BEST (every one of the probe's)"
	else
		row "echo, $what: connections held at once, every one echoing" "$BEST, confirmed ${FOOTPRINT_CONFIRM:-2} times (the probe of $probe: $PROBE_HELD held; of the $PROBE_ERRS failed, $PROBE_REFUSED refused by the guest, $PROBE_STALLED stalled, $PROBE_OWN the client's own; $PROBE_MIN pages free at its peak)"
	fi
	row "RAM per connection, $what" "$all B: $pg in pages (stacks, page tables), $hp malloc'd (lwIP, sockets, fiber or step-process)"
	row "at $BEST connections, $what" "$M_FREE_MIN of $M_TOTAL pages free at the peak; malloc's heap $M_HEAPKB KiB, sbrk took $M_SBRK KiB"
done
row "httpd image (text / data / bss)" "$h_text / $h_data / $h_bss B (text+data $((h_text + h_data)) B)"
row "echo image (text / data / bss)" "$e_text / $e_data / $e_bss B"
row "boot, guest clock" "${boot_line#weft: boot time: }"
{
	echo "footprint: qemu-virt, -m $MEM, echo over virtio-net on a TAP device, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "| what | measured |"
	echo "|---|---|"
	printf '%s\n' "${rows[@]}"
} >"$out/results.md"
cat "$out/results.md"
t_done
