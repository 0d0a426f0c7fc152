/* SPDX-License-Identifier: MIT */
/* httpd's request parser (examples/httpd.c): the head's end, its lines, the
 * request line, the headers that matter, and the target's route. Pure
 * functions over bytes a client sent; tests/fuzz/http.c fuzzes them. */
#include <stdint.h>
#include <string.h>

#include "request.h"
static int is_tchar(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

static int lower(int ch) { return ch >= 'A' && ch <= 'Z' ? ch + 32 : ch; }

/* s[0..n) equals lit, ignoring ASCII case. */
static int same(const char *s, size_t n, const char *lit)
{
	size_t i = 0;
	for (; i < n && lit[i]; i++)
		if (lower((unsigned char)s[i]) != lit[i])
			return 0;
	return i == n && !lit[i];
}

/* The end of the head in b[0..len): the offset just past its blank line, or
 * 0 while it is incomplete. *scan is where the search resumes. */
size_t http_head_end(const char *b, size_t len, size_t *scan)
{
	for (size_t i = *scan; i < len; i++) {
		if (b[i] != '\n')
			continue;
		if (i >= 1 && b[i - 1] == '\n')
			return i + 1;
		if (i >= 2 && b[i - 1] == '\r' && b[i - 2] == '\n')
			return i + 1;
	}
	*scan = len;
	return 0;
}

/* The next line of p[*pos..n), without its LF or CR LF. */
int http_next_line(const char *p, size_t n, size_t *pos, const char **line, size_t *len)
{
	const char *nl = memchr(p + *pos, '\n', n - *pos);
	if (!nl)
		return -1;
	*line = p + *pos;
	*len = (size_t)(nl - *line);
	if (*len && (*line)[*len - 1] == '\r')
		(*len)--;
	*pos = (size_t)(nl - p) + 1;
	return 0;
}

/* method SP request-target SP HTTP/1.x: 0 or 400. */
int http_parse_request_line(const char *l, size_t n, struct http_req *r)
{
	size_t i = 0;
	while (i < n && is_tchar((unsigned char)l[i]))
		i++;
	if (i == 0 || i > 32 || i == n || l[i] != ' ')
		return 400;
	r->method = l;
	r->method_len = i++;
	size_t t = i;
	while (i < n && (unsigned char)l[i] > 0x20 && (unsigned char)l[i] < 0x7f)
		i++;
	if (i == t || i == n || l[i] != ' ')
		return 400;
	r->target = l + t;
	r->target_len = i - t;
	i++;
	/* Only major version 1; a later minor version is answered as 1.1. */
	if (n - i != 8 || memcmp(l + i, "HTTP/1.", 7) != 0 || l[i + 7] < '0' || l[i + 7] > '9')
		return 400;
	r->minor = l[i + 7] - '0';
	return 0;
}

/* Content-Length: 1*DIGIT; values too large for any body are clamped. */
static int parse_length(const char *v, size_t n, uint64_t *out)
{
	uint64_t x = 0;
	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		if (x < UINT64_C(1) << 40)
			x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*out = x;
	return 0;
}

/* Scan a comma-separated list of Connection options. */
static void connection_options(const char *v, size_t n, int *close, int *keep)
{
	size_t i = 0;
	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t s = i;
		while (i < n && v[i] != ',' && v[i] != ' ' && v[i] != '\t')
			i++;
		if (same(v + s, i - s, "close"))
			*close = 1;
		else if (same(v + s, i - s, "keep-alive"))
			*keep = 1;
	}
}

/* Parse the head p[0..n) (it ends with its blank line). Returns 0, or the
 * status to answer before closing. */
int http_parse_head(const char *p, size_t n, struct http_req *r)
{
	size_t pos = 0, len;
	const char *l;
	int hosts = 0, close = 0, keep = 0, lengths = 0, te = 0, expect_other = 0;
	memset(r, 0, sizeof *r);
	if (http_next_line(p, n, &pos, &l, &len) != 0 || http_parse_request_line(l, len, r) != 0)
		return 400;
	for (int h = 0;; h++) {
		if (http_next_line(p, n, &pos, &l, &len) != 0)
			return 400;
		if (len == 0)
			break;
		if (h == HTTP_MAX_HEADERS)
			return 431;
		size_t i = 0;
		while (i < len && is_tchar((unsigned char)l[i]))
			i++;
		if (i == 0 || i == len || l[i] != ':') /* also obs-fold, space before ':' */
			return 400;
		const char *name = l;
		size_t name_len = i++;
		while (i < len && (l[i] == ' ' || l[i] == '\t'))
			i++;
		size_t e = len;
		while (e > i && (l[e - 1] == ' ' || l[e - 1] == '\t'))
			e--;
		for (size_t k = i; k < e; k++) {
			unsigned char ch = (unsigned char)l[k];
			if ((ch < 0x20 && ch != '\t') || ch == 0x7f) /* CR, NUL, ... */
				return 400;
		}
		const char *v = l + i;
		size_t vlen = e - i;
		if (same(name, name_len, "host")) {
			hosts++;
		} else if (same(name, name_len, "connection")) {
			connection_options(v, vlen, &close, &keep);
		} else if (same(name, name_len, "content-length")) {
			uint64_t x;
			if (parse_length(v, vlen, &x) != 0 || (lengths++ && x != r->content_length))
				return 400;
			r->content_length = x;
		} else if (same(name, name_len, "transfer-encoding")) {
			te = 1;
		} else if (same(name, name_len, "expect")) {
			if (same(v, vlen, "100-continue"))
				r->expect_continue = 1;
			else
				expect_other = 1;
		}
	}
	if (hosts > 1 || (r->minor >= 1 && hosts == 0))
		return 400;
	if (te)
		return 501;
	if (expect_other)
		return 417;
	r->close = r->minor == 0 ? !keep : close;
	return 0;
}

/* Which page a target names: 1 the page, 2 the stats, 3 the stats as JSON,
 * 0 none, -1 malformed. */
int http_route(const char *t, size_t n)
{
	if (n >= 7 && same(t, 7, "http://")) { /* absolute-form: drop the authority */
		size_t i = 7;
		while (i < n && t[i] != '/' && t[i] != '?')
			i++;
		if (i == 7)
			return -1;
		t += i;
		n -= i;
		if (n == 0)
			return 1;
	}
	if (n == 0 || t[0] != '/')
		return -1;
	const char *q = memchr(t, '?', n);
	size_t plen = q ? (size_t)(q - t) : n;
	if ((plen == 1) || (plen == 11 && memcmp(t, "/index.html", 11) == 0))
		return 1;
	if (plen == 6 && memcmp(t, "/stats", 6) == 0) {
		size_t qlen = q ? n - plen - 1 : 0;
		return q && ((qlen == 4 && memcmp(q + 1, "json", 4) == 0) ||
			     (qlen == 11 && memcmp(q + 1, "format=json", 11) == 0))
			       ? 3
			       : 2;
	}
	return 0;
}
