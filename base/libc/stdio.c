/*
 * Formatted output and the FILE-based output calls the libraries make:
 * the __*printf_chk fortify family, snprintf, fwrite/fputs/fputc/puts,
 * perror, write. stdin/stdout/stderr are data symbols (glibc's
 * `extern FILE *stderr`); only stdout and stderr lead anywhere: the serial
 * console. There are no other FILEs (fopen always fails, base/libc/stubs.c).
 *
 * The formatter covers C99 integer, character, string and pointer
 * conversions with all flags, width, precision and length modifiers. It has
 * no floating point (the layer is built with -mgeneral-regs-only): %e %f %g
 * %a skip their double argument and print "<float>".
 *
 * What reaches the console, which the host reads (issue 34 item 5,
 * docs/console.md): only text the image carries in its read-only part (the
 * libraries' own string constants), never bytes from memory. A library's
 * printf shows its format string as written, conversions unexpanded: the
 * arguments may be anything the library holds (libtpms dumps the whole TPM
 * command that sent it into failure mode, tpm_tpm2_interface.c
 * TPM2_Process: TPMLIB_LogArray(~0, command, ...)). Data written with
 * write/fwrite/fputs/puts shows when it is such a constant, else as a count
 * of bytes; single characters only as newlines. snprintf and friends, into
 * the caller's buffer, format as usual.
 */
#include <stdarg.h>
#include "base/console.h"
#include "base/string.h"
#include "base/libc/libc.h"

void *malloc(size_t n);
void free(void *p);
void *realloc(void *p, size_t n);
char *strerror(int e);
int snprintf(char *buf, size_t size, const char *fmt, ...);

struct libc_file {
	int fd;
};
static struct libc_file f_stdin = {0}, f_stdout = {1}, f_stderr = {2};
struct libc_file *stdin = &f_stdin;
struct libc_file *stdout = &f_stdout;
struct libc_file *stderr = &f_stderr;

#define EOF (-1)

void libc_console_write(const char *s, size_t n)
{
	con_write(s, n);
}

/* The image's code and constants: [__image_start, __text_end) (linker.ld). */
extern const char __image_start[], __text_end[];

bool libc_image_constant(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, lo = (uintptr_t)__image_start, hi = (uintptr_t)__text_end;
	return p && a >= lo && a <= hi && n <= hi - a;
}

const char *libc_shown(const char *s)
{
	if (!s)
		return "(null)";
	return libc_image_constant(s, strlen(s) + 1) ? s : "(a string from memory: not shown)";
}

/* Library bytes for the console: shown only when they are image constants. */
static void lib_output(const void *p, size_t n)
{
	if (!n)
		return;
	if (libc_image_constant(p, n)) {
		libc_console_write(p, n);
		return;
	}
	char line[80];
	int k = snprintf(line, sizeof(line), "[libc: %zu bytes of library output not shown]\n", n);
	libc_console_write(line, (size_t)k < sizeof(line) ? (size_t)k : sizeof(line) - 1);
}

/* ---- the formatter ---- */
struct fmt_state {
	libc_sink_fn sink;
	void *ctx;
	size_t count;
};

static void emit(struct fmt_state *st, const char *s, size_t n)
{
	if (n) {
		st->sink(st->ctx, s, n);
		st->count += n;
	}
}

static void pad(struct fmt_state *st, char c, int n)
{
	char buf[32];
	memset(buf, c, sizeof(buf));
	while (n > 0) {
		int k = n < (int)sizeof(buf) ? n : (int)sizeof(buf);
		emit(st, buf, (size_t)k);
		n -= k;
	}
}

enum { F_LEFT = 1, F_PLUS = 2, F_SPACE = 4, F_ALT = 8, F_ZERO = 16 };

