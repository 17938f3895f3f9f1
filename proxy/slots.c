/*
 * csvsm-proxy's two-slot state file (include/proxy/slots.h). POSIX
 * pread/pwrite/fdatasync; SHA-256 from mbedTLS. The pure parts (slot
 * check, header, target choice) are what tests/unit/test_proxy_slots.c
 * drives with torn and damaged slots.
 */
#include <mbedtls/sha256.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/le.h"
#include "proxy/slots.h"

static void digest(const uint8_t *hdr, const uint8_t *data, uint32_t len, uint8_t out[32])
{
	mbedtls_sha256_context c;
	mbedtls_sha256_init(&c);
	mbedtls_sha256_starts_ret(&c, 0);
	mbedtls_sha256_update_ret(&c, hdr, 0x18);
	mbedtls_sha256_update_ret(&c, data, len);
	mbedtls_sha256_finish_ret(&c, out);
	mbedtls_sha256_free(&c);
}

void slots_header(uint8_t hdr[SLOTS_HDR], uint64_t gen, const uint8_t *data, uint32_t len)
{
	memset(hdr, 0, SLOTS_HDR);
	memcpy(hdr, SLOTS_MAGIC, 8);
	le64_put(hdr + 8, gen);
	le32_put(hdr + 0x10, len);
	digest(hdr, data, len, hdr + 0x18);
}

struct slot_info slots_check(const uint8_t *slot, size_t len)
{
	struct slot_info si = {0};
	uint8_t d[32];

	if (len < SLOTS_HDR || memcmp(slot, SLOTS_MAGIC, 8))
		return si;
	uint32_t n = le32_get(slot + 0x10);
	static const uint8_t zero[8];
	if (n > SLOTS_DATA_MAX || n > len - SLOTS_HDR || le32_get(slot + 0x14) ||
	    memcmp(slot + 0x38, zero, 8) || le64_get(slot + 8) == 0)
		return si;
	digest(slot, slot + SLOTS_HDR, n, d);
	if (memcmp(d, slot + 0x18, 32))
		return si;
	si.intact = true;
	si.generation = le64_get(slot + 8);
	si.len = n;
	return si;
}

int slots_target(const struct slots_view *v, uint64_t *gen)
{
	if (v->newest < 0) {
		*gen = 1;
		/* Nothing intact: write over the slot with the smaller generation
		 * header, slot 0 when neither has one. */
		return 0;
	}
	*gen = v->slot[v->newest].generation + 1;
	return 1 - v->newest; /* never over the newest intact state */
}

static int fsync_dir(const char *path)
{
	char *copy = strdup(path);
	int rc = -1;
	if (!copy)
		return -1;
	int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
	if (dfd >= 0) {
		rc = fsync(dfd);
		close(dfd);
	}
	free(copy);
	return rc;
}

int slots_open(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0 || fstat(fd, &st))
		goto fail;
	if (st.st_size < (off_t)SLOTS_FILE_SIZE) {
		/* New (or short): extend with zeros, and make the file itself durable
		 * before any state is written into it. */
		if (ftruncate(fd, SLOTS_FILE_SIZE) || fsync(fd) || fsync_dir(path))
			goto fail;
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* All n bytes at off, read or written (EINTR retried, short transfers continued). */
static int io_full(int fd, uint8_t *p, size_t n, off_t off, bool write)
{
	while (n) {
		ssize_t r = write ? pwrite(fd, p, n, off) : pread(fd, p, n, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

int slots_read(int fd, struct slots_view *v, uint8_t *out, size_t cap, uint32_t *len)
{
	static uint8_t buf[SLOTS_SLOT_SIZE];

	memset(v, 0, sizeof(*v));
	v->newest = -1;
	for (int i = 0; i < 2; i++) {
		if (io_full(fd, buf, sizeof(buf), (off_t)i * SLOTS_SLOT_SIZE, false))
			return -1;
		if (!memcmp(buf, SLOTS_MAGIC, 8))
			v->written = true;
		v->slot[i] = slots_check(buf, sizeof(buf));
		if (v->slot[i].intact &&
		    (v->newest < 0 || v->slot[i].generation > v->slot[v->newest].generation))
			v->newest = i;
	}
	if (v->newest < 0)
		return 0;
	if (io_full(fd, buf, SLOTS_HDR + v->slot[v->newest].len, (off_t)v->newest * SLOTS_SLOT_SIZE,
		    false))
		return -1;
	/* Read again and checked again: the copy handed out is the one verified. */
	struct slot_info again = slots_check(buf, SLOTS_HDR + v->slot[v->newest].len);
	if (!again.intact || again.generation != v->slot[v->newest].generation || again.len > cap)
		return -1;
	memcpy(out, buf + SLOTS_HDR, again.len);
	*len = again.len;
	return 0;
}

int slots_write(int fd, const uint8_t *data, uint32_t len, long tear_after, uint64_t *gen)
{
	static uint8_t buf[SLOTS_SLOT_SIZE];
	struct slots_view v;
	uint32_t dummy;
	static uint8_t scratch[SLOTS_DATA_MAX];

	if (len > SLOTS_DATA_MAX || slots_read(fd, &v, scratch, sizeof(scratch), &dummy))
		return -1;
	int target = slots_target(&v, gen);
	slots_header(buf, *gen, data, len);
	memcpy(buf + SLOTS_HDR, data, len);
	off_t off = (off_t)target * SLOTS_SLOT_SIZE;
	if (tear_after >= 0) {
		/* A crash mid-write: the first tear_after bytes of the data land (half
		 * of it for 0), the rest and the header do not. */
		size_t k =
		    tear_after > 0 && (size_t)tear_after < len ? (size_t)tear_after : (len + 1) / 2;
		if (io_full(fd, buf + SLOTS_HDR, k, off + SLOTS_HDR, true))
			return -1;
		return -2;
	}
	/* The data, then the header that makes it count; then durable. */
	if (io_full(fd, buf + SLOTS_HDR, len, off + SLOTS_HDR, true) ||
	    io_full(fd, buf, SLOTS_HDR, off, true) || fdatasync(fd))
		return -1;
	return 0;
}
