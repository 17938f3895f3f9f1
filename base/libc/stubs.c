/*
 * Everything the libraries reference but the image cannot do: files,
 * terminals, signals, contexts, virtual memory, SysV shm, dynamic loading,
 * sockets, environment. Each call fails exactly as glibc does when the
 * resource is absent (return value and errno), so the libraries take their
 * ordinary "not available" paths (glibc-abi-notes.md §3.8, §4). The first
 * call of each stub is logged to the console.
 */
#include "base/console.h"
#include "base/string.h"
#include "base/libc/libc.h"

struct libc_file;
extern struct libc_file *stdin, *stdout, *stderr;

#define STUB_LOG(name, fmt, ...)                                                                   \
	do {                                                                                       \
		static bool logged_;                                                               \
		if (!logged_) {                                                                    \
			logged_ = true;                                                            \
			con_printf("libc: stub " name fmt "\n", ##__VA_ARGS__);                    \
		}                                                                                  \
	} while (0)

#define FAIL(err, ret)                                                                             \
	do {                                                                                       \
		LIBC_SET_ERRNO(err);                                                               \
		return ret;                                                                        \
	} while (0)

/* A name or path the library passes: shown only if it is one of its constants. */
static const char *str(const char *s)
{
	return libc_shown(s);
}

/* What OpenSSL 3.0 asks for on every start (glibc-abi-notes.md §3.6, §3.8):
 * expected, so not logged; anything else is. */
static bool expected(const char *s)
{
	static const char *const known[] = {"OPENSSL_ia32cap", "OPENSSL_CONF",
					    "/usr/lib/ssl/openssl.cnf"};
	for (unsigned i = 0; s && i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(s, known[i]) == 0)
			return true;
	return false;
}

/* ---- environment: empty ---- */
char *getenv(const char *name)
{
	if (expected(name))
		return NULL;
	STUB_LOG("getenv", "(\"%s\") -> NULL", str(name));
	return NULL;
}

char *secure_getenv(const char *name)
{
	if (expected(name))
		return NULL;
	STUB_LOG("secure_getenv", "(\"%s\") -> NULL", str(name));
	return NULL;
}

/* ---- files: no file system; only fds 0-2 exist ---- */
struct libc_file *fopen(const char *path, const char *mode)
{
	STUB_LOG("fopen", "(\"%s\") -> NULL ENOENT", str(path));
	FAIL(LIBC_ENOENT, NULL);
}

struct libc_file *fopen64(const char *path, const char *mode)
{
	if (expected(path))
		FAIL(LIBC_ENOENT, NULL);
	STUB_LOG("fopen64", "(\"%s\") -> NULL ENOENT", str(path));
	FAIL(LIBC_ENOENT, NULL);
}

int fclose(struct libc_file *f)
{
	STUB_LOG("fclose", "() -> EOF EBADF");
	FAIL(LIBC_EBADF, -1);
}

size_t fread(void *p, size_t size, size_t n, struct libc_file *f)
{
	STUB_LOG("fread", "() -> 0 EBADF");
	FAIL(LIBC_EBADF, 0);
}

char *fgets(char *s, int n, struct libc_file *f)
{
	STUB_LOG("fgets", "() -> NULL EBADF");
	FAIL(LIBC_EBADF, NULL);
}

int fseek(struct libc_file *f, long off, int whence)
{
	STUB_LOG("fseek", "() -> -1 ESPIPE");
	FAIL(29 /* ESPIPE: the console is not seekable */, -1);
}

long ftell(struct libc_file *f)
{
	STUB_LOG("ftell", "() -> -1 ESPIPE");
	FAIL(29, -1);
}

int feof(struct libc_file *f)
{
	return f == stdin; /* nothing to read, ever */
}
int ferror(struct libc_file *f)
{
	return 0;
}

int fileno(struct libc_file *f)
{
	if (f == stdin)
		return 0;
	if (f == stdout)
		return 1;
	if (f == stderr)
		return 2;
	FAIL(LIBC_EBADF, -1);
}

int open(const char *path, int flags, ...)
{
	STUB_LOG("open", "(\"%s\") -> -1 ENOENT", str(path));
	FAIL(LIBC_ENOENT, -1);
}

long read(int fd, void *buf, size_t n)
{
	STUB_LOG("read", "(%d) -> -1 EBADF", fd);
	FAIL(LIBC_EBADF, -1);
}

int close(int fd)
{
	STUB_LOG("close", "(%d) -> -1 EBADF", fd);
	FAIL(LIBC_EBADF, -1);
}

int stat(const char *path, void *st)
{
	STUB_LOG("stat", "(\"%s\") -> -1 ENOENT", str(path));
	FAIL(LIBC_ENOENT, -1);
}

int fstat(int fd, void *st)
{
	STUB_LOG("fstat", "(%d) -> -1 EBADF", fd);
	FAIL(LIBC_EBADF, -1);
}

int remove(const char *path)
{
	STUB_LOG("remove", "(\"%s\") -> -1 ENOENT", str(path));
	FAIL(LIBC_ENOENT, -1);
}

int rename(const char *from, const char *to)
{
	STUB_LOG("rename", "(\"%s\") -> -1 ENOENT", str(from));
	FAIL(LIBC_ENOENT, -1);
}

int fcntl(int fd, int cmd, ...)
{
	STUB_LOG("fcntl", "(%d, %d) -> -1 EBADF", fd, cmd);
	FAIL(LIBC_EBADF, -1);
}

int ioctl(int fd, unsigned long req, ...)
{
	STUB_LOG("ioctl", "(%d, 0x%lx) -> -1", fd, req);
	FAIL(fd >= 0 && fd <= 2 ? LIBC_ENOTTY : LIBC_EBADF, -1);
}

void *opendir(const char *path)
{
	STUB_LOG("opendir", "(\"%s\") -> NULL ENOENT", str(path));
	FAIL(LIBC_ENOENT, NULL);
}

void *readdir(void *dir)
{
	STUB_LOG("readdir", "() -> NULL EBADF");
	FAIL(LIBC_EBADF, NULL);
}

int closedir(void *dir)
{
	STUB_LOG("closedir", "() -> -1 EBADF");
	FAIL(LIBC_EBADF, -1);
}

/* No scanf: report "no conversion" (OpenSSL's callers check the count). */
int __isoc99_sscanf(const char *s, const char *fmt, ...)
{
	STUB_LOG("__isoc99_sscanf", "(\"%s\") -> 0", str(fmt));
	return 0;
}

/* ---- terminal, signals, sleeping, system info ---- */
int tcgetattr(int fd, void *t)
{
	STUB_LOG("tcgetattr", "(%d) -> -1 ENOTTY", fd);
	FAIL(LIBC_ENOTTY, -1);
}

int tcsetattr(int fd, int act, const void *t)
{
	STUB_LOG("tcsetattr", "(%d) -> -1 ENOTTY", fd);
	FAIL(LIBC_ENOTTY, -1);
}

void *signal(int sig, void *handler)
{
	STUB_LOG("signal", "(%d) -> SIG_ERR EINVAL", sig);
	FAIL(LIBC_EINVAL, (void *)-1L);
}

int sigaction(int sig, const void *act, void *old)
{
	STUB_LOG("sigaction", "(%d) -> -1 EINVAL", sig);
	FAIL(LIBC_EINVAL, -1);
}

/* No sleeping: report an immediate interruption, as a signal would. */
unsigned sleep(unsigned s)
{
	STUB_LOG("sleep", "(%u) -> %u (interrupted)", s, s);
	return s;
}

int usleep(unsigned us)
{
	STUB_LOG("usleep", "(%u) -> -1 EINTR", us);
	FAIL(LIBC_EINTR, -1);
}

unsigned alarm(unsigned s)
{
	STUB_LOG("alarm", "(%u) -> 0 (no signal will arrive)", s);
	return 0;
}

int uname(void *buf)
{
	STUB_LOG("uname", "() -> -1 ENOSYS");
	FAIL(LIBC_ENOSYS, -1);
}

long sysconf(int name)
{
	switch (name) {
	case 30: /* _SC_PAGESIZE */
		return 4096;
	case 84: /* _SC_NPROCESSORS_ONLN */
		return 1;
	default:
		STUB_LOG("sysconf", "(%d) -> -1 EINVAL", name);
		FAIL(LIBC_EINVAL, -1);
	}
}

int select(int n, void *r, void *w, void *e, void *timeout)
{
	STUB_LOG("select", "(%d) -> -1 EBADF", n);
	FAIL(LIBC_EBADF, -1);
}

/* ---- ucontext (OpenSSL async jobs): not supported ---- */
int getcontext(void *uc)
{
	STUB_LOG("getcontext", "() -> -1 ENOSYS");
	FAIL(LIBC_ENOSYS, -1);
}

int setcontext(const void *uc)
{
	STUB_LOG("setcontext", "() -> -1 ENOSYS");
	FAIL(LIBC_ENOSYS, -1);
}

void makecontext(void *uc, void (*fn)(void), int argc, ...)
{
	STUB_LOG("makecontext", "() ignored");
}

/* ---- virtual memory, SysV shm: none ---- */
void *mmap(void *addr, size_t len, int prot, int flags, int fd, long off)
{
	STUB_LOG("mmap", "(%zu) -> MAP_FAILED ENOMEM", len);
	FAIL(LIBC_ENOMEM, (void *)-1L);
}

int munmap(void *addr, size_t len)
{
	STUB_LOG("munmap", "() -> -1 EINVAL");
	FAIL(LIBC_EINVAL, -1);
}

int mprotect(void *addr, size_t len, int prot)
{
	STUB_LOG("mprotect", "() -> -1 ENOMEM");
	FAIL(LIBC_ENOMEM, -1);
}

int mlock(const void *addr, size_t len)
{
	STUB_LOG("mlock", "() -> -1 EPERM");
	FAIL(LIBC_EPERM, -1);
}

int madvise(void *addr, size_t len, int advice)
{
	STUB_LOG("madvise", "() -> -1 EINVAL");
	FAIL(LIBC_EINVAL, -1);
}

int shmget(int key, size_t size, int flags)
{
	STUB_LOG("shmget", "() -> -1 ENOSYS");
	FAIL(LIBC_ENOSYS, -1);
}

void *shmat(int id, const void *addr, int flags)
{
	STUB_LOG("shmat", "() -> (void *)-1 EINVAL");
	FAIL(LIBC_EINVAL, (void *)-1L);
}

int shmdt(const void *addr)
{
	STUB_LOG("shmdt", "() -> -1 EINVAL");
	FAIL(LIBC_EINVAL, -1);
}

/* ---- dynamic loading: none (OpenSSL's providers are linked in) ---- */
void *dlopen(const char *file, int mode)
{
	STUB_LOG("dlopen", "(\"%s\") -> NULL", str(file));
	return NULL;
}

void *dlsym(void *h, const char *name)
{
	STUB_LOG("dlsym", "(\"%s\") -> NULL", str(name));
	return NULL;
}

int dlclose(void *h)
{
	STUB_LOG("dlclose", "() -> -1");
	return -1;
}

char *dlerror(void)
{
	return (char *)"dynamic loading is not supported";
}

int dladdr(const void *addr, void *info)
{
	STUB_LOG("dladdr", "() -> 0");
	return 0;
}

/* ---- sockets and name resolution: no network ---- */
int socket(int domain, int type, int proto)
{
	STUB_LOG("socket", "(%d) -> -1 EAFNOSUPPORT", domain);
	FAIL(LIBC_EAFNOSUPPORT, -1);
}

#define SOCK_STUB(name, sig)                                                                       \
	int name sig                                                                               \
	{                                                                                          \
		STUB_LOG(#name, "() -> -1 EBADF");                                                 \
		FAIL(LIBC_EBADF, -1);                                                              \
	}
SOCK_STUB(bind, (int fd, const void *a, unsigned l))
SOCK_STUB(listen, (int fd, int backlog))
SOCK_STUB(accept, (int fd, void *a, unsigned *l))
SOCK_STUB(connect, (int fd, const void *a, unsigned l))
SOCK_STUB(shutdown, (int fd, int how))
SOCK_STUB(getsockname, (int fd, void *a, unsigned *l))
SOCK_STUB(getsockopt, (int fd, int lvl, int opt, void *v, unsigned *l))
SOCK_STUB(setsockopt, (int fd, int lvl, int opt, const void *v, unsigned l))

long sendmsg(int fd, const void *msg, int flags)
{
	STUB_LOG("sendmsg", "() -> -1 EBADF");
	FAIL(LIBC_EBADF, -1);
}

long recvmsg(int fd, void *msg, int flags)
{
	STUB_LOG("recvmsg", "() -> -1 EBADF");
	FAIL(LIBC_EBADF, -1);
}

#define EAI_FAIL (-4)
int getaddrinfo(const char *node, const char *svc, const void *hints, void **res)
{
	STUB_LOG("getaddrinfo", "(\"%s\") -> EAI_FAIL", str(node));
	return EAI_FAIL;
}

void freeaddrinfo(void *res) {}

const char *gai_strerror(int e)
{
	return "Non-recoverable failure in name resolution";
}

int getnameinfo(const void *sa, unsigned salen, char *host, unsigned hostlen, char *serv,
		unsigned servlen, int flags)
{
	STUB_LOG("getnameinfo", "() -> EAI_FAIL");
	return EAI_FAIL;
}

void *gethostbyname(const char *name)
{
	STUB_LOG("gethostbyname", "(\"%s\") -> NULL", str(name));
	return NULL;
}
