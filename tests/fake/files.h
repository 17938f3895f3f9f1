/* Reading whole files in host tests (tests/fake/files.c). */
#ifndef TESTS_FAKE_FILES_H
#define TESTS_FAKE_FILES_H

#include <stddef.h>
#include <stdint.h>

/* The whole file in a malloc'd buffer (caller frees), or NULL. */
uint8_t *host_load_file(const char *path, size_t *len);
/* $SHARED/fixtures/snp/<rel> (SHARED defaults to ../shared); NULL with a
 * "skipping" message when absent, so the caller can skip, not pass. */
uint8_t *host_load_fixture(const char *rel, size_t *len);

#endif