/* One integer conversion: prefix, precision zeros, digits, padding (C99 7.19.6.1). */
static void fmt_int(struct fmt_state *st, unsigned long long v, bool neg, unsigned base, bool upper,
		    int flags, int width, int prec, char conv)
{
	char digits[24];
	char prefix[3];
	int nd = 0, np = 0;
	const char *set = upper ? "0123456789ABCDEF" : "0123456789abcdef";

	if (!(prec == 0 && v == 0))
		do {
			digits[nd++] = set[v % base];
			v /= base;
		} while (v);
	if (neg)
		prefix[np++] = '-';
	else if (flags & F_PLUS)
		prefix[np++] = '+';
	else if (flags & F_SPACE)
		prefix[np++] = ' ';
	if ((flags & F_ALT) && base == 16 && nd && !(nd == 1 && digits[0] == '0')) {
		prefix[np++] = '0';
		prefix[np++] = upper ? 'X' : 'x';
	}
	if (conv == 'p' && nd) {
		prefix[np++] = '0';
		prefix[np++] = 'x';
	}
	int zeros = prec > nd ? prec - nd : 0;
	if ((flags & F_ALT) && base == 8 && zeros == 0 && (nd == 0 || digits[nd - 1] != '0'))
		zeros = 1;
	if ((flags & F_ZERO) && !(flags & F_LEFT) && prec < 0 && width > np + nd + zeros)
		zeros = width - np - nd;
	int len = np + zeros + nd;
	if (!(flags & F_LEFT))
		pad(st, ' ', width - len);
	emit(st, prefix, (size_t)np);
	pad(st, '0', zeros);
	for (int i = nd - 1; i >= 0; i--)
		emit(st, &digits[i], 1);
	if (flags & F_LEFT)
		pad(st, ' ', width - len);
}

/* Skips one double in the va_list without touching SSE registers (SysV
 * x86_64 ABI 3.5.7: fp_offset < 176 means it is in the register save area). */
static void skip_double(va_list *ap, bool long_double)
{
	struct sysv_va {
		unsigned gp_offset, fp_offset;
		char *overflow_arg_area, *reg_save_area;
	} *va = (struct sysv_va *)*ap;
	if (long_double) {
		va->overflow_arg_area = (char *)ALIGN_UP((uintptr_t)va->overflow_arg_area, 16) + 16;
		return;
	}
	if (va->fp_offset < 176)
		va->fp_offset += 16;
	else
		va->overflow_arg_area += 8;
}

