/*
 * The kbs mode's persistence hooks (include/tpm/vtpm_kbs.h
 * vtpm_kbs_persist): after csvsm-kbs's release, the registry's word and the
 * three things persistence asks of the broker (docs/vtpm.md "Persistence",
 * "kbs mode"): a commit after every state the host stored, the lease's
 * renewal, the EK certificate of a first manufacture written at NV
 * 0x01C00002. Core code: the image (tpm/boot.c) and the benchmark
 * (bench/vtpm_bench.c) run the same.
 */
#include "base/console.h"
#include "base/string.h"
#include "tpm/vtpm.h"
#include "tpm/vtpm_kbs.h"
#include "tpm/vtpm_persist.h"

static int committed(void *ctx, uint64_t version, const uint8_t sha[32], char *why, size_t why_len)
{
	struct vtpm_kbs_session *s = ctx;
	return vtpm_kbs_commit(&s->cfg, &s->grant, version, sha, why, why_len) ? -1 : 0;
}

static int renew(void *ctx, uint64_t version, const uint8_t sha[32], char *why, size_t why_len)
{
	struct vtpm_kbs_session *s = ctx;
	int rc = vtpm_kbs_commit(&s->cfg, &s->grant, version, sha, why, why_len);
	return rc == VTPM_KBS_UNREACHABLE ? VTPM_PERSIST_UNREACHABLE : rc ? -1 : 0;
}

/* The first manufacture's EK certificate, into NV before anything is stored. */
static int manufactured(void *ctx, char *why, size_t why_len)
{
	static uint8_t cert[VTPM_EK_CERT_MAX];
	struct vtpm_kbs_session *s = ctx;
	const uint8_t *ek;
	size_t ek_len, cl = 0;
	struct vtpm_info ti;
	if (vtpm_ek_public(&ek, &ek_len) || vtpm_info(&ti)) {
		fmt_snprintf(why, why_len, "the new TPM gives no EK");
		return -1;
	}
	if (vtpm_kbs_ek_certificate(&s->cfg, &s->grant, ek, ek_len, &ti, cert, sizeof(cert), &cl,
				    why, why_len))
		return -1;
	if (vtpm_ek_cert_store(cert, cl)) {
		fmt_snprintf(why, why_len, "the EK certificate (%zu bytes) does not go into NV",
			     cl);
		return -1;
	}
	return 0;
}

void vtpm_kbs_persist(struct vtpm_kbs_session *s, struct vtpm_persist_cfg *cfg)
{
	cfg->registry = true;
	cfg->registry_version = s->grant.version;
	memcpy(cfg->registry_sha256, s->grant.sealed_sha256, sizeof(cfg->registry_sha256));
	cfg->manufacture = s->grant.manufacture;
	cfg->committed = committed;
	cfg->committed_ctx = s;
	cfg->renew = renew;
	/* half the lease on csvsm's clock: the host's TSC, which it controls; a host
	 * that slows it only makes csvsm renew later, which lets a clone take the
	 * lease sooner: that VM's next commit is then refused and its vTPM stops */
	cfg->renew_us = s->grant.lease_seconds * 1000000ULL / 2;
	cfg->manufactured = manufactured;
	cfg->manufactured_ctx = s;
}
