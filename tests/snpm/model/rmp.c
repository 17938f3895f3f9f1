/*
 * Software RMP model (see rmp.h): the hardware semantics of
 * RMPUPDATE/PSMASH (hypervisor side) and PVALIDATE/RMPADJUST (guest side,
 * issued at VMPL0) over a compact 16-bit-per-page table in caller-provided
 * storage. Return codes follow AMD APM vol. 3 "PVALIDATE"/"RMPADJUST" as
 * summarised in shared/reference/snp-svsm-interfaces.md §5.
 *
 * Every operation reads and writes only the 512 entries of the 2 MiB block
 * holding its address, under that block's lock byte (uncontended when vCPUs
 * work on disjoint 2 MiB ranges, as pre-acceptance does).
 */
#include "arch/x86/insn.h"
#include "base/string.h"
#include "tests/snpm/model/rmp.h"

struct rmp_range {
	gpa_t start, end;
};

static struct {
	uint16_t *e;
	uint8_t *lock; /* one per 2 MiB block, after the entries */
	gpa_t max_gpa;
	unsigned n4k;
	struct rmp_range only4k[RMP_MAX_4K_ONLY];
	bool backing_4k;
	uint64_t psmash_sizem, psmash_update;
	/* Spare frames, each given to one GPA by rmp_hv_swap_frame (never
	 * taken back): spare s is mapped at swap_gpa[s] from then on. */
	unsigned n_swap;
	gpa_t swap_gpa[RMP_SPARE_FRAMES];
	uint16_t spare_e[RMP_SPARE_FRAMES];
} rmp;

static size_t entry_bytes(gpa_t max_gpa)
{
	return (size_t)(ALIGN_UP(max_gpa, PAGE_SIZE) >> PAGE_SHIFT) * sizeof(uint16_t);
}

size_t rmp_storage_bytes(gpa_t max_gpa)
{
	return entry_bytes(max_gpa) + (size_t)(ALIGN_UP(max_gpa, PAGE_SIZE_2M) >> PAGE_SHIFT_2M);
}

int rmp_init(void *storage, size_t bytes, gpa_t max_gpa)
{
	if (!storage || !IS_ALIGNED(max_gpa, PAGE_SIZE) || max_gpa > RMP_MAX_GPA ||
	    bytes < rmp_storage_bytes(max_gpa))
		return -1;
	memset(storage, 0, rmp_storage_bytes(max_gpa));
	rmp.e = storage;
	rmp.lock = (uint8_t *)storage + entry_bytes(max_gpa);
	rmp.max_gpa = max_gpa;
	rmp.n4k = 0;
	rmp.backing_4k = false;
	rmp.psmash_sizem = rmp.psmash_update = 0;
	rmp.n_swap = 0;
	return 0;
}

gpa_t rmp_max_gpa(void)
{
	return rmp.max_gpa;
}

int rmp_hv_set_4k_only(gpa_t start, gpa_t end)
{
	if (start >= end || rmp.n4k == RMP_MAX_4K_ONLY)
		return -1;
	rmp.only4k[rmp.n4k].start = start;
	rmp.only4k[rmp.n4k].end = end;
	rmp.n4k++;
	return 0;
}

void rmp_hv_clear_4k_only(void)
{
	rmp.n4k = 0;
}

void rmp_hv_set_backing_4k(bool on)
{
	rmp.backing_4k = on;
}

bool rmp_hv_backing_4k(void)
{
	return rmp.backing_4k;
}

void rmp_hv_get_stats(struct rmp_hv_stats *out)
{
	out->psmash_sizem = __atomic_load_n(&rmp.psmash_sizem, __ATOMIC_RELAXED);
	out->psmash_update = __atomic_load_n(&rmp.psmash_update, __ATOMIC_RELAXED);
}

bool rmp_hv_block_is_4k_only(gpa_t gpa)
{
	gpa_t b = ALIGN_DOWN(gpa, PAGE_SIZE_2M);

	if (rmp.backing_4k)
		return true;
	for (unsigned i = 0; i < rmp.n4k; i++)
		if (rmp.only4k[i].start < b + PAGE_SIZE_2M && b < rmp.only4k[i].end)
			return true;
	return false;
}

static bool in_model(gpa_t gpa, gpa_t size)
{
	return rmp.e && gpa < rmp.max_gpa && size <= rmp.max_gpa - gpa;
}

/* The entry of gpa's home frame (the frame at the same address). */
static uint16_t *home(gpa_t gpa)
{
	return &rmp.e[gpa >> PAGE_SHIFT];
}

int rmp_hv_spare_of(gpa_t gpa)
{
	unsigned n = __atomic_load_n(&rmp.n_swap, __ATOMIC_ACQUIRE);
	gpa_t pg = ALIGN_DOWN(gpa, PAGE_SIZE);

	for (unsigned s = 0; s < n; s++)
		if (rmp.swap_gpa[s] == pg)
			return (int)s;
	return -1;
}