static int vformat(struct fmt_state *st, const char *fmt, va_list *ap)
{
	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			const char *q = p;
			while (q[1] && q[1] != '%')
				q++;
			emit(st, p, (size_t)(q - p + 1));
			p = q;
			continue;
		}
		const char *spec_start = p++;
		int flags = 0, width = 0, prec = -1;
		for (;; p++) {
			if (*p == '-')
				flags |= F_LEFT;
			else if (*p == '+')
				flags |= F_PLUS;
			else if (*p == ' ')
				flags |= F_SPACE;
			else if (*p == '#')
				flags |= F_ALT;
			else if (*p == '0')
				flags |= F_ZERO;
			else
				break;
		}
		if (*p == '*') {
			width = va_arg(*ap, int);
			if (width < 0) {
				flags |= F_LEFT;
				width = -width;
			}
			p++;
		} else {
			while (*p >= '0' && *p <= '9')
				width = width * 10 + (*p++ - '0');
		}
		if (*p == '.') {
			p++;
			prec = 0;
			if (*p == '*') {
				prec = va_arg(*ap, int);
				p++;
			} else {
				while (*p >= '0' && *p <= '9')
					prec = prec * 10 + (*p++ - '0');
			}
		}
		/* length: 0 int, 1 char, 2 short, 3 long, 4 long long / size / ptrdiff / intmax */
		int len = 0;
		bool long_double = false;
		for (;; p++) {
			if (*p == 'h')
				len = len == 2 ? 1 : 2;
			else if (*p == 'l')
				len = len == 3 ? 4 : 3;
			else if (*p == 'q' || *p == 'j' || *p == 'z' || *p == 't')
				len = 4;
			else if (*p == 'L')
				long_double = true;
			else
				break;
		}
		char c = *p;
		switch (c) {
		case 'd':
		case 'i': {
			long long v;
			if (len >= 3)
				v = len == 3 ? va_arg(*ap, long) : va_arg(*ap, long long);
			else
				v = va_arg(*ap, int);
			if (len == 1)
				v = (signed char)v;
			else if (len == 2)
				v = (short)v;
			bool neg = v < 0;
			fmt_int(st, neg ? 0ULL - (unsigned long long)v : (unsigned long long)v, neg,
				10, false, flags, width, prec, c);
			break;
		}
		case 'u':
		case 'o':
		case 'x':
		case 'X': {
			unsigned long long v;
			if (len >= 3)
				v = len == 3 ? va_arg(*ap, unsigned long)
					     : va_arg(*ap, unsigned long long);
			else
				v = va_arg(*ap, unsigned int);
			if (len == 1)
				v = (unsigned char)v;
			else if (len == 2)
				v = (unsigned short)v;
			unsigned base = c == 'u' ? 10 : c == 'o' ? 8 : 16;
			fmt_int(st, v, false, base, c == 'X', flags & ~(F_PLUS | F_SPACE), width,
				prec, c);
			break;
		}
		case 'p': {
			void *v = va_arg(*ap, void *);
			if (!v) {
				if (!(flags & F_LEFT))
					pad(st, ' ', width - 5);
				emit(st, "(nil)", 5);
				if (flags & F_LEFT)
					pad(st, ' ', width - 5);
			} else {
				fmt_int(st, (uintptr_t)v, false, 16, false, flags & ~F_ALT, width,
					prec, 'p');
			}
			break;
		}
		case 'c': {
			char ch = (char)va_arg(*ap, int);
			if (!(flags & F_LEFT))
				pad(st, ' ', width - 1);
			emit(st, &ch, 1);
			if (flags & F_LEFT)
				pad(st, ' ', width - 1);
			break;
		}
		case 's': {
			const char *s = va_arg(*ap, const char *);
			if (!s)
				s = prec < 0 || prec >= 6 ? "(null)" : "";
			size_t n = 0;
			while ((prec < 0 || n < (size_t)prec) && s[n])
				n++;
			if (!(flags & F_LEFT))
				pad(st, ' ', width - (int)n);
			emit(st, s, n);
			if (flags & F_LEFT)
				pad(st, ' ', width - (int)n);
			break;
		}
		case 'e':
		case 'E':
		case 'f':
		case 'F':
		case 'g':
		case 'G':
		case 'a':
		case 'A':
			skip_double(ap, long_double);
			emit(st, "<float>", 7);
			break;
		case 'n':
			/* glibc's fortified printf rejects %n in writable formats (abort) */
			libc_chk_fail("%n in a format string");
		case '%':
			emit(st, "%", 1);
			break;
		default:
			/* Unknown conversion: print it as written, as glibc does. */
			emit(st, spec_start, (size_t)(p - spec_start + (c ? 1 : 0)));
			if (!c)
				p--;
			break;
		}
	}
	return st->count > 0x7fffffff ? -1 : (int)st->count;
}

int libc_vformat(libc_sink_fn sink, void *ctx, const char *fmt, va_list ap)
{
	struct fmt_state st = {sink, ctx, 0};
	va_list aq;
	va_copy(aq, ap);
	int r = vformat(&st, fmt, &aq);
	va_end(aq);
	return r;
}

/* ---- sinks ---- */
struct buf_sink {
	char *buf;
	size_t size, len;
};

static void buf_put(void *ctx, const char *s, size_t n)
{
	struct buf_sink *b = ctx;
	if (b->len + 1 < b->size) {
		size_t room = b->size - 1 - b->len;
		memcpy(b->buf + b->len, s, n < room ? n : room);
	}
	b->len += n;
}

int libc_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct buf_sink b = {buf, size, 0};
	int r = libc_vformat(buf_put, &b, fmt, ap);
	if (size)
		buf[b.len < size ? b.len : size - 1] = '\0';
	return r;
}

static bool fd_is_console(int fd)
{
	return fd == 1 || fd == 2;
}

static void count_only(void *ctx, const char *s, size_t n)
{
	(void)ctx;
	(void)s;
	(void)n;
}

/* A library's printf to the console: its format text, never its arguments;
 * the return value is what the formatted output would have counted. */
static int vdprintf_console(int fd, const char *fmt, va_list ap)
{
	if (!fd_is_console(fd)) {
		LIBC_SET_ERRNO(LIBC_EBADF);
		return -1;
	}
	int r = libc_vformat(count_only, NULL, fmt, ap);
	lib_output(fmt, strlen(fmt));
	return r;
}

static int file_fd(struct libc_file *f)
{
	return f ? f->fd : -1;
}

