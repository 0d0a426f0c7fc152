#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples/httpd on bare metal: boot the qemu-virt image with a virtio-net
# device on QEMU's user network, the guest's port 80 forwarded to a free
# port on the host's loopback, and talk to it with curl; once with the
# legacy virtio-mmio device and once with the modern one
# (QEMU_VIRTIO_MODERN=1). Builds nothing. One line per check, then
# "httpd_qemu: N passed, M failed".
# Usage: tests/net/httpd_qemu.sh [IMAGE]   (default build/qemu-virt/examples/httpd)
# HTTPD_QEMU_PORT: the first host port to try (default 18080).
# Single-quoted scripts for bash -c are meant; checks call functions by name.
# shellcheck disable=SC2016,SC2317
set -u
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tests/net/lib.sh
. tests/net/lib.sh
t_init httpd_qemu
img=${1:-build/qemu-virt/examples/httpd}
needs curl timeout setsid qemu-system-riscv64
[ -f "$img" ] || { bad "$img exists" "build it first (make TARGET=qemu-virt)"; t_done; }
tmp=$T_TMP

# A port nothing listens on, from HTTPD_QEMU_PORT up.
free_port()
{
	local p
	for ((p = ${HTTPD_QEMU_PORT:-18080}; p < ${HTTPD_QEMU_PORT:-18080} + 100; p++)); do
		if ! timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$p" 2>/dev/null &&
			! ss -Htln "sport = :$p" 2>/dev/null | grep -q .; then
			echo "$p"
			return 0
		fi
	done
	return 1
}

code()
{
	curl -s -o "$tmp/body" -D "$tmp/head" --max-time 5 -w '%{http_code}' "$@" 2>/dev/null
}

boot_and_check()
{
	local lbl=$1 modern=$2 port qemu log=$tmp/qemu-$1.log
	if ! port=$(free_port); then
		bad "$lbl: a free port from ${HTTPD_QEMU_PORT:-18080}"
		return
	fi
	local base=http://127.0.0.1:$port
	# In a session of its own, so that the script, timeout, qemu and tr
	# can be found and stopped together.
	QEMU_NETDEV="user,hostfwd=tcp:127.0.0.1:$port-:80" QEMU_VIRTIO_MODERN=$modern \
		QEMU_TIMEOUT=300 setsid qemu/run-qemu-virt.sh "$img" WEFT_NETIF=virtio HTTPD_PORT=80 \
		>"$log" 2>&1 &
	qemu=$!
	T_PIDS+=("$qemu")
	T_SESSIONS+=("$qemu")
	up() { [ "$(code "$base/")" = 200 ]; }
	if wait_until 60 up; then
		ok "$lbl: GET / is 200 through 127.0.0.1:$port"
		check "$lbl: the page is weft's" grep -q 'weft httpd' "$tmp/body"
		local c
		c=$(code "$base/stats")
		check "$lbl: GET /stats is 200 with fibers, workers, switches" \
			test "$c" = 200 -a "$(grep -cE '^(fibers|workers|switches) [0-9]+$' "$tmp/body")" = 3
		check "$lbl: /stats says the stack is lwip" grep -q '^net_stack lwip$' "$tmp/body"
		check "$lbl: /stats counts frames in and out" \
			test "$(sed -n 's/^net_frames_in //p' "$tmp/body")" -gt 0 \
			-a "$(sed -n 's/^net_frames_out //p' "$tmp/body")" -gt 0
		c=$(code "$base/nowhere")
		check "$lbl: GET /nowhere is 404" test "$c" = 404
		curl -sv --max-time 10 -o /dev/null -o /dev/null "$base/" "$base/stats" >"$tmp/ka" 2>&1
		check "$lbl: keep-alive: curl re-uses the connection" \
			grep -qi 're-using existing connection' "$tmp/ka"
		printf 'GARBAGE\r\n\r\n' >"$tmp/garbage"
		local out rc
		out=$(raw 127.0.0.1 "$port" "$tmp/garbage" 10)
		rc=$?
		check "$lbl: a malformed request is 400, then the server closes" \
			test "$rc" = 0 -a "$(printf '%s' "$out" | head -1 | tr -d '\r' | cut -d' ' -f2)" = 400
		c=$(code "$base/")
		check "$lbl: still serving" test "$c" = 200
	else
		bad "$lbl: GET / is 200 within 60 s"
	fi
	# Stop qemu alone: the pipe behind it then flushes the console log.
	local p
	for p in $(ps -o pid=,comm= -s "$qemu" | awk '$2 ~ /^qemu-system/ { print $1 }'); do
		kill -TERM "$p"
	done
	stop_wait "$qemu" 10
	kill_session "$qemu" -9
	check "$lbl: the console says httpd served port 80 on lwip" \
		grep -q '^httpd: serving http://0.0.0.0:80/ (stack lwip)' "$log"
	[ "$T_FAILED" = 0 ] || tail -15 "$log" | sed 's/^/        /'
}

boot_and_check "virtio legacy" 0
boot_and_check "virtio modern" 1
t_done
