/*
 * csvsm-accept-plan: predicts what pre-acceptance will do, for the QEMU test
 * to compare with what the image reports.
 *
 * Input (stdin): a csvsm console log. Every line containing
 *   csvsm: memmap: ram start=0x<hex> end=0x<hex>
 * (printed by memmap_print, one per RAM range after csvsm is carved out, in
 * address order) is used; everything else is ignored.
 * Options: --vcpus N (default 2), --4k-only S-E (hex, repeatable: the sim
 * hypervisor's csvsm.sim_4k_only ranges), --psc-limit N (entries the sim
 * hypervisor handles per PSC exit, default GHCB_HOST_PSC_LIMIT; 0 = all), -v.
 * Output (stdout), one line, the same text as the image's accept line holds:
 *   bytes=<n> pvalidate_2m=<n> pvalidate_4k=<n> rmpadjust=<n> psc_calls=<n>
 * With -v, the shares and the fallback count go to stderr.
 * Uses the same planner (mm/accept_plan.c) as the image.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/snpm/model/ghcb_host.h"
#include "mm/accept.h"
#include "tests/snpm/model/accept_predict.h"
#include "tests/snpm/model/rmp.h"

static struct mem_range ranges[MEMMAP_MAX_RANGES];
static struct accept_plan plan;

static __attribute__((noreturn)) void usage(const char *why)
{
	fprintf(stderr,
		"csvsm-accept-plan: %s\n"
		"usage: csvsm-accept-plan [--vcpus N] [--4k-only S-E]... [--psc-limit N] [-v] < "
		"console.log\n",
		why);
	exit(2);
}

static uint64_t num(const char *s, int base, const char *what)
{
	char *end;
	if (!s || !*s)
		usage(what);
	unsigned long long v = strtoull(s, &end, base);
	if (*end)
		usage(what);
	return v;
}

int main(int argc, char **argv)
{
	struct mem_range only4k[RMP_MAX_4K_ONLY];
	unsigned n4k = 0, nvcpus = 2, limit = GHCB_HOST_PSC_LIMIT, n = 0;
	bool verbose = false;
	char line[1024];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--vcpus")) {
			nvcpus = (unsigned)num(v, 10, "bad --vcpus");
			i++;
		} else if (!strcmp(a, "--psc-limit")) {
			limit = (unsigned)num(v, 10, "bad --psc-limit");
			i++;
		} else if (!strcmp(a, "--4k-only")) {
			char *end;
			if (!v || n4k == RMP_MAX_4K_ONLY)
				usage("bad --4k-only");
			only4k[n4k].start = strtoull(v, &end, 16);
			if (*end != '-')
				usage("bad --4k-only (want S-E in hex)");
			only4k[n4k].end = num(end + 1, 16, "bad --4k-only end");
			if (only4k[n4k].start >= only4k[n4k].end)
				usage("empty --4k-only range");
			n4k++;
			i++;
		} else if (!strcmp(a, "-v")) {
			verbose = true;
		} else {
			usage("unknown argument");
		}
	}
	if (nvcpus == 0 || nvcpus > MAX_CPUS)
		usage("--vcpus out of range");
	if (limit > PSC_MAX_ENTRIES)
		usage("--psc-limit above 253");

	while (fgets(line, sizeof(line), stdin)) {
		unsigned long long s, e;
		const char *p = strstr(line, "csvsm: memmap: ram ");
		if (!p)
			continue;
		if (sscanf(p, "csvsm: memmap: ram start=0x%llx end=0x%llx", &s, &e) != 2) {
			fprintf(stderr, "csvsm-accept-plan: malformed line: %s", line);
			return 1;
		}
		if (n == MEMMAP_MAX_RANGES) {
			fprintf(stderr, "csvsm-accept-plan: more than %u RAM ranges\n",
				MEMMAP_MAX_RANGES);
			return 1;
		}
		ranges[n].start = s;
		ranges[n].end = e;
		n++;
	}
	if (n == 0) {
		fprintf(stderr, "csvsm-accept-plan: no 'csvsm: memmap: ram' lines on stdin\n");
		return 1;
	}
	if (accept_plan(&plan, ranges, n, nvcpus) != 0) {
		fprintf(stderr, "csvsm-accept-plan: RAM ranges not sorted/disjoint/page-aligned\n");
		return 1;
	}
	struct accept_totals t;
	char out[256];
	accept_predict(&plan, only4k, n4k, limit, &t);
	accept_totals_format(out, sizeof(out), &t);
	printf("%s\n", out);
	if (verbose) {
		for (unsigned i = 0; i < plan.nshares; i++)
			fprintf(stderr, "share %u: window 0x%llx-0x%llx bytes=%llu\n", i,
				(unsigned long long)plan.share[i].start,
				(unsigned long long)plan.share[i].end,
				(unsigned long long)plan.share[i].bytes);
		fprintf(stderr, "fallbacks=%llu\n", (unsigned long long)t.fallbacks);
	}
	return 0;
}
