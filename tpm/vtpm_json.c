/*
 * Strict bounded JSON reader (include/tpm/vtpm_json.h). RFC 8259 §2-§7:
 * whitespace is space, tab, LF, CR; a string holds no control character;
 * numbers are -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?. Recursion is
 * bounded by JSON_MAX_DEPTH, every index by len.
 */
#include "base/string.h"
#include "base/hex.h"
#include "tpm/vtpm_json.h"

struct cur {
	const char *s;
	size_t n, i;
};

static void ws(struct cur *c)
{
	while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t' || c->s[c->i] == '\n' ||
			       c->s[c->i] == '\r'))
		c->i++;
}

/* A string at c->i (the opening quote); leaves c->i after the closing quote. */
static int skip_string(struct cur *c)
{
	if (c->i >= c->n || c->s[c->i] != '"')
		return -1;
	c->i++;
	while (c->i < c->n) {
		unsigned char ch = (unsigned char)c->s[c->i++];
		if (ch == '"')
			return 0;
		if (ch < 0x20)
			return -1;
		if (ch != '\\')
			continue;
		if (c->i >= c->n)
			return -1;
		ch = (unsigned char)c->s[c->i++];
		if (ch == 'u') {
			if (c->n - c->i < 4)
				return -1;
			for (int k = 0; k < 4; k++)
				if (hex_digit(c->s[c->i++]) < 0)
					return -1;
		} else if (!strchr("\"\\/bfnrt", ch) || !ch) {
			return -1;
		}
	}
	return -1;
}

static bool digit(const struct cur *c)
{
	return c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9';
}

static int skip_number(struct cur *c)
{
	if (c->i < c->n && c->s[c->i] == '-')
		c->i++;
	if (!digit(c))
		return -1;
	if (c->s[c->i] == '0')
		c->i++;
	else
		while (digit(c))
			c->i++;
	if (c->i < c->n && c->s[c->i] == '.') {
		c->i++;
		if (!digit(c))
			return -1;
		while (digit(c))
			c->i++;
	}
	if (c->i < c->n && (c->s[c->i] == 'e' || c->s[c->i] == 'E')) {
		c->i++;
		if (c->i < c->n && (c->s[c->i] == '+' || c->s[c->i] == '-'))
			c->i++;
		if (!digit(c))
			return -1;
		while (digit(c))
			c->i++;
	}
	return 0;
}

static int skip_lit(struct cur *c, const char *lit)
{
	size_t l = strlen(lit);
	if (c->n - c->i < l || memcmp(c->s + c->i, lit, l))
		return -1;
	c->i += l;
	return 0;
}

static int skip_value(struct cur *c, unsigned depth);

static int skip_container(struct cur *c, unsigned depth, char open, char close)
{
	if (depth >= JSON_MAX_DEPTH)
		return -1;
	c->i++; /* the opening bracket */
	ws(c);
	if (c->i < c->n && c->s[c->i] == close) {
		c->i++;
		return 0;
	}
	for (;;) {
		if (open == '{') {
			if (skip_string(c))
				return -1;
			ws(c);
			if (c->i >= c->n || c->s[c->i] != ':')
				return -1;
			c->i++;
		}
		if (skip_value(c, depth + 1))
			return -1;
		ws(c);
		if (c->i >= c->n)
			return -1;
		if (c->s[c->i] == close) {
			c->i++;
			return 0;
		}
		if (c->s[c->i] != ',')
			return -1;
		c->i++;
		ws(c);
	}
}

static int skip_value(struct cur *c, unsigned depth)
{
	ws(c);
	if (c->i >= c->n)
		return -1;
	switch (c->s[c->i]) {
	case '{':
		return skip_container(c, depth, '{', '}');
	case '[':
		return skip_container(c, depth, '[', ']');
	case '"':
		return skip_string(c);
	case 't':
		return skip_lit(c, "true");
	case 'f':
		return skip_lit(c, "false");
	case 'n':
		return skip_lit(c, "null");
	default:
		return skip_number(c);
	}
}

int json_validate(const char *text, size_t len)
{
	struct cur c = {text, len, 0};
	if (!text || skip_value(&c, 0))
		return -1;
	ws(&c);
	return c.i == len ? 0 : -1;
}

/* The key at c->i (a string) equals `key` exactly (no escapes in keys csvsm asks for). */
static bool key_is(const struct cur *c, size_t start, size_t end, const char *key)
{
	size_t l = strlen(key);
	return end - start == l + 2 && !memcmp(c->s + start + 1, key, l);
}

int json_get_raw(const char *text, size_t len, const char *key, const char **val, size_t *vlen)
{
	struct cur c = {text, len, 0};
	int found = 0;

	if (!text || !key)
		return -1;
	ws(&c);
	if (c.i >= c.n || c.s[c.i] != '{')
		return -1;
	c.i++;
	ws(&c);
	if (c.i < c.n && c.s[c.i] == '}')
		return -1;
	for (;;) {
		size_t ks = c.i;
		if (skip_string(&c))
			return -1;
		bool match = key_is(&c, ks, c.i, key);
		ws(&c);
		if (c.i >= c.n || c.s[c.i] != ':')
			return -1;
		c.i++;
		ws(&c);
		size_t vs = c.i;
		if (skip_value(&c, 1))
			return -1;
		if (match) {
			if (found++)
				return -1; /* repeated: refuse */
			*val = c.s + vs;
			*vlen = c.i - vs;
		}
		ws(&c);
		if (c.i >= c.n)
			return -1;
		if (c.s[c.i] == '}')
			break;
		if (c.s[c.i] != ',')
			return -1;
		c.i++;
		ws(&c);
	}
	return found == 1 ? 0 : -1;
}

int json_get_string(const char *text, size_t len, const char *key, char *out, size_t cap,
		    size_t *outlen)
{
	const char *v;
	size_t vl, o = 0;

	if (!out || !cap || json_get_raw(text, len, key, &v, &vl) || vl < 2 || v[0] != '"')
		return -1;
	for (size_t i = 1; i + 1 < vl; i++) {
		char ch = v[i];
		if (ch == '\\') {
			char e = v[++i];
			static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
			const char *p = strchr(from, e);
			if (e == 'u') {
				int a = hex_digit(v[i + 1]), b = hex_digit(v[i + 2]), h = hex_digit(v[i + 3]),
				    l = hex_digit(v[i + 4]);
				if (a != 0 || b != 0 || (h << 4 | l) >= 0x80 || !(h << 4 | l))
					return -1;
				ch = (char)(h << 4 | l);
				i += 4;
			} else if (p && e) {
				ch = to[p - from];
			} else {
				return -1;
			}
		}
		if (o + 1 >= cap)
			return -1;
		out[o++] = ch;
	}
	out[o] = 0;
	if (outlen)
		*outlen = o;
	return 0;
}

int json_get_u64(const char *text, size_t len, const char *key, uint64_t *out)
{
	const char *v;
	size_t vl;
	uint64_t x = 0;

	if (json_get_raw(text, len, key, &v, &vl) || !vl || vl > 20 || (v[0] == '0' && vl > 1))
		return -1;
	for (size_t i = 0; i < vl; i++) {
		if (v[i] < '0' || v[i] > '9' || MUL_OVERFLOW(x, 10u, &x) ||
		    ADD_OVERFLOW(x, (uint64_t)(v[i] - '0'), &x))
			return -1;
	}
	*out = x;
	return 0;
}
