/* SPDX-License-Identifier: MIT */
/* httpd's request parser: what examples/httpd.c and tests/fuzz/http.c share.
 * Every function reads only the bytes it is given (no NUL is needed) and
 * keeps no state. */
#ifndef WEFT_EXAMPLES_HTTP_REQUEST_H
#define WEFT_EXAMPLES_HTTP_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_HEADERS 64 /* more is 431 */

struct http_req {
	const char *method, *target;
	size_t method_len, target_len;
	int minor; /* HTTP/1.minor */
	int close; /* the client wants the connection closed after this */
	int expect_continue;
	uint64_t content_length;
};

/* The end of the head in b[0..len): the offset just past its blank line, or
 * 0 while it is incomplete. *scan is where the search resumes. */
size_t http_head_end(const char *b, size_t len, size_t *scan);

/* The next line of p[*pos..n), without its LF or CR LF: 0, or -1 if no LF. */
int http_next_line(const char *p, size_t n, size_t *pos, const char **line, size_t *len);

/* method SP request-target SP HTTP/1.x: 0 or 400. r's pointers point into l. */
int http_parse_request_line(const char *l, size_t n, struct http_req *r);

/* Parse the head p[0..n) (it ends with its blank line). Returns 0, or the
 * status to answer before closing (400, 417, 431, 501). */
int http_parse_head(const char *p, size_t n, struct http_req *r);

/* Which page a target names: 1 the page, 2 the stats, 3 the stats as JSON,
 * 0 none, -1 malformed. */
int http_route(const char *t, size_t n);

#endif
