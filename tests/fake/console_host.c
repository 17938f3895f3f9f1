/* Host console: csvsm's console output goes to stdout; panic aborts the test. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "base/console.h"
#include "csvsm/cpu.h"
#include "base/percpu.h"

void con_write(const char *s, size_t n)
{
	fwrite(s, 1, n, stdout);
}

int con_vprintf(const char *fmt, va_list ap)
{
	return vprintf(fmt, ap);
}

int con_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}

__noreturn void panic(const char *fmt, ...)
{
	va_list ap;
	fflush(stdout);
	fprintf(stderr, "csvsm panic: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

struct percpu percpus[MAX_CPUS];
unsigned cpu_count = 1;
/* Per thread, so that a test's threads can be different vCPUs; unset: vCPU 0. */
__thread struct percpu *host_current_cpu;
struct percpu *this_cpu(void)
{
	return host_current_cpu ? host_current_cpu : &percpus[0];
}

/* csvsm's microsecond clock: the host's monotonic clock. */
uint64_t timer_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}