/* ---- ISO C / POSIX entry points ---- */
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	return libc_vsnprintf(buf, size, fmt, ap);
}

int snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = libc_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return r;
}

int vfprintf(struct libc_file *f, const char *fmt, va_list ap)
{
	return vdprintf_console(file_fd(f), fmt, ap);
}

int fprintf(struct libc_file *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vdprintf_console(file_fd(f), fmt, ap);
	va_end(ap);
	return r;
}

int printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vdprintf_console(1, fmt, ap);
	va_end(ap);
	return r;
}

long write(int fd, const void *buf, size_t n)
{
	if (!fd_is_console(fd)) {
		LIBC_SET_ERRNO(LIBC_EBADF);
		return -1;
	}
	lib_output(buf, n);
	return (long)n;
}

size_t fwrite(const void *ptr, size_t size, size_t n, struct libc_file *f)
{
	size_t total;
	if (!size || !n)
		return 0;
	if (MUL_OVERFLOW(size, n, &total) || write(file_fd(f), ptr, total) < 0)
		return 0;
	return n;
}

int fputs(const char *s, struct libc_file *f)
{
	return write(file_fd(f), s, strlen(s)) < 0 ? EOF : 1;
}

int fputc(int c, struct libc_file *f)
{
	/* One byte of whatever the library holds: only a newline is shown. */
	static const char nl = '\n';
	if (!fd_is_console(file_fd(f))) {
		LIBC_SET_ERRNO(LIBC_EBADF);
		return EOF;
	}
	if ((char)c == '\n')
		libc_console_write(&nl, 1);
	return (unsigned char)c;
}

int putc(int c, struct libc_file *f)
{
	return fputc(c, f);
}
int putchar(int c)
{
	return fputc(c, stdout);
}

int puts(const char *s)
{
	if (fputs(s, stdout) == EOF || fputc('\n', stdout) == EOF)
		return EOF;
	return 1;
}

int fflush(struct libc_file *f)
{
	/* Output is unbuffered; fflush(NULL) flushes everything. */
	if (f && !fd_is_console(f->fd) && f->fd != 0) {
		LIBC_SET_ERRNO(LIBC_EBADF);
		return EOF;
	}
	return 0;
}

void perror(const char *s)
{
	/* strerror's messages are constants; s is shown as such or not at all. */
	const char *m = strerror(libc_errno);
	if (s && *s) {
		s = libc_shown(s);
		lib_output(s, strlen(s));
		lib_output(": ", 2);
	}
	lib_output(m, strlen(m));
	lib_output("\n", 1);
}

/* ---- glibc _FORTIFY_SOURCE printf family (glibc debug/ *_chk.c) ---- */
int __vsnprintf_chk(char *buf, size_t maxlen, int flag, size_t slen, const char *fmt, va_list ap)
{
	if (maxlen > slen)
		libc_chk_fail("__vsnprintf_chk");
	return libc_vsnprintf(buf, maxlen, fmt, ap);
}

int __snprintf_chk(char *buf, size_t maxlen, int flag, size_t slen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = __vsnprintf_chk(buf, maxlen, flag, slen, fmt, ap);
	va_end(ap);
	return r;
}

int __vfprintf_chk(struct libc_file *f, int flag, const char *fmt, va_list ap)
{
	return vdprintf_console(file_fd(f), fmt, ap);
}

int __fprintf_chk(struct libc_file *f, int flag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vdprintf_console(file_fd(f), fmt, ap);
	va_end(ap);
	return r;
}

int __printf_chk(int flag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vdprintf_console(1, fmt, ap);
	va_end(ap);
	return r;
}

int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap)
{
	return vdprintf_console(fd, fmt, ap);
}

int __dprintf_chk(int fd, int flag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = vdprintf_console(fd, fmt, ap);
	va_end(ap);
	return r;
}

int __vasprintf_chk(char **out, int flag, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = libc_vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	*out = NULL;
	if (n < 0)
		return -1;
	char *s = malloc((size_t)n + 1);
	if (!s)
		return -1;
	libc_vsnprintf(s, (size_t)n + 1, fmt, ap);
	*out = s;
	return n;
}

int __asprintf_chk(char **out, int flag, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = __vasprintf_chk(out, flag, fmt, ap);
	va_end(ap);
	return r;
}
