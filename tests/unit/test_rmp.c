/*
 * Unit tests of the software RMP model (tests/snpm/model/rmp.c): every PVALIDATE and
 * RMPADJUST return code and the CF case, 2M/4K size mismatches, the host's
 * PSMASH on a 4K access to a 2M entry, 4K-only host ranges, VMPL permissions.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arch/x86/insn.h"
#include "tests/snpm/model/rmp.h"

#define MAX_GPA (64ULL << 20)
#define MB2	PAGE_SIZE_2M
#define K4	PAGE_SIZE
/* 16-bit entries plus one lock byte per 2 MiB block */
static uint16_t storage[MAX_GPA / PAGE_SIZE + MAX_GPA / PAGE_SIZE_2M / 2];

static int setup(void **state)
{
	assert_int_equal(rmp_init(storage, sizeof(storage), MAX_GPA), 0);
	return 0;
}

static void test_init_args(void **state)
{
	assert_int_equal(rmp_storage_bytes(MAX_GPA), sizeof(storage));
	assert_int_equal(rmp_init(storage, sizeof(storage) - 1, MAX_GPA), -1);
	assert_int_equal(rmp_init(NULL, sizeof(storage), MAX_GPA), -1);
	assert_int_equal(rmp_init(storage, sizeof(storage), MAX_GPA + 1), -1);
	assert_int_equal(rmp_init(storage, sizeof(storage), MAX_GPA), 0);
	assert_int_equal(rmp_max_gpa(), MAX_GPA);
}

static void test_pvalidate_fail_input(void **state)
{
	bool cf = true;
	/* never assigned (shared) */
	assert_int_equal(rmp_pvalidate(4 * MB2, RMP_PG_SIZE_4K, true, &cf), PVALIDATE_FAIL_INPUT);
	assert_false(cf);
	assert_int_equal(rmp_pvalidate(4 * MB2, RMP_PG_SIZE_2M, true, &cf), PVALIDATE_FAIL_INPUT);
	/* beyond the model */
	assert_int_equal(rmp_pvalidate(MAX_GPA, RMP_PG_SIZE_4K, true, &cf), PVALIDATE_FAIL_INPUT);
	assert_int_equal(rmp_pvalidate(~0ULL & ~(K4 - 1), RMP_PG_SIZE_4K, true, &cf),
			 PVALIDATE_FAIL_INPUT);
	/* misaligned, bad size */
	assert_int_equal(rmp_hv_assign(4 * MB2, true, true), 0);
	assert_int_equal(rmp_pvalidate(4 * MB2 + K4, RMP_PG_SIZE_2M, true, &cf),
			 PVALIDATE_FAIL_INPUT);
	assert_int_equal(rmp_pvalidate(4 * MB2 + 8, RMP_PG_SIZE_4K, true, &cf),
			 PVALIDATE_FAIL_INPUT);
	assert_int_equal(rmp_pvalidate(4 * MB2, 2, true, &cf), PVALIDATE_FAIL_INPUT);
	/* assigned then made shared again */
	assert_int_equal(rmp_hv_assign(4 * MB2, true, false), 0);
	assert_int_equal(rmp_pvalidate(4 * MB2, RMP_PG_SIZE_2M, true, &cf), PVALIDATE_FAIL_INPUT);
}

static void test_pvalidate_2m_and_cf(void **state)
{
	bool cf;
	struct rmp_entry_info i;

	assert_int_equal(rmp_hv_assign(2 * MB2, true, true), 0);
	assert_int_equal(rmp_pvalidate(2 * MB2, RMP_PG_SIZE_2M, true, &cf), 0);
	assert_false(cf);
	assert_int_equal(rmp_query(2 * MB2 + 511 * K4, &i), 0);
	assert_true(i.assigned && i.validated && i.size2m && !i.vmsa);
	/* already validated: success with CF=1 */
	assert_int_equal(rmp_pvalidate(2 * MB2, RMP_PG_SIZE_2M, true, &cf), 0);
	assert_true(cf);
	assert_int_equal(rmp_pvalidate(2 * MB2, RMP_PG_SIZE_2M, false, &cf), 0);
	assert_false(cf);
	assert_int_equal(rmp_pvalidate(2 * MB2, RMP_PG_SIZE_2M, false, &cf), 0);
	assert_true(cf);
	assert_int_equal(rmp_query(2 * MB2 + 7 * K4, &i), 0);
	assert_false(i.validated);
	/* a fresh private assignment clears validated (RMPUPDATE) */
	assert_int_equal(rmp_pvalidate(2 * MB2, RMP_PG_SIZE_2M, true, &cf), 0);
	assert_int_equal(rmp_hv_assign(2 * MB2, true, true), 0);
	assert_int_equal(rmp_pvalidate(2 * MB2, RMP_PG_SIZE_2M, true, &cf), 0);
	assert_false(cf);
}

