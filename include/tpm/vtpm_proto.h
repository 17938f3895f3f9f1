/*
 * SVSM vTPM protocol (2), AMD pub. 58019 / shared/reference/snp-svsm-interfaces.md
 * §3, exactly as Linux drivers/char/tpm/tpm_svsm.c + include/linux/tpm_svsm.h
 * and coconut-svsm kernel/src/protocols/vtpm.rs use it.
 *
 * SVSM_VTPM_QUERY: RCX = bitmap of supported platform commands (1 << 8,
 * TPM_SEND_COMMAND), RDX = supported features (0).
 * SVSM_VTPM_CMD: RCX = gPA of one 4 KiB page. The caller copies the page
 * out of guest memory once, calls vtpm_proto_cmd() on the private copy and
 * copies the page back; the response is written in place. RAX is
 * SVSM_SUCCESS even when the TPM response carries an error RC.
 */
#ifndef TPM_VTPM_PROTO_H
#define TPM_VTPM_PROTO_H

#include "base/types.h"
#include "snp/svsm.h"

#define VTPM_PROTO_PAGE_SIZE 4096

/* Platform commands (MS/TCG simulator TpmTcpProtocol.h; reference §3). */
#define VTPM_PLAT_POWER_ON		     1
#define VTPM_PLAT_POWER_OFF		     2
#define VTPM_PLAT_PHYS_PRES_ON		     3
#define VTPM_PLAT_PHYS_PRES_OFF		     4
#define VTPM_PLAT_HASH_START		     5
#define VTPM_PLAT_HASH_DATA		     6
#define VTPM_PLAT_HASH_END		     7
#define VTPM_PLAT_SEND_COMMAND		     8
#define VTPM_PLAT_CANCEL_ON		     9
#define VTPM_PLAT_CANCEL_OFF		     10
#define VTPM_PLAT_NV_ON			     11
#define VTPM_PLAT_NV_OFF		     12
#define VTPM_PLAT_KEY_CACHE_ON		     13
#define VTPM_PLAT_KEY_CACHE_OFF		     14
#define VTPM_PLAT_REMOTE_HANDSHAKE	     15
#define VTPM_PLAT_SET_ALTERNATIVE_RESULT     16
#define VTPM_PLAT_RESET			     17
#define VTPM_PLAT_RESTART		     18
#define VTPM_PLAT_SESSION_END		     20
#define VTPM_PLAT_STOP			     21
#define VTPM_PLAT_GET_COMMAND_RESPONSE_SIZES 25
#define VTPM_PLAT_TEST_FAILURE_MODE	     30

/* TPM_SEND_COMMAND request (58019 table 16; Linux struct svsm_vtpm_request), packed, little-endian.
 */
#define VTPM_REQ_CMD_OFF      0x000 /* u32 platform command */
#define VTPM_REQ_LOCALITY_OFF 0x004 /* u8, must be 0 */
#define VTPM_REQ_SIZE_OFF     0x005 /* u32 TPM command size */
#define VTPM_REQ_DATA_OFF     0x009
#define VTPM_REQ_MAX_DATA     (VTPM_PROTO_PAGE_SIZE - VTPM_REQ_DATA_OFF) /* 4087 */
/* Response (58019 table 17; Linux struct svsm_vtpm_response). */
#define VTPM_RSP_SIZE_OFF 0x000 /* u32 TPM response size */
#define VTPM_RSP_DATA_OFF 0x004
#define VTPM_RSP_MAX_DATA (VTPM_PROTO_PAGE_SIZE - VTPM_RSP_DATA_OFF) /* 4092 */

#define VTPM_PROTO_QUERY_COMMANDS (1ULL << VTPM_PLAT_SEND_COMMAND)
#define VTPM_PROTO_QUERY_FEATURES 0ULL

/* A decoded TPM_SEND_COMMAND request: the TPM command lies in the page copy. */
struct vtpm_proto_req {
	const uint8_t *cmd;
	uint32_t len;
};

/* SVSM_VTPM_QUERY: sets RCX/RDX outputs, returns RAX. */
uint64_t vtpm_proto_query(uint64_t *rcx, uint64_t *rdx);

/*
 * Checks a request page (len bytes, normally 4096) and changes nothing.
 * Returns SVSM_SUCCESS with *req filled, SVSM_ERR_INVALID_PARAMETER for an
 * unknown platform command, a locality other than 0 or an oversized
 * command, SVSM_ERR_UNSUPPORTED_CALL for a known platform command other
 * than TPM_SEND_COMMAND.
 */
uint64_t vtpm_proto_decode(const uint8_t *page, size_t len, struct vtpm_proto_req *req);

/*
 * SVSM_VTPM_CMD on the caller's private copy of the request page: decode,
 * then run the command and write the response in place. If the vTPM
 * cannot produce a response (not running, response too large) the guest
 * gets a 10-byte TPM_RC_FAILURE response: RAX still SVSM_SUCCESS, as the
 * request itself was valid.
 */
uint64_t vtpm_proto_cmd(uint8_t *page, size_t len);

#endif
