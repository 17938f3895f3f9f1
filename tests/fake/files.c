/* Whole-file reads for host tests (tests/fake/files.h). */
#include <stdio.h>
#include <stdlib.h>
#include "tests/fake/files.h"

uint8_t *host_load_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (!buf || n < 0 || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

uint8_t *host_load_fixture(const char *rel, size_t *len)
{
	const char *shared = getenv("SHARED");
	char path[1024];
	uint8_t *b;

	snprintf(path, sizeof(path), "%s/fixtures/snp/%s", shared ? shared : "../shared", rel);
	b = host_load_file(path, len);
	if (!b)
		fprintf(stderr, "fixture %s not found (set SHARED): skipping\n", path);
	return b;
}