/* The entry of the frame the host maps at gpa now: its home frame, or the
 * spare frame a swap put there. */
static uint16_t *entry(gpa_t gpa)
{
	int s = rmp_hv_spare_of(gpa);

	return s < 0 ? home(gpa) : &rmp.spare_e[s];
}

static bool block_has_swap(gpa_t gpa)
{
	unsigned n = __atomic_load_n(&rmp.n_swap, __ATOMIC_ACQUIRE);
	gpa_t b = ALIGN_DOWN(gpa, PAGE_SIZE_2M);

	for (unsigned s = 0; s < n; s++)
		if (ALIGN_DOWN(rmp.swap_gpa[s], PAGE_SIZE_2M) == b)
			return true;
	return false;
}

/* The 2 MiB block's lock (gpa already checked by in_model). */
static void block_lock(gpa_t gpa)
{
	uint8_t *l = &rmp.lock[gpa >> PAGE_SHIFT_2M];

	while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
}

static void block_unlock(gpa_t gpa)
{
	__atomic_store_n(&rmp.lock[gpa >> PAGE_SHIFT_2M], 0, __ATOMIC_RELEASE);
}

/* Split the 2M entry holding gpa (if any) into 512 4K entries, keeping
 * state; true when there was one to split. */
static bool smash(gpa_t gpa)
{
	uint16_t *e = home(ALIGN_DOWN(gpa, PAGE_SIZE_2M));

	if (!(e[0] & RMPE_SIZE_2M))
		return false;
	for (unsigned i = 0; i < PAGES_PER_2M; i++)
		e[i] &= (uint16_t)~RMPE_SIZE_2M;
	return true;
}

static void set_block(gpa_t gpa, uint16_t v)
{
	uint16_t *e = home(gpa);

	for (unsigned i = 0; i < PAGES_PER_2M; i++)
		e[i] = v;
}

int rmp_hv_assign(gpa_t gpa, bool size2m, bool private)
{
	gpa_t size = size2m ? PAGE_SIZE_2M : PAGE_SIZE;

	if (!IS_ALIGNED(gpa, size) || !in_model(gpa, size))
		return -1;
	block_lock(gpa);
	if (size2m && block_has_swap(gpa)) {
		/* The frames mapped in the block are not one 2M frame: the
		 * change is made frame by frame, 4K each. */
		for (gpa_t g = gpa; g < gpa + PAGE_SIZE_2M; g += PAGE_SIZE)
			*entry(g) = private ? RMPE_ASSIGNED : 0;
	} else if (size2m) {
		/* A 4K-only host backs the range with small pages: 512 4K entries. */
		uint16_t v = private ? RMPE_ASSIGNED : 0;
		if (private && !rmp_hv_block_is_4k_only(gpa))
			v |= RMPE_SIZE_2M;
		set_block(gpa, v);
	} else {
		/*
		 * RMPUPDATE of one 4K page inside a 2M entry: the host PSMASHes
		 * first (arch/x86/kvm/svm/sev.c sev_gmem_invalidate: "If PFN is
		 * currently assigned as a 2M page, PSMASH it into individual 4K
		 * RMP entries before attempting to convert a 4K sub-page").
		 */
		if (smash(gpa))
			__atomic_add_fetch(&rmp.psmash_update, 1, __ATOMIC_RELAXED);
		*entry(gpa) = private ? RMPE_ASSIGNED : 0;
	}
	block_unlock(gpa);
	return 0;
}

int rmp_hv_psmash(gpa_t gpa)
{
	int rc = -1;

	if (!IS_ALIGNED(gpa, PAGE_SIZE_2M) || !in_model(gpa, PAGE_SIZE_2M))
		return -1;
	block_lock(gpa);
	if (*home(gpa) & RMPE_SIZE_2M) {
		smash(gpa);
		rc = 0;
	}
	block_unlock(gpa);
	return rc;
}

int rmp_hv_swap_frame(gpa_t gpa)
{
	unsigned s = rmp.n_swap;

	if (!IS_ALIGNED(gpa, PAGE_SIZE) || !in_model(gpa, PAGE_SIZE) || s == RMP_SPARE_FRAMES ||
	    rmp_hv_spare_of(gpa) >= 0)
		return -1;
	block_lock(gpa);
	/* The nested mapping of one 4K page in a 2M frame is a 4K mapping,
	 * and KVM maps no larger than the RMP entry: the host PSMASHes the
	 * home frame first (which keeps its pages validated). */
	if (smash(gpa))
		__atomic_add_fetch(&rmp.psmash_update, 1, __ATOMIC_RELAXED);
	rmp.spare_e[s] = RMPE_ASSIGNED; /* RMPUPDATE: assigned, not validated */
	rmp.swap_gpa[s] = gpa;
	__atomic_store_n(&rmp.n_swap, s + 1, __ATOMIC_RELEASE);
	block_unlock(gpa);
	return (int)s;
}

