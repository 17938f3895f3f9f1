/*
 * The SNP machine's IGVM loader (tests/snpm/igvm_load.c), checked against
 * things it did not write:
 *  - build/csvsm.igvm (when built): its digest equals what
 *    `build/csvsm-measure --igvm` prints (attest/igvm.c, written separately),
 *    and the callbacks see what docs/igvm.md §6 says the image holds;
 *  - one-byte corruptions of that file: refused or measured differently;
 *  - small files built here, whose digest is chained here from the PAGE_INFO
 *    layout (SNP ABI 56860 §8.17) in QEMU's issue order, and malformed ones;
 *  - the vector of tests/tools/snp_zero_vector.py (a page without data is a
 *    NORMAL page of zeros for QEMU + KVM, the PSP ZERO type with native_zero).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/hex.h"
#include "tests/fake/files.h"
/* The loader is compiled into this test (it is not part of the host library). */
#include "../snpm/igvm_load.c"

#define IMAGE	    "build/csvsm.igvm"
#define MEASURE	    "build/csvsm-measure"
#define ZERO_VECTOR "tests/tools/snp_zero_vector.py"

/* ---- little helpers of the test's own ---- */

static void w16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void w32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void w64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t r32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Bit-at-a-time CRC-32 (IEEE), separate from the loader's table version. */
static uint32_t ref_crc32(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	uint32_t crc = 0xFFFFFFFFu;

	for (size_t i = 0; i < alen + blen; i++) {
		crc ^= i < alen ? a[i] : b[i - alen];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1)));
	}
	return ~crc;
}

static void ref_sha384(const uint8_t *d, size_t n, uint8_t out[48])
{
	uint8_t full[64];

#if defined(MBEDTLS_VERSION_NUMBER) && MBEDTLS_VERSION_NUMBER >= 0x03000000
	assert_int_equal(mbedtls_sha512(d, n, full, 1), 0);
#else
	assert_int_equal(mbedtls_sha512_ret(d, n, full, 1), 0);
#endif
	memcpy(out, full, 48);
}

/* LD = SHA-384(PAGE_INFO): ABI 56860 §8.17, 0x70 bytes. */
static void ref_extend(uint8_t ld[48], uint64_t gpa, uint8_t type, const uint8_t *page)
{
	uint8_t pi[0x70] = {0};

	memcpy(pi, ld, 48);
	if (page)
		ref_sha384(page, 4096, pi + 0x30);
	w16(pi + 0x60, 0x70);
	pi[0x62] = type;
	w64(pi + 0x68, gpa);
	ref_sha384(pi, sizeof(pi), ld);
}

static void reseal(uint8_t *f)
{
	uint32_t off = r32(f + 8), size = r32(f + 12);
	uint8_t fixed[24];

	memcpy(fixed, f, 24);
	memset(fixed + 20, 0, 4);
	w32(f + 20, ref_crc32(fixed, 24, f + off, size));
}

/* ---- a small IGVM writer: headers, then 4 KiB data blobs ---- */

#define FB_MAX_HDR   4096
#define FB_MAX_BLOBS 8

struct fb {
	uint8_t hdr[FB_MAX_HDR];
	size_t hlen;
	const uint8_t *blob[FB_MAX_BLOBS];
	size_t fixup[FB_MAX_BLOBS]; /* hdr offset of the file_offset field */
	unsigned nblobs;
};

static void fb_add(struct fb *b, uint32_t type, const uint8_t *body, uint32_t len)
{
	uint32_t padded = (len + 7) & ~7u;

	assert_true(b->hlen + 8 + padded <= FB_MAX_HDR);
	w32(b->hdr + b->hlen, type);
	w32(b->hdr + b->hlen + 4, len);
	memset(b->hdr + b->hlen + 8, 0, padded);
	memcpy(b->hdr + b->hlen + 8, body, len);
	b->hlen += 8 + padded;
}

static void fb_blob(struct fb *b, size_t field_in_body, uint32_t body_len, const uint8_t *data)
{
	size_t padded = (body_len + 7) & ~7u;

	assert_true(b->nblobs < FB_MAX_BLOBS);
	b->blob[b->nblobs] = data;
	b->fixup[b->nblobs] = b->hlen - padded + field_in_body;
	b->nblobs++;
}

static void fb_platform(struct fb *b, uint32_t mask, uint8_t type)
{
	uint8_t body[16] = {0};

	w32(body, mask);
	body[4] = 2;
	body[5] = type;
	w16(body + 6, 1);
	fb_add(b, 0x001, body, 16);
}

static void fb_policy(struct fb *b, uint64_t policy, uint32_t mask)
{
	uint8_t body[16] = {0};

	w64(body, policy);
	w32(body + 8, mask);
	fb_add(b, 0x101, body, 16);
}

