/*
 * libFuzzer target: the extended-request certificate table parser
 * (attest/certtable.c) on arbitrary bytes. Every entry it accepts must lie
 * inside the input and after the entry array. Build: make fuzz-verify.
 */
#include <attest/certtable.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct certtable_entry e[CERTTABLE_MAX_ENTRIES];
	size_t count = 0;
	int err = certtable_parse(data, size, e, CERTTABLE_MAX_ENTRIES, &count);

	(void)certtable_strerror(err);
	if (err != CERTTABLE_OK) {
		if (count != 0)
			__builtin_trap();
		return 0;
	}
	if (count > CERTTABLE_MAX_ENTRIES)
		__builtin_trap();
	size_t entries_end = (count + 1) * CERTTABLE_ENTRY_SIZE;
	volatile uint8_t sink = 0;
	for (size_t i = 0; i < count; i++) {
		if (e[i].length == 0 || e[i].offset < entries_end ||
		    (size_t)e[i].offset + e[i].length > size || e[i].data != data + e[i].offset)
			__builtin_trap();
		sink ^= e[i].data[0];
		sink ^= e[i].data[e[i].length - 1]; /* ASan checks the last byte */
		(void)certtable_find(e, count, e[i].kind);
	}
	(void)sink;
	/* Rebuild from what was parsed and parse again: same entries. */
	static uint8_t out[1 << 16];
	uint8_t guids[CERTTABLE_MAX_ENTRIES][CERTTABLE_GUID_LEN];
	const void *d[CERTTABLE_MAX_ENTRIES];
	uint32_t l[CERTTABLE_MAX_ENTRIES];
	for (size_t i = 0; i < count; i++) {
		for (size_t j = 0; j < CERTTABLE_GUID_LEN; j++)
			guids[i][j] = e[i].guid[j];
		d[i] = e[i].data;
		l[i] = e[i].length;
	}
	size_t n = certtable_build(out, sizeof(out), (const uint8_t(*)[CERTTABLE_GUID_LEN])guids, d,
				   l, count);
	if (n) {
		struct certtable_entry e2[CERTTABLE_MAX_ENTRIES];
		size_t c2;
		if (certtable_parse(out, n, e2, CERTTABLE_MAX_ENTRIES, &c2) != CERTTABLE_OK ||
		    c2 != count)
			__builtin_trap();
	}
	return 0;
}