unsigned rmp_hv_swaps(void)
{
	return __atomic_load_n(&rmp.n_swap, __ATOMIC_ACQUIRE);
}

gpa_t rmp_hv_swap_gpa(unsigned s)
{
	return s < rmp_hv_swaps() ? rmp.swap_gpa[s] : 0;
}

static bool is_valid(uint16_t v)
{
	return (v & (RMPE_ASSIGNED | RMPE_VALIDATED)) == (RMPE_ASSIGNED | RMPE_VALIDATED);
}

unsigned rmp_validated_frames(gpa_t gpa)
{
	if (!in_model(gpa, 1))
		return 0;
	unsigned n = rmp_hv_swaps(), count = is_valid(*home(gpa));
	gpa_t pg = ALIGN_DOWN(gpa, PAGE_SIZE);

	for (unsigned s = 0; s < n; s++)
		if (rmp.swap_gpa[s] == pg && is_valid(rmp.spare_e[s]))
			count++;
	return count;
}

/* Common checks of PVALIDATE/RMPADJUST: address, size, 2M/4K entry match. */
static int check_page(gpa_t gpa, unsigned size)
{
	gpa_t bytes;

	if (size == RMP_PG_SIZE_4K)
		bytes = PAGE_SIZE;
	else if (size == RMP_PG_SIZE_2M)
		bytes = PAGE_SIZE_2M;
	else
		return PVALIDATE_FAIL_INPUT;
	if (!IS_ALIGNED(gpa, bytes) || !in_model(gpa, bytes))
		return PVALIDATE_FAIL_INPUT;
	uint16_t v = *entry(gpa);
	if (!(v & RMPE_ASSIGNED))
		return PVALIDATE_FAIL_INPUT; /* shared or never assigned */
	if (size == RMP_PG_SIZE_2M && !(v & RMPE_SIZE_2M))
		return PVALIDATE_FAIL_SIZEMISMATCH;
	/* A spare frame is one 4K entry (never 2M, so the test above already
	 * stops it); said again so that no 2M loop can index past it. */
	if (size == RMP_PG_SIZE_2M && rmp_hv_spare_of(gpa) >= 0)
		return PVALIDATE_FAIL_SIZEMISMATCH;
	/*
	 * A 4K PVALIDATE/RMPADJUST of a page in a 2M RMP entry is not an
	 * instruction error: the CPU takes an #NPF with PFERR_GUEST_SIZEM
	 * (APM vol. 2 §15.36.10) and KVM PSMASHes the entry and re-enters, so
	 * the guest's retry succeeds (arch/x86/kvm/svm/sev.c
	 * sev_handle_rmp_fault: "RMPADJUST/PVALIDATE can trigger an #NPF with
	 * PFERR_GUEST_SIZEM bit set if the guest issues them with a smaller
	 * granularity than what is indicated by the page-size bit in the 2MB
	 * RMP entry"). Counted: rmp_hv_get_stats().psmash_sizem.
	 */
	if (size == RMP_PG_SIZE_4K && (v & RMPE_SIZE_2M) && smash(gpa))
		__atomic_add_fetch(&rmp.psmash_sizem, 1, __ATOMIC_RELAXED);
	return 0;
}

static int pvalidate_locked(gpa_t gpa, unsigned size, bool validate, bool *unchanged)
{
	*unchanged = false;
	int rc = check_page(gpa, size);
	if (rc)
		return rc;
	uint16_t *e = entry(gpa);
	unsigned n = size == RMP_PG_SIZE_2M ? PAGES_PER_2M : 1;
	if (!!(e[0] & RMPE_VALIDATED) == validate) {
		*unchanged = true; /* CF=1: validated bit already in that state */
		return 0;
	}
	for (unsigned i = 0; i < n; i++) {
		if (validate)
			e[i] |= RMPE_VALIDATED;
		else
			e[i] &= (uint16_t)~RMPE_VALIDATED;
	}
	return 0;
}

bool (*rmp_vmsa_in_use)(gpa_t gpa);