static void fb_page(struct fb *b, uint64_t gpa, uint32_t flags, uint16_t type, const uint8_t *data)
{
	uint8_t body[24] = {0};

	w64(body, gpa);
	w32(body + 8, 1);
	w32(body + 16, flags);
	w16(body + 20, type);
	fb_add(b, 0x302, body, 24);
	if (data)
		fb_blob(b, 12, 24, data);
}

static void fb_area(struct fb *b, uint32_t index, uint64_t bytes)
{
	uint8_t body[16] = {0};

	w64(body, bytes);
	w32(body + 8, index);
	fb_add(b, 0x301, body, 16);
}

static void fb_param(struct fb *b, uint32_t type, uint32_t index, uint32_t off)
{
	uint8_t body[8];

	w32(body, index);
	w32(body + 4, off);
	fb_add(b, type, body, 8);
}

static void fb_insert(struct fb *b, uint64_t gpa, uint32_t index)
{
	uint8_t body[16] = {0};

	w64(body, gpa);
	w32(body + 8, 1);
	w32(body + 12, index);
	fb_add(b, 0x303, body, 16);
}

static void fb_required(struct fb *b, uint64_t gpa, uint32_t bytes)
{
	uint8_t body[24] = {0};

	w64(body, gpa);
	w32(body + 8, 1);
	w32(body + 12, bytes);
	fb_add(b, 0x305, body, 24);
}

static void fb_vp(struct fb *b, uint16_t vp, const uint8_t *vmsa)
{
	uint8_t body[20] = {0};

	w64(body, 0xFFFFFFFFF000ULL);
	w32(body + 8, 1);
	w16(body + 16, vp);
	fb_add(b, 0x304, body, 20);
	fb_blob(b, 12, 20, vmsa);
}

/* The file, malloc'd; extra bytes of zeros after the blobs if asked. */
static uint8_t *fb_finish(struct fb *b, size_t extra, size_t *len)
{
	size_t data = 24 + b->hlen;
	uint8_t *f;

	*len = data + (size_t)b->nblobs * 4096 + extra;
	f = calloc(1, *len);
	assert_non_null(f);
	for (unsigned i = 0; i < b->nblobs; i++) {
		w32(b->hdr + b->fixup[i], (uint32_t)(data + i * 4096u));
		memcpy(f + data + i * 4096u, b->blob[i], 4096);
	}
	w32(f, 0x4D564749u);
	w32(f + 4, 1);
	w32(f + 8, 24);
	w32(f + 12, (uint32_t)b->hlen);
	w32(f + 16, (uint32_t)*len);
	memcpy(f + 24, b->hdr, b->hlen);
	reseal(f);
	return f;
}

static void make_vmsa(uint8_t *v, uint64_t rip)
{
	memset(v, 0, 4096);
	w64(v + 0x0D0, 0x1000);	    /* EFER.SVME */
	w64(v + 0x148, 0x40);	    /* CR4.MCE */
	w64(v + 0x158, 0x31);	    /* CR0 PE|ET|NE */
	w64(v + 0x160, 0x400);	    /* DR7 */
	w64(v + 0x168, 0xFFFF0FF0); /* DR6 */
	w64(v + 0x170, 2);	    /* RFLAGS */
	w64(v + 0x178, rip);
	w64(v + 0x3B0, 1); /* SNPActive */
}

/* ---- callback recorder ---- */

struct rec {
	unsigned kinds[5], vmsa, fill[4], required;
	unsigned unmeasured_with_data;
	bool vmsa_done, page_after_vmsa, vp_count_inserted;
	const uint8_t *vp_count_area;
	uint32_t vp_count_off;
	unsigned vcpus;
	uint64_t *gpa;
	enum snpm_page_kind *kind;
	size_t n, cap;
	int fail_at; /* page number whose callback fails, or -1 */
};

static int rec_page(void *ctx, uint64_t gpa, enum snpm_page_kind kind, const uint8_t *data)
{
	struct rec *r = ctx;

	if (r->fail_at >= 0 && (size_t)r->fail_at == r->n)
		return 7;
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 1024;
		r->gpa = realloc(r->gpa, r->cap * sizeof(*r->gpa));
		r->kind = realloc(r->kind, r->cap * sizeof(*r->kind));
		assert_non_null(r->gpa);
		assert_non_null(r->kind);
	}
	r->gpa[r->n] = gpa;
	r->kind[r->n] = kind;
	r->n++;
	assert_true(kind <= SNPM_PAGE_CPUID);
	r->kinds[kind]++;
	if (r->vmsa_done)
		r->page_after_vmsa = true;
	if (kind == SNPM_PAGE_NORMAL)
		assert_non_null(data);
	if (kind == SNPM_PAGE_ZERO)
		assert_null(data);
	if (kind == SNPM_PAGE_UNMEASURED && data) {
		r->unmeasured_with_data++;
		if (data == r->vp_count_area) {
			assert_int_equal(r32(data + r->vp_count_off), r->vcpus);
			r->vp_count_inserted = true;
		}
	}
	return 0;
}