static void test_size_mismatch_and_smash(void **state)
{
	bool cf;
	struct rmp_entry_info i;

	/* 4K entries: a 2M PVALIDATE fails with FAIL_SIZEMISMATCH */
	for (unsigned p = 0; p < PAGES_PER_2M; p++)
		assert_int_equal(rmp_hv_assign(6 * MB2 + p * K4, false, true), 0);
	assert_int_equal(rmp_pvalidate(6 * MB2, RMP_PG_SIZE_2M, true, &cf),
			 PVALIDATE_FAIL_SIZEMISMATCH);
	assert_int_equal(rmp_pvalidate(6 * MB2 + 3 * K4, RMP_PG_SIZE_4K, true, &cf), 0);
	assert_false(cf);

	/* 4K PVALIDATE inside a validated 2M entry: host PSMASHes; CF=1 (already validated) */
	assert_int_equal(rmp_hv_assign(8 * MB2, true, true), 0);
	assert_int_equal(rmp_pvalidate(8 * MB2, RMP_PG_SIZE_2M, true, &cf), 0);
	assert_int_equal(rmp_pvalidate(8 * MB2 + 5 * K4, RMP_PG_SIZE_4K, true, &cf), 0);
	assert_true(cf);
	assert_int_equal(rmp_query(8 * MB2 + 100 * K4, &i), 0);
	assert_true(i.validated && !i.size2m);
	/* rescinding one 4K page leaves the 511 others validated */
	assert_int_equal(rmp_pvalidate(8 * MB2 + 5 * K4, RMP_PG_SIZE_4K, false, &cf), 0);
	assert_false(cf);
	assert_int_equal(rmp_query(8 * MB2 + 5 * K4, &i), 0);
	assert_false(i.validated);
	assert_int_equal(rmp_query(8 * MB2 + 6 * K4, &i), 0);
	assert_true(i.validated);
	/* now 4K entries: 2M PVALIDATE mismatches */
	assert_int_equal(rmp_pvalidate(8 * MB2, RMP_PG_SIZE_2M, false, &cf),
			 PVALIDATE_FAIL_SIZEMISMATCH);
}

static void test_hv_psmash_and_4k_assign(void **state)
{
	bool cf;
	struct rmp_entry_info i;

	assert_int_equal(rmp_hv_psmash(10 * MB2), -1); /* not a 2M entry */
	assert_int_equal(rmp_hv_assign(10 * MB2, true, true), 0);
	assert_int_equal(rmp_hv_psmash(10 * MB2 + K4), -1); /* misaligned */
	assert_int_equal(rmp_pvalidate(10 * MB2, RMP_PG_SIZE_2M, true, &cf), 0);
	assert_int_equal(rmp_hv_psmash(10 * MB2), 0);
	assert_int_equal(rmp_query(10 * MB2 + K4, &i), 0);
	assert_true(i.assigned && i.validated && !i.size2m);
	assert_int_equal(rmp_hv_psmash(MAX_GPA), -1);

	/* 4K RMPUPDATE inside a 2M entry: smash, only that page is reset */
	assert_int_equal(rmp_hv_assign(12 * MB2, true, true), 0);
	assert_int_equal(rmp_pvalidate(12 * MB2, RMP_PG_SIZE_2M, true, &cf), 0);
	assert_int_equal(rmp_hv_assign(12 * MB2 + 9 * K4, false, false), 0);
	assert_int_equal(rmp_query(12 * MB2 + 9 * K4, &i), 0);
	assert_false(i.assigned || i.validated);
	assert_int_equal(rmp_query(12 * MB2 + 10 * K4, &i), 0);
	assert_true(i.assigned && i.validated && !i.size2m);

	/* hypervisor argument checks */
	assert_int_equal(rmp_hv_assign(MB2 + K4, true, true), -1);
	assert_int_equal(rmp_hv_assign(MAX_GPA, false, true), -1);
	assert_int_equal(rmp_hv_assign(MAX_GPA - K4, true, true), -1);
	assert_int_equal(rmp_hv_assign(MAX_GPA - K4, false, true), 0);
	assert_int_equal(rmp_query(MAX_GPA, &i), -1);
}

