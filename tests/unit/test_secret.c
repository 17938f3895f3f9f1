/*
 * Unit tests of the secret registry (base/secret.c) and of the snp platform's
 * termination path (src/platform/snp.c): every registered secret is zero
 * before the hypervisor hears that the VM ends (issue 8 item 7).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/platform.h"
#include "base/secret.h"
#include "tests/fake/insn_fake.h"

const struct platform_ops *platform = &platform_snp;

static uint8_t vmpck0[32], seeds[4096], extra[SECRET_MAX_REGIONS][8];

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int setup(void **state)
{
	secret_reset();
	memset(vmpck0, 0xA5, sizeof(vmpck0));
	memset(seeds, 0x5A, sizeof(seeds));
	return 0;
}

static void test_registry(void **state)
{
	assert_int_equal(secret_register(vmpck0, sizeof(vmpck0)), 0);
	assert_int_equal(secret_register(vmpck0, sizeof(vmpck0)), 0); /* twice: one entry */
	assert_int_equal(secret_register(NULL, 8), -1);
	assert_int_equal(secret_register(seeds, 0), -1);
	unsigned n = 1;
	for (unsigned i = 0; i < SECRET_MAX_REGIONS; i++)
		if (secret_register(extra[i], sizeof(extra[i])) == 0)
			n++;
	assert_int_equal(n, SECRET_MAX_REGIONS); /* the table is fixed: the rest is refused */
	assert_false(all_zero(seeds, sizeof(seeds)));
	secret_wipe_all();
	assert_true(all_zero(vmpck0, sizeof(vmpck0)));
	assert_false(all_zero(seeds, sizeof(seeds))); /* never registered: untouched */
}

/* The snp termination request goes out by VMGEXIT; the secrets must be gone by then. */
static jmp_buf out;
static bool zero_at_vmgexit;
static uint64_t msr_at_vmgexit;

static void on_vmgexit(void)
{
	zero_at_vmgexit = all_zero(vmpck0, sizeof(vmpck0)) && all_zero(seeds, sizeof(seeds));
	msr_at_vmgexit = rdmsr(0xC0010130);
	longjmp(out, 1);
}

static void test_snp_terminate_wipes_first(void **state)
{
	assert_int_equal(secret_register(vmpck0, sizeof(vmpck0)), 0);
	assert_int_equal(secret_register(seeds, sizeof(seeds)), 0);
	fake_vmgexit = on_vmgexit;
	if (!setjmp(out))
		platform_snp.terminate(false, 1, 0x42);
	fake_vmgexit = NULL;
	assert_true(zero_at_vmgexit);
	/* GHCB MSR termination request: 0x100, reason set 1 in [15:12], code in [23:16]. */
	assert_int_equal(msr_at_vmgexit, 0x100 | (1 << 12) | (0x42 << 16));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_registry, setup),
	    cmocka_unit_test_setup(test_snp_terminate_wipes_first, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
