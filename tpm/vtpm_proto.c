/*
 * SVSM vTPM protocol (2) request handling; see include/tpm/vtpm_proto.h.
 * Decode, then act (STYLE.md): vtpm_proto_decode() checks the whole request
 * on the private page copy before the vTPM sees anything.
 */
#include "base/string.h"
#include "tpm/vtpm.h"
#include "tpm/vtpm_proto.h"

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

uint64_t vtpm_proto_query(uint64_t *rcx, uint64_t *rdx)
{
	*rcx = VTPM_PROTO_QUERY_COMMANDS;
	*rdx = VTPM_PROTO_QUERY_FEATURES;
	return SVSM_SUCCESS;
}

/* Known platform commands (coconut's TpmPlatformCommand enum = the simulator's list). */
static bool known_platform_command(uint32_t c)
{
	return (c >= VTPM_PLAT_POWER_ON && c <= VTPM_PLAT_RESTART) || c == VTPM_PLAT_SESSION_END ||
	       c == VTPM_PLAT_STOP || c == VTPM_PLAT_GET_COMMAND_RESPONSE_SIZES ||
	       c == VTPM_PLAT_TEST_FAILURE_MODE;
}

uint64_t vtpm_proto_decode(const uint8_t *page, size_t len, struct vtpm_proto_req *req)
{
	if (len < VTPM_REQ_DATA_OFF || len > VTPM_PROTO_PAGE_SIZE)
		return SVSM_ERR_INVALID_PARAMETER;
	uint32_t cmd = get_le32(page + VTPM_REQ_CMD_OFF);
	if (!known_platform_command(cmd))
		return SVSM_ERR_INVALID_PARAMETER;
	if (cmd != VTPM_PLAT_SEND_COMMAND)
		return SVSM_ERR_UNSUPPORTED_CALL;
	if (page[VTPM_REQ_LOCALITY_OFF] != 0)
		return SVSM_ERR_INVALID_PARAMETER;
	uint32_t size = get_le32(page + VTPM_REQ_SIZE_OFF);
	/* size <= 4087 and inside the bytes actually given: no overflow possible. */
	if (size > VTPM_REQ_MAX_DATA || size > len - VTPM_REQ_DATA_OFF)
		return SVSM_ERR_INVALID_PARAMETER;
	req->cmd = page + VTPM_REQ_DATA_OFF;
	req->len = size;
	return SVSM_SUCCESS;
}

uint64_t vtpm_proto_cmd(uint8_t *page, size_t len)
{
	struct vtpm_proto_req req;
	uint64_t rc = vtpm_proto_decode(page, len, &req);

	if (rc != SVSM_SUCCESS)
		return rc;
	/* The response may be as large as the page allows, whatever len was. */
	size_t rsplen = VTPM_RSP_MAX_DATA;
	if (vtpm_process(req.cmd, req.len, page + VTPM_RSP_DATA_OFF, &rsplen) != 0) {
		/* TPM 2.0 Part 2: TPM_ST_NO_SESSIONS, size 10, TPM_RC_FAILURE. */
		static const uint8_t fail[10] = {0x80, 0x01, 0, 0, 0, 10, 0, 0, 0x01, 0x01};
		memcpy(page + VTPM_RSP_DATA_OFF, fail, sizeof(fail));
		rsplen = sizeof(fail);
	}
	put_le32(page + VTPM_RSP_SIZE_OFF, (uint32_t)rsplen);
	return SVSM_SUCCESS;
}
