/*
 * The secret registry (include/csvsm/secret.h): a fixed table, filled at
 * boot, wiped with memzero_explicit on every way the VM ends.
 */
#include "base/secret.h"
#include "base/string.h"

static struct {
	void *p;
	size_t n;
} regions[SECRET_MAX_REGIONS];
static unsigned nregions;
static volatile uint32_t reg_lock;
static uint32_t terminating;

bool secret_terminating(void)
{
	return __atomic_load_n(&terminating, __ATOMIC_ACQUIRE) != 0;
}

int secret_register(void *p, size_t n)
{
	int rc = -1;
	if (!p || !n)
		return -1;
	while (__atomic_exchange_n(&reg_lock, 1, __ATOMIC_ACQUIRE))
		;
	for (unsigned i = 0; i < nregions; i++)
		if (regions[i].p == p && regions[i].n == n)
			rc = 0;
	if (rc && nregions < SECRET_MAX_REGIONS) {
		regions[nregions].p = p;
		regions[nregions].n = n;
		__atomic_store_n(&nregions, nregions + 1, __ATOMIC_RELEASE);
		rc = 0;
	}
	__atomic_store_n(&reg_lock, 0, __ATOMIC_RELEASE);
	return rc;
}

void secret_wipe_all(void)
{
	/* First the state every request entry and guest request checks: from
	 * here on no vCPU serves, and the guest-request channel is closed
	 * (attest/guest_req.c), so nothing is sealed with a wiped key. */
	__atomic_store_n(&terminating, 1, __ATOMIC_SEQ_CST);
	/* No lock: a panic may come from inside secret_register's caller. */
	unsigned n = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < n && i < SECRET_MAX_REGIONS; i++)
		memzero_explicit(regions[i].p, regions[i].n);
}

void secret_reset(void)
{
	nregions = 0;
	__atomic_store_n(&terminating, 0, __ATOMIC_RELEASE);
}
