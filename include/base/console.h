/*
 * Console output and fatal errors. The image writes to COM1; the host build
 * writes to stdout. panic() is for broken internal invariants only, never for
 * bad guest or hypervisor input (STYLE.md).
 */
#ifndef BASE_CONSOLE_H
#define BASE_CONSOLE_H

#include <stdarg.h>
#include "base/types.h"

void con_write(const char *s, size_t n);
void con_guest_write(const char *s, size_t n);
/* snp boot: keep output in memory until the console can run (con_release prints it). */
void con_hold(void);
void con_release(void);
int con_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int con_vprintf(const char *fmt, va_list ap);
/* Fixed-buffer formatting shared by the image and host (base/fmt.c). */
int fmt_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int fmt_snprintf(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

__noreturn void panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A boot dashboard line: "[   t.ttt ms] phase      text". */
void boot_phase(const char *phase, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for another program on the console: "[   t.ttt ms] <who>phase text". */
void boot_vphase(const char *who, const char *phase, const char *fmt, va_list ap);

#endif