static int adjust_locked(unsigned caller, gpa_t gpa, unsigned size, uint64_t attrs)
{
	unsigned vmpl = attrs & RMPADJUST_VMPL_MASK;
	uint64_t known = RMPADJUST_VMPL_MASK | RMPADJUST_RWX | RMPADJUST_VMSA;

	if (attrs & ~known)
		return RMPADJUST_FAIL_INPUT;
	/* The target VMPL must be numerically above the issuer's and exist. */
	if (vmpl <= caller || vmpl > 3)
		return RMPADJUST_FAIL_PERMISSION;
	/* Below VMPL0 the VMSA bit is ignored (Microsoft's __rmpadjust documents
	 * "ignored when the current VMPL != 0"). */
	if (caller)
		attrs &= ~RMPADJUST_VMSA;
	/*
	 * VMSA rule: a VMSA is one 4 KiB page (reference §5.3), so the VMSA bit
	 * is refused on a 2M RMPADJUST. The hardware's exact code for this is
	 * not in the reference; the model uses FAIL_PERMISSION.
	 */
	if ((attrs & RMPADJUST_VMSA) && size != RMP_PG_SIZE_4K)
		return RMPADJUST_FAIL_PERMISSION;
	int rc = check_page(gpa, size);
	if (rc)
		return rc; /* FAIL_INPUT (1) and FAIL_SIZEMISMATCH (6) match PVALIDATE's */
	uint16_t *e = entry(gpa);
	if (!(e[0] & RMPE_VALIDATED))
		return RMPADJUST_FAIL_PERMISSION;
	if ((e[0] & RMPE_VMSA) && rmp_vmsa_in_use && rmp_vmsa_in_use(gpa))
		return RMPADJUST_FAIL_INUSE;
	/* A VMPL grants only permissions it holds itself (APM vol. 3 RMPADJUST). */
	unsigned want = (unsigned)(attrs >> 8) & RMPE_PERM_MASK;
	if (caller && (want & ~((e[0] >> RMPE_PERM_SHIFT(caller)) & RMPE_PERM_MASK)))
		return RMPADJUST_FAIL_PERMISSION;
	unsigned n = size == RMP_PG_SIZE_2M ? PAGES_PER_2M : 1;
	uint16_t perm = (uint16_t)(((attrs >> 8) & RMPE_PERM_MASK) << RMPE_PERM_SHIFT(vmpl));
	uint16_t clear = (uint16_t)(RMPE_PERM_MASK << RMPE_PERM_SHIFT(vmpl)) | RMPE_VMSA;
	for (unsigned i = 0; i < n; i++) {
		e[i] = (uint16_t)((e[i] & ~clear) | perm);
		if (attrs & RMPADJUST_VMSA)
			e[i] |= RMPE_VMSA;
	}
	return 0;
}

/* check_page() validates gpa before any entry is touched; lock only a real block. */
int rmp_pvalidate(gpa_t gpa, unsigned size, bool validate, bool *unchanged)
{
	*unchanged = false;
	if (!in_model(gpa, 1))
		return PVALIDATE_FAIL_INPUT;
	block_lock(gpa);
	int rc = pvalidate_locked(gpa, size, validate, unchanged);
	block_unlock(gpa);
	return rc;
}

int rmp_adjust_from(unsigned caller_vmpl, gpa_t gpa, unsigned size, uint64_t attrs)
{
	if (caller_vmpl > 3)
		return RMPADJUST_FAIL_PERMISSION;
	if (!in_model(gpa, 1))
		return RMPADJUST_FAIL_INPUT;
	block_lock(gpa);
	int rc = adjust_locked(caller_vmpl, gpa, size, attrs);
	block_unlock(gpa);
	return rc;
}

int rmp_adjust(gpa_t gpa, unsigned size, uint64_t attrs)
{
	return rmp_adjust_from(0, gpa, size, attrs);
}

int rmp_query(gpa_t gpa, struct rmp_entry_info *out)
{
	if (!in_model(gpa, 1))
		return -1;
	uint16_t v = *entry(gpa);
	out->assigned = v & RMPE_ASSIGNED;
	out->validated = v & RMPE_VALIDATED;
	out->size2m = v & RMPE_SIZE_2M;
	out->vmsa = v & RMPE_VMSA;
	out->perms[0] = out->validated ? RMP_PERM_ALL : 0;
	for (unsigned vmpl = 1; vmpl < 4; vmpl++)
		out->perms[vmpl] = (v >> RMPE_PERM_SHIFT(vmpl)) & RMPE_PERM_MASK;
	return 0;
}

unsigned rmp_vmpl_perms(gpa_t gpa, unsigned vmpl)
{
	if (!in_model(gpa, 1) || vmpl > 3)
		return 0;
	uint16_t v = *entry(gpa);
	if ((v & (RMPE_ASSIGNED | RMPE_VALIDATED)) != (RMPE_ASSIGNED | RMPE_VALIDATED))
		return 0;
	if (vmpl == 0)
		return RMP_PERM_ALL;
	return (v >> RMPE_PERM_SHIFT(vmpl)) & RMPE_PERM_MASK;
}

uint16_t rmp_raw(gpa_t gpa)
{
	return in_model(gpa, 1) ? *entry(gpa) : 0;
}
