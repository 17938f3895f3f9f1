/*
 * attest/policy.c's result bookkeeping, which both front ends (csvsm-kbs,
 * csvsm-verify --policy) rely on, run by tests/kbs/kbs.sh (TAP):
 *
 *   - a failing check stays failing however many checks follow it: before,
 *     the 49th and later checks all went to the last slot, so a passing one
 *     overwrote an earlier failure (csvsm-kbs adds its freshness, credential
 *     and CRL checks last); past APPRAISAL_MAX_CHECKS the result is
 *     contraindicated, never shorter
 *   - appraisal_tcb_parse / appraisal_tcb_set, the one TCB-component parser
 *     of the policy file and csvsm-verify --min-tcb
 */
#include <attest/policy.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tests/kbs/tap.h"

static bool has_failing(const struct appraisal_result *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->checks[i].name, name) && r->checks[i].state == SNP_CHECK_FAIL)
			return true;
	return false;
}

int main(void)
{
	static struct appraisal_result r;
	struct snp_tcb t;
	char err[160];

	/* 60 passing checks (a policy with many reference PCRs), then the front end's: a
	 * failing freshness check followed by passing credential checks. */
	memset(&r, 0, sizeof(r));
	for (int i = 0; i < 60; i++)
		appraisal_add_check(&r, "quote.pcrs", EAR_EXECUTABLES, true, "PCR%d equals", i);
	appraisal_add_check(&r, "freshness.nonce", EAR_INSTANCE_IDENTITY, false,
			    "runtime-data.nonce is not the nonce this session was given");
	appraisal_add_check(&r, "svsm.ek_bound", EAR_INSTANCE_IDENTITY, true, "bound");
	appraisal_add_check(&r, "svsm.ak_activated", EAR_INSTANCE_IDENTITY, true, "activated");
	tap(r.status == EAR_STATUS_CONTRAINDICATED && has_failing(&r, "freshness.nonce") &&
		r.tv[EAR_INSTANCE_IDENTITY] == AR4SI_CONTRAINDICATED,
	    "a failing check after 60 others stays: %s, instance-identity %d, %zu checks kept",
	    ear_status_name(r.status), r.tv[EAR_INSTANCE_IDENTITY], r.n);

	/* More checks than there is room for: contraindicated, and says why. */
	memset(&r, 0, sizeof(r));
	for (int i = 0; i < APPRAISAL_MAX_CHECKS + 5; i++)
		appraisal_add_check(&r, "quote.pcrs", EAR_EXECUTABLES, true, "PCR%d equals", i);
	tap(r.overflow && r.n == APPRAISAL_MAX_CHECKS && r.status == EAR_STATUS_CONTRAINDICATED &&
		strstr(r.reason[EAR_CONFIGURATION], "more than"),
	    "%d passing checks (room for %d): contraindicated, '%s'", APPRAISAL_MAX_CHECKS + 5,
	    APPRAISAL_MAX_CHECKS, r.reason[EAR_CONFIGURATION]);

	/* Exactly as many as there is room for: all kept, affirming. */
	memset(&r, 0, sizeof(r));
	for (int i = 0; i < APPRAISAL_MAX_CHECKS; i++)
		appraisal_add_check(&r, "quote.pcrs", EAR_EXECUTABLES, true, "PCR%d equals", i);
	tap(!r.overflow && r.status == EAR_STATUS_AFFIRMING, "%d checks fit: %s",
	    APPRAISAL_MAX_CHECKS, ear_status_name(r.status));

	/* The TCB components, one parser for both front ends. */
	tap(!appraisal_tcb_parse("bl=4,tee=0,snp=21,ucode=209", &t, err, sizeof(err)) &&
		t.bl == 4 && t.tee == 0 && t.snp == 21 && t.ucode == 209 && !t.has_fmc,
	    "bl=4,tee=0,snp=21,ucode=209");
	tap(!appraisal_tcb_parse("fmc=0x2,snp=3", &t, err, sizeof(err)) && t.fmc == 2 &&
		t.has_fmc && t.snp == 3 && t.bl == 0,
	    "fmc=0x2,snp=3: fmc set, omitted components 0");
	static const char *bad[] = {"bl=256", "bl=-1", "bl=", "bl", "microcode=1", "bl=1x", ""};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = appraisal_tcb_parse(bad[i], &t, err, sizeof(err));
		tap(bad[i][0] ? rc != 0 : rc == 0, "'%s': %s (%s)", bad[i],
		    rc ? "refused" : "accepted", rc ? err : "nothing to set");
	}
	tap(!appraisal_tcb_set(&t, "ucodes", 1) && appraisal_tcb_set(&t, "ucode", 7) &&
		t.ucode == 7,
	    "appraisal_tcb_set knows ucode, not ucodes");

	return tap_done();
}
