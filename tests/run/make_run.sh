#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make run` as a user at a terminal meets it: started in a pseudo-terminal
# (script(1)), it boots httpd on qemu-virt; a second `make run` on the same
# port says the port is in use; Ctrl-C, QEMU's escape Ctrl-A x and a
# SIGTERM to make each stop QEMU within a few seconds. Builds nothing (make
# run finds the qemu-virt image built). One line per check, then
# "make_run: N passed, M failed".
# Usage: tests/run/make_run.sh   (MAKE_RUN_PORT: the first host port to try,
# default 18180)
# shellcheck disable=SC2016,SC2317
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/net/lib.sh
. tests/net/lib.sh
t_init make_run
needs script timeout make qemu-system-riscv64 ps
[ -f build/qemu-virt/examples/httpd ] ||
	{ bad "build/qemu-virt/examples/httpd exists" "build it first (make TARGET=qemu-virt)"; t_done; }
tmp=$T_TMP

free_port()
{
	local p
	for ((p = ${MAKE_RUN_PORT:-18180}; p < ${MAKE_RUN_PORT:-18180} + 100; p++)); do
		if ! timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$p" 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

# start LABEL PORT: `make run` in a pseudo-terminal whose input is the fifo
# on fd 3; SCRIPT is script's pid, MAKEPID make's, QEMU QEMU's (its -pidfile).
start()
{
	local lbl=$1 port=$2
	rm -f "$tmp/in" "$tmp/pid"
	mkfifo "$tmp/in"
	OUT=$tmp/$lbl.out
	script -qfec "QEMU_EXTRA='-pidfile $tmp/pid' exec make --no-print-directory run HTTP_PORT=$port" \
		/dev/null <"$tmp/in" >"$OUT" 2>&1 &
	SCRIPT=$!
	T_PIDS+=("$SCRIPT")
	exec 3>"$tmp/in"
	QEMU="" MAKEPID=""
	serving() { grep -q 'httpd: serving' "$OUT" && [ -s "$tmp/pid" ]; }
	if ! wait_until 90 serving; then
		bad "$lbl: make run boots httpd" "$(tail -3 "$OUT" | tr -d '\r')"
		return 1
	fi
	QEMU=$(cat "$tmp/pid")
	MAKEPID=$(ps -o pid= --ppid "$SCRIPT" | tr -d ' ')
	# script's child leads a session of its own: the cleanup's handle.
	T_SESSIONS+=("$MAKEPID")
	ok "$lbl: make run boots httpd (QEMU $QEMU, make $MAKEPID)"
}

# stopped LABEL: QEMU and make are gone within 10 s, and script ended.
stopped()
{
	local lbl=$1
	gone() { ! kill -0 "$QEMU" 2>/dev/null && ! kill -0 "$MAKEPID" 2>/dev/null; }
	if wait_until 10 gone; then
		ok "$lbl: QEMU and make are gone"
	else
		bad "$lbl: QEMU and make are gone" "still running: $(ps -o pid=,args= -p "$QEMU,$MAKEPID" | cut -c1-60)"
	fi
	exec 3>&-
	stop_wait "$SCRIPT" 10
	check "$lbl: the terminal's program ended ($T_STATUS)" [ "$T_STATUS" != timeout ]
}

port=$(free_port) || { bad "a free port from ${MAKE_RUN_PORT:-18180}"; t_done; }

# Ctrl-C, after a second make run on the same port was refused.
if start ctrl-c "$port"; then
	out=$(timeout 60 make --no-print-directory run HTTP_PORT="$port" </dev/null 2>&1)
	rc=$?
	if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "port $port on 127.0.0.1 is already in use" <<<"$out"; then
		ok "a second make run on port $port: 'port $port ... already in use', exit $rc"
	else
		bad "a second make run on port $port says the port is in use" "exit $rc: $(tail -2 <<<"$out")"
	fi
	check "the first QEMU still runs" kill -0 "$QEMU"
	printf '\003' >&3
	stopped ctrl-c
	check "ctrl-c: QEMU said it ended on SIGINT" grep -q 'terminating on signal 2' "$OUT"
fi

# QEMU's escape: Ctrl-A x.
if start ctrl-a-x "$port"; then
	printf '\001x' >&3
	stopped ctrl-a-x
	check "ctrl-a-x: QEMU said Terminated" grep -q 'QEMU: Terminated' "$OUT"
fi

# SIGTERM to make, as a service manager or a script would stop it.
if start sigterm "$port"; then
	kill -TERM "$MAKEPID"
	stopped sigterm
fi
t_done