static void test_4k_only(void **state)
{
	bool cf;
	struct rmp_entry_info i;

	assert_int_equal(rmp_hv_set_4k_only(14 * MB2 + K4, 14 * MB2 + 2 * K4), 0);
	assert_int_equal(rmp_hv_set_4k_only(5, 5), -1);
	assert_true(rmp_hv_block_is_4k_only(14 * MB2 + 300 * K4));
	assert_false(rmp_hv_block_is_4k_only(13 * MB2));
	assert_false(rmp_hv_block_is_4k_only(15 * MB2));
	assert_int_equal(rmp_hv_assign(14 * MB2, true, true), 0);
	assert_int_equal(rmp_query(14 * MB2, &i), 0);
	assert_true(i.assigned && !i.size2m);
	assert_int_equal(rmp_pvalidate(14 * MB2, RMP_PG_SIZE_2M, true, &cf),
			 PVALIDATE_FAIL_SIZEMISMATCH);
	assert_int_equal(rmp_pvalidate(14 * MB2 + 511 * K4, RMP_PG_SIZE_4K, true, &cf), 0);
	assert_false(cf);
	/* the neighbouring block is normal */
	assert_int_equal(rmp_hv_assign(15 * MB2, true, true), 0);
	assert_int_equal(rmp_pvalidate(15 * MB2, RMP_PG_SIZE_2M, true, &cf), 0);
	/* table full */
	for (unsigned k = 1; k < RMP_MAX_4K_ONLY; k++)
		assert_int_equal(rmp_hv_set_4k_only(k * K4, (k + 1) * K4), 0);
	assert_int_equal(rmp_hv_set_4k_only(0, K4), -1);
	rmp_hv_clear_4k_only();
	assert_false(rmp_hv_block_is_4k_only(14 * MB2));
}

/* The host's 4K backing (guest_memfd) and the PSMASHes KVM does behind the guest. */
static void test_backing_4k_and_psmash_counts(void **state)
{
	bool cf;
	struct rmp_entry_info i;
	struct rmp_hv_stats st;

	assert_false(rmp_hv_backing_4k()); /* rmp_init's default: 2M where asked */
	rmp_hv_set_backing_4k(true);
	assert_true(rmp_hv_backing_4k());
	assert_true(rmp_hv_block_is_4k_only(20 * MB2));
	/* a 2M page-state change makes 512 4K entries: 2M PVALIDATE mismatches */
	assert_int_equal(rmp_hv_assign(20 * MB2, true, true), 0);
	assert_int_equal(rmp_query(20 * MB2 + 7 * K4, &i), 0);
	assert_true(i.assigned && !i.size2m);
	assert_int_equal(rmp_pvalidate(20 * MB2, RMP_PG_SIZE_2M, true, &cf),
			 PVALIDATE_FAIL_SIZEMISMATCH);
	assert_int_equal(rmp_adjust(20 * MB2, RMP_PG_SIZE_2M, 2 | RMPADJUST_RWX),
			 RMPADJUST_FAIL_SIZEMISMATCH);
	assert_int_equal(rmp_pvalidate(20 * MB2 + 7 * K4, RMP_PG_SIZE_4K, true, &cf), 0);
	assert_false(cf);
	rmp_hv_get_stats(&st);
	assert_int_equal(st.psmash_sizem, 0);
	assert_int_equal(st.psmash_update, 0);

	/* 2M backing: a 4K PVALIDATE in a 2M entry is KVM's PSMASH, counted once */
	rmp_hv_set_backing_4k(false);
	assert_false(rmp_hv_block_is_4k_only(22 * MB2));
	assert_int_equal(rmp_hv_assign(22 * MB2, true, true), 0);
	assert_int_equal(rmp_pvalidate(22 * MB2, RMP_PG_SIZE_2M, true, &cf), 0);
	assert_int_equal(rmp_pvalidate(22 * MB2 + 3 * K4, RMP_PG_SIZE_4K, true, &cf), 0);
	assert_true(cf);
	assert_int_equal(rmp_pvalidate(22 * MB2 + 4 * K4, RMP_PG_SIZE_4K, true, &cf), 0);
	rmp_hv_get_stats(&st);
	assert_int_equal(st.psmash_sizem, 1);
	/* a 4K page-state change in a 2M entry: the host's PSMASH, counted */
	assert_int_equal(rmp_hv_assign(24 * MB2, true, true), 0);
	assert_int_equal(rmp_hv_assign(24 * MB2 + K4, false, false), 0);
	rmp_hv_get_stats(&st);
	assert_int_equal(st.psmash_update, 1);
	assert_int_equal(st.psmash_sizem, 1);
	/* rmp_init resets backing and counts */
	rmp_hv_set_backing_4k(true);
	assert_int_equal(rmp_init(storage, sizeof(storage), MAX_GPA), 0);
	assert_false(rmp_hv_backing_4k());
	rmp_hv_get_stats(&st);
	assert_int_equal(st.psmash_sizem + st.psmash_update, 0);
}

