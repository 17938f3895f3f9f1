/*
 * The fault dump (src/idt.c exception_dispatch) on the console the host
 * reads (issue 34 item 5): vector, error code, vCPU, RIP and, for a #PF,
 * CR2; never a general register, RFLAGS or the stack pointer, which hold
 * the interrupted code's data; nothing once csvsm is terminating.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../../src/idt.c"
#include "base/secret.h"

const uint64_t exc_stub_table[32];

static jmp_buf ended;
static unsigned end_code;

static __noreturn void test_terminate(bool success, unsigned set, unsigned code)
{
	end_code = code;
	longjmp(ended, 1);
}

static const struct platform_ops test_platform = {.name = "test", .terminate = test_terminate};
const struct platform_ops *platform = &test_platform;

/* Every general register, RFLAGS and RSP hold a value that must not be printed. */
static struct exc_frame frame(uint64_t vector, uint64_t error)
{
	struct exc_frame f;
	uint64_t *w = (uint64_t *)&f;
	for (size_t i = 0; i < sizeof(f) / 8; i++)
		w[i] = 0x5ec2e7000000a000ULL | i << 4;
	f.vector = vector;
	f.error_code = error;
	f.rip = 0xfc001234;
	f.cs = 0x08;
	f.ss = 0x10;
	return f;
}

/* What exception_dispatch prints (host console: stdout) for f. */
static char *dump(struct exc_frame *f)
{
	static char buf[4096];
	char path[] = "/tmp/csvsm-fault-dump-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	fflush(stdout);
	int saved = dup(1);
	dup2(fd, 1);
	if (!setjmp(ended))
		exception_dispatch(f);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

/* Neither the 16-digit hex of a value nor its bytes' hex in memory order. */
static void assert_not_printed(const char *out, uint64_t v)
{
	char a[17], b[17];
	snprintf(a, sizeof(a), "%016llx", (unsigned long long)v);
	for (int i = 0; i < 8; i++)
		snprintf(b + 2 * i, 3, "%02x", (unsigned)(v >> (8 * i)) & 0xff);
	if (strstr(out, a) || strstr(out, b))
		fail_msg("the dump shows 0x%016llx: %s", (unsigned long long)v, out);
}

static void no_register_in_the_dump(void **state)
{
	struct exc_frame f = frame(13, 0x18);
	char *out = dump(&f);
	print_message("%s", out);
	assert_non_null(strstr(out, "csvsm: FAULT #GP vector=13 error=0x18 on vCPU 0 "
				    "rip=00000000fc001234\n"));
	assert_null(strstr(out, "cr2=")); /* stale outside a #PF */
	assert_int_equal(end_code, 0x80 | 13);
	const uint64_t hidden[] = {f.rax, f.rbx, f.rcx, f.rdx, f.rsi, f.rdi, f.rbp,    f.r8, f.r9,
				   f.r10, f.r11, f.r12, f.r13, f.r14, f.r15, f.rflags, f.rsp};
	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		assert_not_printed(out, hidden[i]);
}

static void page_fault_shows_cr2(void **state)
{
	struct exc_frame f = frame(14, 0x2);
	char *out = dump(&f);
	print_message("%s", out);
	/* the host fake's CR2 is 0 */
	assert_non_null(strstr(out, "csvsm: FAULT #PF vector=14 error=0x2 on vCPU 0 "
				    "rip=00000000fc001234 cr2=0000000000000000\n"));
	assert_not_printed(out, f.rax);
	assert_not_printed(out, f.rsp);
}

static void nothing_once_terminating(void **state)
{
	struct exc_frame f = frame(6, 0);
	secret_reset();
	secret_wipe_all(); /* another vCPU ends the VM */
	char *out = dump(&f);
	secret_reset();
	assert_string_equal(out, "");
	assert_int_equal(end_code, 0x80 | 6); /* and this vCPU ends it too */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(no_register_in_the_dump),
	    cmocka_unit_test(page_fault_shows_cr2),
	    cmocka_unit_test(nothing_once_terminating),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
