/*
 * Formatted output into a fixed buffer, shared by the image console and the
 * host build. Supports what csvsm prints: %d %i %u %x %X %p %s %c %%, the
 * l/ll/z/h/hh length modifiers, '0' and '-' flags, width and precision
 * (for %s and %.*s). No floating point.
 */
#include <stdarg.h>
#include "base/console.h"

struct out {
	char *buf;
	size_t size, len;
};

static void put(struct out *o, char c)
{
	if (o->len + 1 < o->size)
		o->buf[o->len] = c;
	o->len++;
}

static void put_num(struct out *o, unsigned long long v, unsigned base, bool upper, bool neg,
		    int width, bool zero, bool left)
{
	char tmp[24];
	int n = 0;
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";

	do {
		tmp[n++] = digits[v % base];
		v /= base;
	} while (v);
	int len = n + (neg ? 1 : 0);
	if (!left && !zero)
		for (; width > len; width--)
			put(o, ' ');
	if (neg)
		put(o, '-');
	if (!left && zero)
		for (; width > len; width--)
			put(o, '0');
	while (n)
		put(o, tmp[--n]);
	if (left)
		for (; width > len; width--)
			put(o, ' ');
}

int fmt_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct out o = {buf, size, 0};

	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			put(&o, *p);
			continue;
		}
		p++;
		bool zero = false, left = false;
		for (;; p++) {
			if (*p == '0')
				zero = true;
			else if (*p == '-')
				left = true;
			else
				break;
		}
		int width = 0, prec = -1;
		if (*p == '*') {
			width = va_arg(ap, int);
			p++;
		}
		while (*p >= '0' && *p <= '9')
			width = width * 10 + (*p++ - '0');
		if (*p == '.') {
			p++;
			prec = 0;
			if (*p == '*') {
				prec = va_arg(ap, int);
				p++;
			}
			while (*p >= '0' && *p <= '9')
				prec = prec * 10 + (*p++ - '0');
		}
		int lng = 0;
		while (*p == 'l' || *p == 'z' || *p == 'h') {
			if (*p != 'h')
				lng++;
			p++;
		}
		unsigned long long u;
		long long s;
		switch (*p) {
		case 'd':
		case 'i':
			s = lng ? va_arg(ap, long long) : va_arg(ap, int);
			put_num(&o, s < 0 ? -(unsigned long long)s : (unsigned long long)s, 10,
				false, s < 0, width, zero, left);
			break;
		case 'u':
		case 'x':
		case 'X':
			u = lng ? va_arg(ap, unsigned long long) : va_arg(ap, unsigned int);
			put_num(&o, u, *p == 'u' ? 10 : 16, *p == 'X', false, width, zero, left);
			break;
		case 'p':
			put(&o, '0');
			put(&o, 'x');
			put_num(&o, (uintptr_t)va_arg(ap, void *), 16, false, false, width, zero,
				left);
			break;
		case 'c':
			put(&o, (char)va_arg(ap, int));
			break;
		case 's': {
			const char *str = va_arg(ap, const char *);
			if (!str)
				str = "(null)";
			int len = 0;
			while (str[len] && (prec < 0 || len < prec))
				len++;
			if (!left)
				for (int w = width; w > len; w--)
					put(&o, ' ');
			for (int i = 0; i < len; i++)
				put(&o, str[i]);
			if (left)
				for (int w = width; w > len; w--)
					put(&o, ' ');
			break;
		}
		case '%':
			put(&o, '%');
			break;
		case '\0':
			p--;
			break;
		default:
			put(&o, '%');
			put(&o, *p);
		}
	}
	if (size)
		buf[o.len < size ? o.len : size - 1] = '\0';
	return (int)o.len;
}

int fmt_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = fmt_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