static void test_rmpadjust_codes(void **state)
{
	bool cf;
	gpa_t g = 16 * MB2;

	assert_int_equal(rmp_adjust(g, RMP_PG_SIZE_4K, 2 | RMPADJUST_RWX),
			 RMPADJUST_FAIL_INPUT); /* shared */
	assert_int_equal(rmp_hv_assign(g, true, true), 0);
	/* not validated */
	assert_int_equal(rmp_adjust(g, RMP_PG_SIZE_2M, 2 | RMPADJUST_RWX),
			 RMPADJUST_FAIL_PERMISSION);
	assert_int_equal(rmp_pvalidate(g, RMP_PG_SIZE_2M, true, &cf), 0);
	/* target VMPL 0 (not above the issuer) or beyond 3 */
	assert_int_equal(rmp_adjust(g, RMP_PG_SIZE_2M, 0 | RMPADJUST_RWX),
			 RMPADJUST_FAIL_PERMISSION);
	assert_int_equal(rmp_adjust(g, RMP_PG_SIZE_2M, 4 | RMPADJUST_RWX),
			 RMPADJUST_FAIL_PERMISSION);
	/* reserved attribute bits, misaligned, bad size, beyond */
	assert_int_equal(rmp_adjust(g, RMP_PG_SIZE_2M, 2 | (1ULL << 12)), RMPADJUST_FAIL_INPUT);
	assert_int_equal(rmp_adjust(g + K4, RMP_PG_SIZE_2M, 2), RMPADJUST_FAIL_INPUT);
	assert_int_equal(rmp_adjust(g, 7, 2), RMPADJUST_FAIL_INPUT);
	assert_int_equal(rmp_adjust(MAX_GPA, RMP_PG_SIZE_4K, 2), RMPADJUST_FAIL_INPUT);
	/* VMSA must be a 4K page */
	assert_int_equal(rmp_adjust(g, RMP_PG_SIZE_2M, 2 | RMPADJUST_READ | RMPADJUST_VMSA),
			 RMPADJUST_FAIL_PERMISSION);
	/* success, then 2M over 4K entries */
	assert_int_equal(rmp_adjust(g, RMP_PG_SIZE_2M, 2 | RMPADJUST_RWX), 0);
	assert_int_equal(rmp_hv_psmash(g), 0);
	assert_int_equal(rmp_adjust(g, RMP_PG_SIZE_2M, 2 | RMPADJUST_RWX),
			 RMPADJUST_FAIL_SIZEMISMATCH);
	assert_int_equal(rmp_adjust(g + K4, RMP_PG_SIZE_4K, 2 | RMPADJUST_RWX), 0);
}

