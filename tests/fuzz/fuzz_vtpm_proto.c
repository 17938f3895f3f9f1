/*
 * libFuzzer target for the SVSM vTPM protocol decoder (tpm/vtpm_proto.c).
 * Build and run: `make fuzz-vtpm` (clang -fsanitize=fuzzer,address,undefined).
 *
 * 1. vtpm_proto_decode() on an exact-size heap copy of the input (so ASan
 *    catches any read past what the caller copied), checking that an
 *    accepted request lies inside the copy and within 4087 bytes.
 * 2. vtpm_proto_cmd() on a full 4 KiB page with a stand-in vtpm_process()
 *    that checks its arguments and answers with a response whose size the
 *    input chooses (also sizes that do not fit): the response header must
 *    always say <= 4092, and a rejected request must leave the page as it was.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tpm/vtpm.h"
#include "tpm/vtpm_proto.h"

static size_t want_rsp;

int vtpm_process(const uint8_t *cmd, size_t len, uint8_t *rsp, size_t *rsplen)
{
	if (len > VTPM_REQ_MAX_DATA || *rsplen != VTPM_RSP_MAX_DATA)
		abort();
	volatile uint8_t sink = 0;
	for (size_t i = 0; i < len; i++) /* touch every command byte */
		sink ^= cmd[i];
	(void)sink;
	if (want_rsp > *rsplen)
		return -1;
	memset(rsp, 0x5A, want_rsp);
	*rsplen = want_rsp;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vtpm_proto_req req;

	/* 1: exact-size copy */
	uint8_t *copy = malloc(size ? size : 1);
	memcpy(copy, data, size);
	uint64_t rc = vtpm_proto_decode(copy, size, &req);
	if (rc == SVSM_SUCCESS) {
		if (req.cmd != copy + VTPM_REQ_DATA_OFF || req.len > VTPM_REQ_MAX_DATA ||
		    VTPM_REQ_DATA_OFF + (size_t)req.len > size || copy[VTPM_REQ_LOCALITY_OFF] != 0)
			abort();
	} else if (rc != SVSM_ERR_INVALID_PARAMETER && rc != SVSM_ERR_UNSUPPORTED_CALL) {
		abort();
	}
	free(copy);

	/* 2: full page, response in place */
	static uint8_t page[VTPM_PROTO_PAGE_SIZE], before[VTPM_PROTO_PAGE_SIZE];
	memset(page, 0, sizeof(page));
	memcpy(page, data, size < sizeof(page) ? size : sizeof(page));
	memcpy(before, page, sizeof(page));
	want_rsp = size ? (size_t)data[size - 1] * 17 : 0; /* 0 .. 4335: also too large */
	rc = vtpm_proto_cmd(page, sizeof(page));
	if (rc == SVSM_SUCCESS) {
		uint32_t n = page[0] | page[1] << 8 | page[2] << 16 | (uint32_t)page[3] << 24;
		if (n > VTPM_RSP_MAX_DATA || (want_rsp <= VTPM_RSP_MAX_DATA && n != want_rsp) ||
		    (want_rsp > VTPM_RSP_MAX_DATA && n != 10))
			abort();
	} else if (memcmp(page, before, sizeof(page)) != 0) {
		abort(); /* decode, then act: a rejected request changes nothing */
	}
	return 0;
}