static int rec_required(void *ctx, uint64_t gpa, uint64_t bytes)
{
	struct rec *r = ctx;

	assert_int_equal(gpa % 4096, 0);
	assert_true(bytes > 0);
	r->required++;
	return 0;
}

static int rec_fill(void *ctx, uint32_t type, uint32_t off, uint8_t *area, uint64_t bytes)
{
	struct rec *r = ctx;

	bool whole = type == SNPM_IGVM_MEMORY_MAP || type == SNPM_IGVM_MADT;

	assert_non_null(area);
	assert_int_equal(bytes % 4096, 0);
	/* The loader zeroes each area when it is declared. */
	for (uint64_t i = whole ? 0 : off; i < (whole ? bytes : off + 4u); i++)
		assert_int_equal(area[i], 0);
	switch (type) {
	case SNPM_IGVM_VP_COUNT_PARAMETER:
		assert_true(off + 4 <= bytes);
		w32(area + off, r->vcpus);
		r->vp_count_area = area;
		r->vp_count_off = off;
		r->fill[0]++;
		break;
	case SNPM_IGVM_MEMORY_MAP:
		assert_int_equal(off, 0);
		w64(area, 0); /* one entry: 2 GiB of RAM from 0 */
		w64(area + 8, 0x80000);
		r->fill[1]++;
		break;
	case SNPM_IGVM_MADT:
		assert_int_equal(off, 0);
		memcpy(area, "APIC", 4);
		r->fill[2]++;
		break;
	case SNPM_IGVM_ENVIRONMENT_INFO_PARAMETER:
		area[off] |= 1;
		r->fill[3]++;
		break;
	default:
		fail_msg("fill_param type %#x", type);
	}
	return 0;
}

static int rec_vmsa(void *ctx, uint32_t vp, const uint8_t *page)
{
	struct rec *r = ctx;

	assert_int_equal(vp, r->vmsa);
	assert_non_null(page);
	r->vmsa++;
	r->vmsa_done = true;
	return 0;
}

static uint8_t scratch[1 << 20];

static struct snpm_igvm_ops rec_ops(struct rec *r, unsigned vcpus)
{
	memset(r, 0, sizeof(*r));
	r->vcpus = vcpus;
	r->fail_at = -1;
	return (struct snpm_igvm_ops){.ctx = r,
				      .page = rec_page,
				      .required = rec_required,
				      .fill_param = rec_fill,
				      .vmsa = rec_vmsa,
				      .scratch = scratch,
				      .scratch_bytes = sizeof(scratch)};
}