static void test_vmpl_perms(void **state)
{
	bool cf;
	struct rmp_entry_info i;
	gpa_t g = 18 * MB2;

	assert_int_equal(rmp_vmpl_perms(g, 0), 0); /* unassigned */
	assert_int_equal(rmp_hv_assign(g, true, true), 0);
	assert_int_equal(rmp_vmpl_perms(g, 0), 0); /* not validated */
	assert_int_equal(rmp_pvalidate(g, RMP_PG_SIZE_2M, true, &cf), 0);
	assert_int_equal(rmp_vmpl_perms(g, 0), RMP_PERM_ALL);
	assert_int_equal(rmp_vmpl_perms(g, 2), 0);
	assert_int_equal(rmp_adjust(g, RMP_PG_SIZE_2M, 2 | RMPADJUST_RWX), 0);
	assert_int_equal(rmp_adjust(g, RMP_PG_SIZE_2M, 1 | RMPADJUST_READ), 0);
	assert_int_equal(rmp_adjust(g, RMP_PG_SIZE_2M, 3 | RMPADJUST_READ | RMPADJUST_EXEC_USER),
			 0);
	assert_int_equal(rmp_vmpl_perms(g + 77 * K4, 1), RMP_PERM_R);
	assert_int_equal(rmp_vmpl_perms(g + 77 * K4, 2), RMP_PERM_ALL);
	assert_int_equal(rmp_vmpl_perms(g + 77 * K4, 3), RMP_PERM_R | RMP_PERM_XU);
	assert_int_equal(rmp_vmpl_perms(g, 4), 0);
	/* revoke VMPL2 only (attrs = vmpl, no permission bits) */
	assert_int_equal(rmp_adjust(g, RMP_PG_SIZE_2M, 2), 0);
	assert_int_equal(rmp_vmpl_perms(g, 2), 0);
	assert_int_equal(rmp_vmpl_perms(g, 1), RMP_PERM_R);
	/* VMSA page: 4K, smashes the 2M entry, then clear by re-granting */
	assert_int_equal(rmp_adjust(g + K4, RMP_PG_SIZE_4K, 2 | RMPADJUST_READ | RMPADJUST_VMSA),
			 0);
	assert_int_equal(rmp_query(g + K4, &i), 0);
	assert_true(i.vmsa && !i.size2m);
	assert_int_equal(i.perms[2], RMP_PERM_R);
	assert_int_equal(i.perms[0], RMP_PERM_ALL);
	assert_int_equal(rmp_query(g + 2 * K4, &i), 0);
	assert_false(i.vmsa);
	assert_int_equal(rmp_adjust(g + K4, RMP_PG_SIZE_4K, 2 | RMPADJUST_RWX), 0);
	assert_int_equal(rmp_query(g + K4, &i), 0);
	assert_false(i.vmsa);
	/* rescind: no access for anyone; shared: entry cleared */
	assert_int_equal(rmp_pvalidate(g + K4, RMP_PG_SIZE_4K, false, &cf), 0);
	assert_int_equal(rmp_vmpl_perms(g + K4, 2), 0);
	assert_int_equal(rmp_vmpl_perms(g + K4, 0), 0);
	assert_int_equal(rmp_hv_assign(g, true, false), 0);
	assert_int_equal(rmp_raw(g + 3 * K4), 0);
}

/* Two vCPUs PVALIDATE 4K pages of the same 2M entry: the smash and the
 * validated bits must not be lost (per-2M block lock). */
static pthread_barrier_t go;

static void *half_validate(void *arg)
{
	pthread_barrier_wait(&go);
	gpa_t base = 20 * MB2 + (uintptr_t)arg * (MB2 / 2);
	for (gpa_t g = base; g < base + MB2 / 2; g += K4) {
		bool cf;
		if (rmp_pvalidate(g, RMP_PG_SIZE_4K, true, &cf) != 0 || cf)
			return (void *)1;
	}
	return NULL;
}

static void test_concurrent_block(void **state)
{
	pthread_barrier_init(&go, NULL, 2);
	for (unsigned iter = 0; iter < 500; iter++) {
		pthread_t a, b;
		void *ra, *rb;
		assert_int_equal(rmp_hv_assign(20 * MB2, true, true), 0);
		assert_int_equal(pthread_create(&a, NULL, half_validate, (void *)0), 0);
		assert_int_equal(pthread_create(&b, NULL, half_validate, (void *)1), 0);
		pthread_join(a, &ra);
		pthread_join(b, &rb);
		assert_null(ra);
		assert_null(rb);
		for (unsigned p = 0; p < PAGES_PER_2M; p++)
			assert_int_equal(rmp_raw(20 * MB2 + p * K4),
					 RMPE_ASSIGNED | RMPE_VALIDATED);
	}
}

/*
 * Frames apart from GPAs (issue 17 item 2): a swap puts a fresh, assigned
 * and unvalidated frame behind a GPA; every guest-side operation and query
 * then acts on it, the old frame keeps its validated entry, and validating
 * the GPA again gives two validated frames for it.
 */
