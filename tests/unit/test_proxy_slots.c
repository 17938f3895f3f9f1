/*
 * csvsm-proxy's two-slot state file (proxy/slots.c): slot checks on torn
 * and damaged slots, which slot a write goes to, and on a real file: writes
 * alternate, a torn write (the crash mid-write of tests/vtpm/sealed.sh)
 * leaves the last good state readable and the next write goes over the
 * torn slot, a damaged file says "written but nothing intact", a new file
 * holds nothing.
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

#include "proxy/slots.h"

static uint8_t slot[SLOTS_SLOT_SIZE], data[SLOTS_DATA_MAX], got[SLOTS_DATA_MAX];

static void fill(uint8_t tag, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		data[i] = (uint8_t)(tag + i * 31);
}

static void slot_checks(void **state)
{
	fill(1, 1000);
	slots_header(slot, 5, data, 1000);
	memcpy(slot + SLOTS_HDR, data, 1000);
	struct slot_info si = slots_check(slot, SLOTS_HDR + 1000);
	assert_true(si.intact);
	assert_int_equal(si.generation, 5);
	assert_int_equal(si.len, 1000);
	/* every byte of header and data counts */
	for (size_t i = 0; i < SLOTS_HDR + 1000; i++) {
		slot[i] ^= 0x10;
		assert_false(slots_check(slot, SLOTS_HDR + 1000).intact);
		slot[i] ^= 0x10;
	}
	/* shorter than the length it claims */
	assert_false(slots_check(slot, SLOTS_HDR + 999).intact);
	/* zeros (a new file) and generation 0 */
	static uint8_t zero[SLOTS_HDR + 16];
	assert_false(slots_check(zero, sizeof(zero)).intact);
	slots_header(slot, 0, data, 10);
	assert_false(slots_check(slot, SLOTS_HDR + 10).intact);
	/* a length over the maximum */
	slots_header(slot, 1, data, 10);
	slot[0x13] = 0x7F;
	assert_false(slots_check(slot, sizeof(slot)).intact);
}

static void target_never_the_newest(void **state)
{
	struct slots_view v = {.newest = -1};
	uint64_t gen;
	assert_int_equal(slots_target(&v, &gen), 0);
	assert_int_equal(gen, 1);
	v.slot[0] = (struct slot_info){true, 4, 1};
	v.slot[1] = (struct slot_info){true, 3, 1};
	v.newest = 0;
	assert_int_equal(slots_target(&v, &gen), 1);
	assert_int_equal(gen, 5);
	v.slot[1].intact = false; /* torn: written over next */
	assert_int_equal(slots_target(&v, &gen), 1);
	v.newest = 1;
	v.slot[1] = (struct slot_info){true, 9, 1};
	assert_int_equal(slots_target(&v, &gen), 0);
	assert_int_equal(gen, 10);
}

static char path[64];

static int file_setup(void **state)
{
	strcpy(path, "/tmp/test_proxy_slots.XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	unlink(path); /* slots_open creates it at full size */
	return 0;
}

static int file_teardown(void **state)
{
	unlink(path);
	return 0;
}

static void file_cycle_and_torn_write(void **state)
{
	struct slots_view v;
	uint32_t len;
	uint64_t gen;
	int fd = slots_open(path);
	assert_true(fd >= 0);
	assert_int_equal(lseek(fd, 0, SEEK_END), SLOTS_FILE_SIZE);
	assert_int_equal(slots_read(fd, &v, got, sizeof(got), &len), 0);
	assert_int_equal(v.newest, -1);
	assert_false(v.written);

	for (uint8_t k = 1; k <= 3; k++) {
		fill(k, 5000 + k);
		assert_int_equal(slots_write(fd, data, 5000 + k, -1, &gen), 0);
		assert_int_equal(gen, k);
		assert_int_equal(slots_read(fd, &v, got, sizeof(got), &len), 0);
		assert_int_equal(len, 5000 + k);
		assert_memory_equal(got, data, len);
		assert_int_equal(v.newest, (k - 1) % 2); /* slots alternate */
	}
	/* generation 4 torn mid-write: generation 3 is still what a read gives */
	fill(4, 7000);
	assert_int_equal(slots_write(fd, data, 7000, 0, &gen), -2);
	assert_int_equal(slots_read(fd, &v, got, sizeof(got), &len), 0);
	assert_int_equal(v.slot[v.newest].generation, 3);
	assert_false(v.slot[1 - v.newest].intact);
	fill(3, 5003);
	assert_int_equal(len, 5003);
	assert_memory_equal(got, data, len);
	/* the next write goes over the torn slot, never over generation 3 */
	fill(5, 100);
	assert_int_equal(slots_write(fd, data, 100, -1, &gen), 0);
	assert_int_equal(gen, 4);
	assert_int_equal(slots_read(fd, &v, got, sizeof(got), &len), 0);
	assert_true(v.slot[0].intact && v.slot[1].intact);
	assert_int_equal(len, 100);

	/* both slots damaged: written, nothing intact (the proxy answers "damaged") */
	uint8_t junk = 0xEE;
	assert_int_equal(pwrite(fd, &junk, 1, SLOTS_HDR + 3), 1);
	assert_int_equal(pwrite(fd, &junk, 1, SLOTS_SLOT_SIZE + SLOTS_HDR + 3), 1);
	assert_int_equal(slots_read(fd, &v, got, sizeof(got), &len), 0);
	assert_int_equal(v.newest, -1);
	assert_true(v.written);
	/* over the maximum: refused, nothing written */
	assert_int_equal(slots_write(fd, data, SLOTS_DATA_MAX + 1, -1, &gen), -1);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(slot_checks),
	    cmocka_unit_test(target_never_the_newest),
	    cmocka_unit_test_setup_teardown(file_cycle_and_torn_write, file_setup, file_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
