/* SPDX-License-Identifier: MIT */
/* libFuzzer: httpd's request parser (examples/http/request.c) over what a
 * client may send, as httpd's read_head hands it over: up to one 8 KiB
 * buffer, the empty lines before a request skipped (at most 16), the head
 * found in pieces as reads arrive, then parsed and routed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "http/request.h"

#define HEAD_MAX 8192
#define MAX_EMPTY_LINES 16

static int known_status(int st)
{
	return st == 0 || st == 400 || st == 417 || st == 431 || st == 501;
}

/* r's pointers lie in b[0..n). */
static void check_req(const struct http_req *r, const char *b, size_t n)
{
	FUZZ_CHECK(r->method >= b && r->method_len >= 1 && r->method_len <= 32);
	FUZZ_CHECK(r->method + r->method_len <= b + n);
	FUZZ_CHECK(r->target > r->method && r->target_len >= 1 &&
		   r->target + r->target_len <= b + n);
	FUZZ_CHECK(r->minor >= 0 && r->minor <= 9);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > HEAD_MAX + MAX_EMPTY_LINES)
		return -1;
	size_t k = 0;
	while (k < size && k <= MAX_EMPTY_LINES && (data[k] == '\r' || data[k] == '\n'))
		k++;
	if (k > MAX_EMPTY_LINES)
		return 0; /* httpd answers 400 before parsing */
	/* The head in a buffer of its exact size: ASan sees any read past it. */
	size_t n = size - k;
	char *b = malloc(n ? n : 1);
	memcpy(b, data + k, n);

	/* Found in one piece, and in pieces of the sizes the bytes suggest
	 * (reads of any length): the same end. */
	size_t scan = 0, end = http_head_end(b, n, &scan);
	FUZZ_CHECK(end <= n && (end == 0 || b[end - 1] == '\n'));
	size_t got = 0, piece_end = 0;
	scan = 0;
	while (got < n && !piece_end) {
		got += 1 + (unsigned char)b[got] % 97;
		if (got > n)
			got = n;
		piece_end = http_head_end(b, got, &scan);
	}
	FUZZ_CHECK(piece_end == end);

	/* The request line alone, as httpd checks it before the head is in. */
	struct http_req r;
	const char *l;
	size_t pos = 0, len;
	if (http_next_line(b, n, &pos, &l, &len) == 0) {
		FUZZ_CHECK(l == b && len < pos && pos <= n);
		int st = http_parse_request_line(l, len, &r);
		FUZZ_CHECK(st == 0 || st == 400);
		if (st == 0)
			check_req(&r, l, len);
	}

	if (end) {
		int st = http_parse_head(b, end, &r);
		FUZZ_CHECK(known_status(st));
		if (st == 0) {
			check_req(&r, b, end);
			/* Content-Length is clamped, never wraps. */
			FUZZ_CHECK(r.content_length < (UINT64_C(1) << 44));
			/* At most HTTP_MAX_HEADERS header lines are accepted. */
			size_t lines = 0;
			for (size_t i = 0; i < end; i++)
				lines += b[i] == '\n';
			FUZZ_CHECK(lines >= 2 && lines - 2 <= HTTP_MAX_HEADERS);
			int which = http_route(r.target, r.target_len);
			FUZZ_CHECK(which >= -1 && which <= 3);
		}
	}
	free(b);
	return 0;
}
