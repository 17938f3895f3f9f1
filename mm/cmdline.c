/*
 * Kernel command-line helpers: token lookup and bounded number parsing for
 * the options csvsm reads (include/mm/cmdline.h). The command line is
 * hypervisor-provided text: every read is bounded by the caller's length.
 */
#include "base/string.h"
#include "base/hex.h"
#include "mm/cmdline.h"

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool cmdline_get(const char *cmdline, size_t len, const char *key, const char **val, size_t *vlen)
{
	size_t klen = strlen(key);
	bool found = false;
	size_t i = 0;

	while (i < len && cmdline[i]) {
		while (i < len && cmdline[i] && is_space(cmdline[i]))
			i++;
		size_t start = i;
		while (i < len && cmdline[i] && !is_space(cmdline[i]))
			i++;
		size_t tlen = i - start;
		if (tlen > klen && cmdline[start + klen] == '=' &&
		    memcmp(cmdline + start, key, klen) == 0) {
			*val = cmdline + start + klen + 1;
			*vlen = tlen - klen - 1;
			found = true;
		}
	}
	return found;
}

int cmdline_parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	unsigned digits = 0;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	while (s < end && hex_digit(*s) >= 0) {
		if (++digits > 16)
			return -1;
		v = (v << 4) | (uint64_t)hex_digit(*s++);
	}
	if (!digits)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

int cmdline_parse_dec(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	unsigned digits = 0;

	while (s < end && *s >= '0' && *s <= '9') {
		if (++digits > 19)
			return -1;
		v = v * 10 + (uint64_t)(*s++ - '0');
	}
	if (!digits)
		return -1;
	*p = s;
	*out = v;
	return 0;
}