static void rec_free(struct rec *r)
{
	free(r->gpa);
	free(r->kind);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Digest only: no callbacks, no scratch. */
static int digest_of(const uint8_t *f, size_t len, uint8_t d[48], char *why, size_t why_len)
{
	static const struct snpm_igvm_ops none;
	uint64_t policy;

	return snpm_igvm_load(f, len, 1, &none, d, &policy, why, why_len);
}

/* ---- (a) build/csvsm.igvm against csvsm-measure ---- */

static uint8_t *image;
static size_t image_len;

/* The hex digest `csvsm-measure --igvm IMAGE` prints (docs/measure.md: alone on stdout). */
static bool measure_digest(uint8_t out[48])
{
	char line[256];
	FILE *p = popen(MEASURE " --igvm " IMAGE " 2>&1", "r");
	bool ok;

	if (!p)
		return false;
	ok = fgets(line, sizeof(line), p) != NULL;
	if (pclose(p) != 0 || !ok) {
		print_error("csvsm-measure failed: %s\n", ok ? line : "(no output)");
		return false;
	}
	line[strcspn(line, "\r\n")] = '\0';
	if (strlen(line) != 96) {
		print_error("unexpected csvsm-measure output: %s\n", line);
		return false;
	}
	for (int i = 0; i < 48; i++) {
		int hi = hex_digit(line[2 * i]), lo = hex_digit(line[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

static void need_image(void)
{
	if (!image) {
		print_message("skipping: %s not built (make build/csvsm.igvm; needs 'make deps')\n",
			      IMAGE);
		skip();
	}
}

static void test_image_matches_csvsm_measure(void **state)
{
	uint8_t mine[48], theirs[48];
	uint64_t policy = 0;
	char why[256];
	struct rec r;
	struct snpm_igvm_ops ops = rec_ops(&r, 1);
	int rc;

	need_image();
	rc = snpm_igvm_load(image, image_len, 1, &ops, mine, &policy, why, sizeof(why));
	if (rc)
		fail_msg("loader refused %s: %d %s", IMAGE, rc, why);
	if (access(MEASURE, X_OK) != 0) {
		print_message("skipping: %s not built\n", MEASURE);
		rec_free(&r);
		skip();
	}
	assert_true(measure_digest(theirs));
	if (memcmp(mine, theirs, 48)) {
		char a[97], b[97];

		for (int i = 0; i < 48; i++) {
			sprintf(a + 2 * i, "%02x", mine[i]);
			sprintf(b + 2 * i, "%02x", theirs[i]);
		}
		fail_msg("digest mismatch\n  snpm loader  %s\n  csvsm-measure %s", a, b);
	}
	print_message("digest agrees with csvsm-measure (%zu pages issued)\n", r.n);

	/* What docs/igvm.md §6 says the image holds. */
	assert_int_equal(policy, 0x30000);
	assert_int_equal(r.vmsa, 1);
	assert_false(r.page_after_vmsa);
	assert_true(r.kinds[SNPM_PAGE_NORMAL] > 0);
	assert_true(r.kinds[SNPM_PAGE_SECRETS] >= 1);
	assert_true(r.kinds[SNPM_PAGE_CPUID] >= 1);
	assert_int_equal(r.fill[0], 1); /* VP count */
	assert_int_equal(r.fill[1], 1); /* memory map */
	assert_true(r.unmeasured_with_data >= 2);
	assert_true(r.vp_count_inserted);
	assert_true(r.required >= 1);

	/* The loader leaves overlaps to the caller (the PSP's RMP check): none here. */
	qsort(r.gpa, r.n, sizeof(*r.gpa), cmp_u64);
	for (size_t i = 1; i < r.n; i++)
		if (r.gpa[i] == r.gpa[i - 1])
			fail_msg("GPA %#llx issued twice", (unsigned long long)r.gpa[i]);
	rec_free(&r);

	/* The digest does not depend on the callbacks. */
	assert_int_equal(digest_of(image, image_len, theirs, NULL, 0), 0);
	assert_memory_equal(mine, theirs, 48);
}

/* ---- (b) one-byte corruptions of the image ---- */

static unsigned flips_tried;

static void flip_check(uint8_t *f, size_t len, size_t at, uint8_t x, const uint8_t ref[48])
{
	uint8_t d[48];
	char why[256];
	int rc;

	f[at] ^= x;
	rc = digest_of(f, len, d, why, sizeof(why));
	f[at] ^= x;
	flips_tried++;
	if (rc == 0 && memcmp(d, ref, 48) == 0)
		fail_msg("byte %#zx ^ %#x: accepted with the same digest", at, x);
	if (rc != 0 && why[0] == '\0')
		fail_msg("byte %#zx ^ %#x: error %d without a reason", at, x, rc);
}

static void test_image_corruptions(void **state)
{
	uint8_t ref[48];
	uint8_t *f;
	size_t vh_end, head, i;
	unsigned data_samples = 48;
	clock_t t0 = clock();

	need_image();
	assert_int_equal(digest_of(image, image_len, ref, NULL, 0), 0);
	f = malloc(image_len);
	assert_non_null(f);
	memcpy(f, image, image_len);
	vh_end = r32(f + 8) + (size_t)r32(f + 12);

	/* Every byte of the first 4 KiB: one bit, and all eight. */
	head = image_len < 4096 ? image_len : 4096;
	for (i = 0; i < head; i++) {
		flip_check(f, image_len, i, (uint8_t)(1u << (i % 8)), ref);
		flip_check(f, image_len, i, 0xFF, ref);
	}
	/* The rest of the headers, every 7th byte. */
	for (i = head; i < vh_end; i += 7)
		flip_check(f, image_len, i, (uint8_t)(1u << (i % 8)), ref);
	/* File data (each a full load): spread samples, both ends, the VMSA. */
	for (unsigned k = 0; k < data_samples; k++)
		flip_check(f, image_len, vh_end + (image_len - vh_end - 1) * k / (data_samples - 1),
			   0x10, ref);
	flip_check(f, image_len, image_len - 4096 + 0x3B0, 0x01, ref); /* SNPActive */
	flip_check(f, image_len, image_len - 4096 + 0x178, 0x01, ref); /* RIP */
	flip_check(f, image_len, image_len - 4096 + 0x500, 0x01, ref); /* not copied by QEMU */
	/* Truncations. */
	for (size_t cut = 1; cut <= 4096; cut *= 4) {
		uint8_t d[48];
		char why[128];

		assert_true(digest_of(f, image_len - cut, d, why, sizeof(why)) < 0);
		flips_tried++;
	}
	print_message("%u corrupted variants of %s refused or measured differently (%.1f s)\n",
		      flips_tried, IMAGE, (double)(clock() - t0) / CLOCKS_PER_SEC);
	free(f);
}

/* ---- (c) small files ---- */

static uint8_t page_a[4096], vmsa0[4096];

/*
 * #0 platform, #1 policy, #2 A (NORMAL), #3 B (zero), #4 C (SECRETS),
 * #5 D (CPUID), #6 area 0, #7 VP count, #8 insert, #9 E (2 MiB zero),
 * #10 required memory, #11 VP context.
 */
static uint8_t *small_file(size_t extra, size_t *len)
{
	struct fb b = {0};

	for (int i = 0; i < 4096; i++)
		page_a[i] = (uint8_t)(i * 7 + 1);
	make_vmsa(vmsa0, 0x100000);
	fb_platform(&b, 1, 2);
	fb_policy(&b, 0x30000, 1);
	fb_page(&b, 0x100000, 0, 0, page_a);
	fb_page(&b, 0x101000, 0, 0, NULL);
	fb_page(&b, 0x102000, 0, 1, NULL);
	fb_page(&b, 0x103000, 0, 2, NULL);
	fb_area(&b, 0, 4096);
	fb_param(&b, 0x307, 0, 0);
	fb_insert(&b, 0x200000, 0);
	fb_page(&b, 0x400000, 1, 0, NULL);
	fb_required(&b, 0x800000, 0x4000);
	fb_vp(&b, 0, vmsa0);
	return fb_finish(&b, extra, len);
}

static void test_crc32_check_value(void **state)
{
	const uint8_t s[] = "123456789";

	assert_int_equal(snpm_igvm_crc32(0, s, 9), 0xCBF43926u);
	assert_int_equal(ref_crc32(s, 9, NULL, 0), 0xCBF43926u);
	assert_int_equal(snpm_igvm_crc32(snpm_igvm_crc32(0, s, 4), s + 4, 5), 0xCBF43926u);
}

/*
 * QEMU's order: the insert goes out before the pending run D; E as 512 pages.
 * B and E have no data: QEMU + KVM measure them as NORMAL pages of zeros
 * (sev.c cgs_set_guest_state: CGS_PAGE_TYPE_ZERO -> launch_update_data);
 * with native_zero as the PSP ZERO type (3).
 */
static void test_small_file_order_and_digest(void **state)
{
	static const uint8_t zero_page[4096];
	uint8_t want[48] = {0}, want_native[48] = {0}, got[48];
	uint64_t policy = 0;
	char why[256];
	size_t len;
	uint8_t *f = small_file(0, &len);
	struct rec r;
	struct snpm_igvm_ops ops = rec_ops(&r, 1);
	static const struct {
		uint64_t gpa;
		enum snpm_page_kind kind;
	} order[] = {
	    {0x100000, SNPM_PAGE_NORMAL},     {0x101000, SNPM_PAGE_ZERO},
	    {0x102000, SNPM_PAGE_SECRETS},    {0x103000, SNPM_PAGE_CPUID}, /* D pending... */
	    {0x200000, SNPM_PAGE_UNMEASURED}, /* ...when the insert comes */
	};

	for (int native = 0; native <= 1; native++) {
		uint8_t *ld = native ? want_native : want;
		uint8_t zt = native ? 3 : 1;
		const uint8_t *zp = native ? NULL : zero_page;

		ref_extend(ld, 0x100000, 1, page_a);
		ref_extend(ld, 0x101000, zt, zp);
		ref_extend(ld, 0x102000, 5, NULL);
		ref_extend(ld, 0x200000, 4, NULL);
		ref_extend(ld, 0x103000, 6, NULL);
		for (int i = 0; i < 512; i++)
			ref_extend(ld, 0x400000 + 4096ull * i, zt, zp);
		ref_extend(ld, 0xFFFFFFFFF000ULL, 2, vmsa0);
	}
	assert_memory_not_equal(want, want_native, 48);

	assert_int_equal(snpm_igvm_load(f, len, 1, &ops, got, &policy, why, sizeof(why)), 0);
	assert_memory_equal(got, want, 48);
	assert_int_equal(policy, 0x30000);
	assert_int_equal(r.n, 5 + 512);
	assert_int_equal(r.gpa[0], order[0].gpa);
	assert_int_equal(r.kind[0], order[0].kind);
	assert_int_equal(r.gpa[1], order[1].gpa);
	assert_int_equal(r.kind[1], order[1].kind);
	assert_int_equal(r.gpa[2], order[2].gpa);
	assert_int_equal(r.kind[2], order[2].kind);
	assert_int_equal(r.gpa[3], order[4].gpa); /* the insert */
	assert_int_equal(r.kind[3], order[4].kind);
	assert_int_equal(r.gpa[4], order[3].gpa);
	assert_int_equal(r.kind[4], order[3].kind);
	for (int i = 0; i < 512; i++) {
		assert_int_equal(r.gpa[5 + i], 0x400000 + 4096ull * i);
		assert_int_equal(r.kind[5 + i], SNPM_PAGE_ZERO);
	}
	assert_true(r.vp_count_inserted);
	assert_int_equal(r.required, 1);
	assert_int_equal(r.vmsa, 1);
	assert_false(r.page_after_vmsa);
	rec_free(&r);

	/* The same pages, measured as a VMM that issues SNP_PAGE_TYPE_ZERO does. */
	ops = rec_ops(&r, 1);
	ops.native_zero = true;
	assert_int_equal(snpm_igvm_load(f, len, 1, &ops, got, &policy, why, sizeof(why)), 0);
	assert_memory_equal(got, want_native, 48);
	assert_int_equal(r.kinds[SNPM_PAGE_ZERO], 1 + 512);
	rec_free(&r);

	/* A callback's error stops the load and comes back unchanged. */
	ops = rec_ops(&r, 1);
	r.fail_at = 3;
	assert_int_equal(snpm_igvm_load(f, len, 1, &ops, got, &policy, why, sizeof(why)), 7);
	assert_non_null(strstr(why, "page callback"));
	rec_free(&r);

	/* Scratch too small for the parameter area. */
	ops = rec_ops(&r, 1);
	ops.scratch_bytes = 4095;
	assert_int_equal(snpm_igvm_load(f, len, 1, &ops, got, &policy, why, sizeof(why)),
			 SNPM_IGVM_E_LIMIT);
	rec_free(&r);
	free(f);
}

/* Parse "normal HEX" / "zero HEX" lines of snp_zero_vector.py into d. */
static bool vector_line(const char *line, const char *key, uint8_t d[48])
{
	size_t k = strlen(key);

	if (strncmp(line, key, k) || line[k] != ' ' || strlen(line + k + 1) < 96)
		return false;
	for (int i = 0; i < 48; i++) {
		int hi = hex_digit(line[k + 1 + 2 * i]), lo = hex_digit(line[k + 2 + 2 * i]);

		if (hi < 0 || lo < 0)
			return false;
		d[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/*
 * tests/tools/snp_zero_vector.py writes a tiny IGVM file (a page without
 * data, a page with data, the BSP VMSA) and prints its digests, chained from
 * the SNP ABI's PAGE_INFO layout and QEMU's rule alone; the loader must give
 * the "normal" one by default and the "zero" one with native_zero.
 */
static void test_zero_page_vector(void **state)
{
	static const struct snpm_igvm_ops qemu, native = {.native_zero = true};
	char path[] = "/tmp/snpm_zero_vector_XXXXXX", cmd[256], line[256];
	uint8_t want_normal[48], want_zero[48], got[48], *f;
	bool have_normal = false, have_zero = false;
	uint64_t policy;
	char why[256];
	size_t len;
	FILE *p;
	int fd;

	if (access(ZERO_VECTOR, R_OK) != 0 || system("python3 -c '' 2>/dev/null") != 0) {
		print_message("skipping: needs python3 and %s\n", ZERO_VECTOR);
		skip();
	}
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "python3 " ZERO_VECTOR " %s", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		have_normal |= vector_line(line, "normal", want_normal);
		have_zero |= vector_line(line, "zero", want_zero);
	}
	assert_int_equal(pclose(p), 0);
	assert_true(have_normal && have_zero);
	f = host_load_file(path, &len);
	unlink(path);
	assert_non_null(f);

	if (snpm_igvm_load(f, len, 1, &qemu, got, &policy, why, sizeof(why)))
		fail_msg("loader refused the vector file: %s", why);
	assert_memory_equal(got, want_normal, 48);
	assert_int_equal(snpm_igvm_load(f, len, 1, &native, got, &policy, why, sizeof(why)), 0);
	assert_memory_equal(got, want_zero, 48);
	assert_memory_not_equal(want_normal, want_zero, 48);
	free(f);
}

static void expect_error(uint8_t *f, size_t len, unsigned vcpus, int err, const char *needle)
{
	static const struct snpm_igvm_ops none;
	uint8_t d[48];
	uint64_t policy;
	char why[256];
	int rc = snpm_igvm_load(f, len, vcpus, &none, d, &policy, why, sizeof(why));

	if (rc != err)
		fail_msg("expected %d, got %d (%s)", err, rc, why);
	if (needle && !strstr(why, needle))
		fail_msg("reason \"%s\" lacks \"%s\"", why, needle);
}

static void test_small_file_malformed(void **state)
{
	size_t len, hdr_at;
	uint8_t *f = small_file(0, &len);
	uint8_t *g;
	uint8_t d[48];

	assert_int_equal(digest_of(f, len, d, NULL, 0), 0);

	/* Bad magic. */
	f[0] ^= 1;
	expect_error(f, len, 1, SNPM_IGVM_E_MAGIC, "magic");
	f[0] ^= 1;
	/* Truncated: shorter than the fixed header, shorter than it says. */
	expect_error(f, 10, 1, SNPM_IGVM_E_TRUNCATED, "fixed header");
	expect_error(f, len - 1, 1, SNPM_IGVM_E_TRUNCATED, "total_file_size");
	/* Bad checksum. */
	f[20] ^= 0x80;
	expect_error(f, len, 1, SNPM_IGVM_E_CHECKSUM, "CRC-32");
	f[20] ^= 0x80;
	/* A header byte changed without resealing. */
	f[24 + 8] ^= 4;
	expect_error(f, len, 1, SNPM_IGVM_E_CHECKSUM, NULL);
	f[24 + 8] ^= 4;
	/* vcpus: none, or more than the file has VP contexts for. */
	expect_error(f, len, 0, SNPM_IGVM_E_ARG, NULL);
	expect_error(f, len, 2, SNPM_IGVM_E_VCPUS, "vCPU: 0x1");
	free(f);

	/* The last header (VP context, 8 + 24 bytes) runs past the end: resealed. */
	f = small_file(0, &len);
	hdr_at = 24 + r32(f + 12) - 32;
	assert_int_equal(r32(f + hdr_at), 0x304);
	w32(f + hdr_at + 4, 0x1000);
	reseal(f);
	expect_error(f, len, 1, SNPM_IGVM_E_LAYOUT, "header #11 (VP_CONTEXT)");
	/* Its length one short of the structure. */
	w32(f + hdr_at + 4, 19);
	reseal(f);
	expect_error(f, len, 1, SNPM_IGVM_E_LAYOUT, "wrong length");
	/* Non-zero padding after its 20-byte body. */
	w32(f + hdr_at + 4, 20);
	f[hdr_at + 8 + 21] = 1;
	reseal(f);
	expect_error(f, len, 1, SNPM_IGVM_E_LAYOUT, "padding");
	free(f);

	/* Page A's data outside the file, and into the headers. */
	f = small_file(0, &len);
	hdr_at = 24 + 2 * 24; /* platform and policy headers are 24 bytes each */
	assert_int_equal(r32(f + hdr_at), 0x302);
	w32(f + hdr_at + 8 + 12, (uint32_t)len - 100);
	reseal(f);
	expect_error(f, len, 1, SNPM_IGVM_E_FILE_DATA, "past the end of the file");
	w32(f + hdr_at + 8 + 12, 0xFFFFF000u);
	reseal(f);
	expect_error(f, len, 1, SNPM_IGVM_E_FILE_DATA, "past the end of the file");
	w32(f + hdr_at + 8 + 12, 24);
	reseal(f);
	expect_error(f, len, 1, SNPM_IGVM_E_FILE_DATA, "into the headers");
	/* A misaligned GPA. */
	w32(f + hdr_at + 8 + 12, r32(f + 8) + r32(f + 12));
	f[hdr_at + 8] = 0x10;
	reseal(f);
	expect_error(f, len, 1, SNPM_IGVM_E_PAGE, "aligned");
	free(f);

	/* File data nobody refers to. */
	f = small_file(4096, &len);
	expect_error(f, len, 1, SNPM_IGVM_E_FILE_DATA, "no header refers to");
	free(f);

	/* Section order: a GUEST_POLICY after the directives. */
	{
		struct fb b = {0};

		make_vmsa(vmsa0, 0);
		fb_platform(&b, 1, 2);
		fb_policy(&b, 0x30000, 1);
		fb_vp(&b, 0, vmsa0);
		fb_policy(&b, 0x30000, 1);
		g = fb_finish(&b, 0, &len);
		expect_error(g, len, 1, SNPM_IGVM_E_LAYOUT, "earlier section");
		free(g);
	}
	/* A header QEMU refuses (COMMAND_LINE), and no policy. */
	{
		struct fb b = {0};

		fb_platform(&b, 1, 2);
		fb_policy(&b, 0x30000, 1);
		fb_area(&b, 0, 4096);
		fb_param(&b, 0x30E, 0, 0);
		fb_vp(&b, 0, vmsa0);
		g = fb_finish(&b, 0, &len);
		expect_error(g, len, 1, SNPM_IGVM_E_UNSUPPORTED, "COMMAND_LINE");
		free(g);
	}
	{
		struct fb b = {0};

		fb_platform(&b, 1, 2);
		fb_vp(&b, 0, vmsa0);
		g = fb_finish(&b, 0, &len);
		expect_error(g, len, 1, SNPM_IGVM_E_POLICY, "GUEST_POLICY");
		free(g);
	}
	/* An insert of an area never declared; a VMSA KVM would change. */
	{
		struct fb b = {0};

		fb_platform(&b, 1, 2);
		fb_policy(&b, 0x30000, 1);
		fb_insert(&b, 0x200000, 5);
		fb_vp(&b, 0, vmsa0);
		g = fb_finish(&b, 0, &len);
		expect_error(g, len, 1, SNPM_IGVM_E_PARAM, "not declared");
		free(g);
	}
	{
		struct fb b = {0};
		static uint8_t bad[4096];

		make_vmsa(bad, 0);
		w64(bad + 0x160, 0); /* DR7 */
		fb_platform(&b, 1, 2);
		fb_policy(&b, 0x30000, 1);
		fb_vp(&b, 0, bad);
		g = fb_finish(&b, 0, &len);
		expect_error(g, len, 1, SNPM_IGVM_E_VMSA, "DR7");
		free(g);
	}
	/* SEV_FEATURES beyond SNPActive | RestrictedInjection | DebugSwap (QEMU
	 * >= 10.1 check_sev_features against what KVM supports): vTOM,
	 * ReflectVC, alternate injection, SecureTSC; RestrictedInjection and
	 * DebugSwap are taken (csvsm's own VMSA asks for both, 0x29). */
	static const unsigned bits[] = {1, 2, 4, 9};
	for (unsigned k = 0; k <= ARRAY_SIZE(bits); k++) {
		struct fb b = {0};
		static uint8_t vmsa[4096];

		make_vmsa(vmsa, 0);
		w64(vmsa + 0x3B0, k < ARRAY_SIZE(bits) ? 1 | (1ULL << bits[k]) : 0x29);
		fb_platform(&b, 1, 2);
		fb_policy(&b, 0x30000, 1);
		fb_vp(&b, 0, vmsa);
		g = fb_finish(&b, 0, &len);
		if (k < ARRAY_SIZE(bits))
			expect_error(g, len, 1, SNPM_IGVM_E_VMSA, "unsupported sev_features");
		else
			assert_int_equal(digest_of(g, len, d, NULL, 0), 0);
		free(g);
	}
	/* A host whose KVM offers no DebugSwap (kvm_amd debug_swap=0, or a CPU
	 * without it: KVM_X86_SEV_VMSA_FEATURES 0x8): csvsm's 0x29 is refused
	 * with QEMU's words, and 0x9 (csvsm-igvm --no-debug-swap) is taken. */
	static const struct {
		uint64_t features;
		int rc;
	} dbgswp[] = {{0x29, SNPM_IGVM_E_VMSA}, {0x9, 0}};
	const struct snpm_igvm_ops no_dbgswp = {.vmsa_features = 0x9};
	for (unsigned i = 0; i < ARRAY_SIZE(dbgswp); i++) {
		struct fb b = {0};
		static uint8_t vmsa[4096];
		uint64_t policy;
		char why[256] = "";

		make_vmsa(vmsa, 0);
		w64(vmsa + 0x3B0, dbgswp[i].features);
		fb_platform(&b, 1, 2);
		fb_policy(&b, 0x30000, 1);
		fb_vp(&b, 0, vmsa);
		g = fb_finish(&b, 0, &len);
		assert_int_equal(
		    snpm_igvm_load(g, len, 1, &no_dbgswp, d, &policy, why, sizeof(why)),
		    dbgswp[i].rc);
		if (dbgswp[i].rc) /* QEMU's %lX */
			assert_non_null(strstr(why, "VMSA contains unsupported sev_features: 29, "
						    "supported features: 9"));
		free(g);
	}
}

static int setup(void **state)
{
	image = host_load_file(IMAGE, &image_len);
	return 0;
}

static int teardown(void **state)
{
	free(image);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crc32_check_value),
	    cmocka_unit_test(test_small_file_order_and_digest),
	    cmocka_unit_test(test_zero_page_vector),
	    cmocka_unit_test(test_small_file_malformed),
	    cmocka_unit_test(test_image_matches_csvsm_measure),
	    cmocka_unit_test(test_image_corruptions),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