static void test_frame_swap(void **state)
{
	bool cf = true;
	gpa_t g = 6 * MB2 + 7 * K4;
	assert_int_equal(rmp_hv_assign(6 * MB2, true, true), 0);
	assert_int_equal(rmp_pvalidate(6 * MB2, RMP_PG_SIZE_2M, true, &cf), 0);
	assert_int_equal(rmp_adjust(6 * MB2, RMP_PG_SIZE_2M, 2 | RMPADJUST_RWX), 0);
	assert_int_equal(rmp_validated_frames(g), 1);
	assert_int_equal(rmp_hv_spare_of(g), -1);
	/* bad requests change nothing */
	assert_int_equal(rmp_hv_swap_frame(g + 8), -1);
	assert_int_equal(rmp_hv_swap_frame(MAX_GPA), -1);
	assert_int_equal(rmp_hv_swaps(), 0);

	assert_int_equal(rmp_hv_swap_frame(g), 0);
	assert_int_equal(rmp_hv_swap_frame(g), -1); /* already swapped */
	assert_int_equal(rmp_hv_swaps(), 1);
	assert_int_equal(rmp_hv_swap_gpa(0), g);
	assert_int_equal(rmp_hv_spare_of(g + 5), 0);
	assert_int_equal(rmp_hv_spare_of(g + K4), -1);
	/* the new frame: assigned, not validated, no permissions */
	struct rmp_entry_info e;
	assert_int_equal(rmp_query(g, &e), 0);
	assert_true(e.assigned);
	assert_false(e.validated);
	assert_false(e.size2m);
	assert_int_equal(rmp_vmpl_perms(g, 0), 0);
	assert_int_equal(rmp_vmpl_perms(g, 2), 0);
	/* the home block was PSMASHed, its other pages unchanged */
	assert_int_equal(rmp_raw(g + K4), RMPE_ASSIGNED | RMPE_VALIDATED |
					      ((RMPADJUST_RWX >> 8) << RMPE_PERM_SHIFT(2)));
	assert_int_equal(rmp_vmpl_perms(g - K4, 2), RMP_PERM_ALL);
	/* the old frame is still validated (rmp_validated_frames counts it) */
	assert_int_equal(rmp_validated_frames(g), 1);
	/* a 2M request over the block is SIZEMISMATCH (4K entries now) */
	assert_int_equal(rmp_pvalidate(6 * MB2, RMP_PG_SIZE_2M, true, &cf),
			 PVALIDATE_FAIL_SIZEMISMATCH);
	assert_int_equal(rmp_adjust(g, RMP_PG_SIZE_4K, 2 | RMPADJUST_RWX),
			 RMPADJUST_FAIL_PERMISSION); /* not validated */
	/* validating the GPA now validates the new frame: two for one GPA */
	assert_int_equal(rmp_pvalidate(g, RMP_PG_SIZE_4K, true, &cf), 0);
	assert_false(cf);
	assert_int_equal(rmp_validated_frames(g), 2);
	assert_int_equal(rmp_validated_frames(g + K4), 1);
	/* a host change acts on the frame it maps: 2M shared, frame by frame */
	assert_int_equal(rmp_hv_assign(6 * MB2, true, false), 0);
	assert_int_equal(rmp_raw(g), 0);
	assert_int_equal(rmp_raw(g + K4), 0);
	assert_int_equal(rmp_validated_frames(g), 1); /* the old frame, unmapped */
	assert_int_equal(rmp_hv_assign(6 * MB2, true, true), 0);
	assert_false(rmp_raw(6 * MB2) & RMPE_SIZE_2M); /* no 2M entry over a swap */
	assert_int_equal(rmp_pvalidate(6 * MB2, RMP_PG_SIZE_2M, true, &cf),
			 PVALIDATE_FAIL_SIZEMISMATCH);
	/* the spares run out */
	for (unsigned i = 1; i < RMP_SPARE_FRAMES; i++)
		assert_int_equal(rmp_hv_swap_frame(30 * MB2 + i * K4), (int)i);
	assert_int_equal(rmp_hv_swap_frame(31 * MB2), -1);
	/* rmp_init forgets every swap */
	assert_int_equal(rmp_init(storage, sizeof(storage), MAX_GPA), 0);
	assert_int_equal(rmp_hv_swaps(), 0);
	assert_int_equal(rmp_hv_spare_of(g), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_init_args),
	    cmocka_unit_test_setup(test_pvalidate_fail_input, setup),
	    cmocka_unit_test_setup(test_pvalidate_2m_and_cf, setup),
	    cmocka_unit_test_setup(test_size_mismatch_and_smash, setup),
	    cmocka_unit_test_setup(test_hv_psmash_and_4k_assign, setup),
	    cmocka_unit_test_setup(test_4k_only, setup),
	    cmocka_unit_test_setup(test_backing_4k_and_psmash_counts, setup),
	    cmocka_unit_test_setup(test_rmpadjust_codes, setup),
	    cmocka_unit_test_setup(test_vmpl_perms, setup),
	    cmocka_unit_test_setup(test_concurrent_block, setup),
	    cmocka_unit_test_setup(test_frame_swap, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
