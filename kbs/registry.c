/*
 * The registry (kbs/registry.h) on SQLite or PostgreSQL. Both backends run
 * the same SQL (SQLite >= 3.35 and PostgreSQL >= 9.5 share INSERT ... ON
 * CONFLICT and UPDATE ... RETURNING); parameters are written ?1, ?2, ...
 * and become $1, $2 for libpq. Every value travels as text (binary values
 * as hex), so one row reader serves both.
 *
 * Crash safety: SQLite in WAL mode with synchronous=FULL (sqlite.org/wal.html
 * "durability": FULL syncs the WAL at every commit), so a statement that
 * returned is on disk and a SIGKILL leaves the last committed state;
 * PostgreSQL commits each statement (autocommit).
 * Concurrency: one connection per registry handle behind a mutex; across
 * processes (replicas) the compare-and-set statements decide.
 */
#include "kbs/registry.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REG_MAX_COLS 12
#define REG_MAX_ROWS 1 /* single-row reads; lists use a callback */

struct registry {
	bool pg;
	sqlite3 *db;
	PGconn *pc;
	pthread_mutex_t lock;
};

/* The persistent vTPM's columns (registry_vtpm_*), also added to a registry
 * made before them (migrate()). */
#define VTPM_COLUMNS                                                                               \
	", state_key TEXT NOT NULL DEFAULT '', state_sha256 TEXT NOT NULL DEFAULT '',"             \
	" consent TEXT NOT NULL DEFAULT '', ek TEXT NOT NULL DEFAULT '',"                          \
	" lease_seconds BIGINT NOT NULL DEFAULT 0, lease_seq BIGINT NOT NULL DEFAULT 0"
static const char *const vtpm_columns[][2] = {
    {"state_key", "TEXT NOT NULL DEFAULT ''"},	    {"state_sha256", "TEXT NOT NULL DEFAULT ''"},
    {"consent", "TEXT NOT NULL DEFAULT ''"},	    {"ek", "TEXT NOT NULL DEFAULT ''"},
    {"lease_seconds", "BIGINT NOT NULL DEFAULT 0"}, {"lease_seq", "BIGINT NOT NULL DEFAULT 0"},
};

static const char *const schema[] = {
    "CREATE TABLE IF NOT EXISTS kbs_sessions (id TEXT PRIMARY KEY, nonce TEXT NOT NULL UNIQUE,"
    " hash_alg TEXT NOT NULL, state TEXT NOT NULL, expires BIGINT NOT NULL,"
    " status INTEGER NOT NULL DEFAULT 0, token TEXT NOT NULL DEFAULT '',"
    " tee_pubkey TEXT NOT NULL DEFAULT '', instance TEXT NOT NULL DEFAULT '',"
    " vtpm TEXT NOT NULL DEFAULT '')",
    "CREATE TABLE IF NOT EXISTS kbs_instances (id TEXT PRIMARY KEY, chip_id TEXT NOT NULL,"
    " measurement TEXT NOT NULL, first_attested BIGINT NOT NULL, last_attested BIGINT NOT "
    "NULL,"
    " attestations BIGINT NOT NULL, last_status TEXT NOT NULL,"
    " state_version BIGINT NOT NULL DEFAULT 0, lease_holder TEXT NOT NULL DEFAULT '',"
    " lease_expires BIGINT NOT NULL DEFAULT 0" VTPM_COLUMNS ")",
    "CREATE TABLE IF NOT EXISTS kbs_resources (repository TEXT NOT NULL, type TEXT NOT NULL,"
    " tag TEXT NOT NULL, rule TEXT NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY (repository, type, tag))",
    /* the sweep and the --max-sessions count read sessions by expiry */
    "CREATE INDEX IF NOT EXISTS kbs_sessions_expires ON kbs_sessions (expires)",
};

/* One result row as strings (copied out before the statement is freed). */
struct row {
	int ncols;
	char *col[REG_MAX_COLS];
};

static void row_free(struct row *w)
{
	for (int i = 0; i < w->ncols; i++)
		free(w->col[i]);
	w->ncols = 0;
}

/*
 * The backend's spelling of a statement: ?N parameters become $N for libpq,
 * and @NOW the database's clock in whole seconds since the epoch: SQLite's
 * strftime('%s','now') (the process's clock: one host), PostgreSQL's
 * clock_timestamp() (the server's, the same for every replica; not now(),
 * which is the transaction's start).
 */
static int expand(const struct registry *r, const char *sql, char *buf, size_t cap)
{
	const char *now = r->pg ? "CAST(EXTRACT(EPOCH FROM clock_timestamp()) AS BIGINT)"
				: "CAST(strftime('%s','now') AS INTEGER)";
	size_t o = 0, nl = strlen(now);
	for (const char *p = sql; *p; p++) {
		if (!strncmp(p, "@NOW", 4)) {
			if (o + nl >= cap)
				return -1;
			memcpy(buf + o, now, nl);
			o += nl;
			p += 3;
			continue;
		}
		if (o + 2 >= cap)
			return -1;
		buf[o++] = r->pg && *p == '?' ? '$' : *p;
	}
	buf[o] = 0;
	return 0;
}

/*
 * Run sql with text parameters. Each result row goes to cb (if any);
 * returns the number of rows, or -1. For a statement without RETURNING,
 * *changed gets the rows it changed.
 */
static long run(struct registry *r, const char *sql, int np, const char *const *p,
		void (*cb)(struct row *w, void *ctx), void *ctx, long *changed)
{
	long rows = 0;
	struct row w = {0};

	if (changed)
		*changed = 0;
	char buf[2048];
	if (expand(r, sql, buf, sizeof(buf)))
		return -1;
	sql = buf;
	if (r->pg) {
		/* a dropped connection (the server restarted) is re-opened once */
		if (PQstatus(r->pc) == CONNECTION_BAD)
			PQreset(r->pc);
		PGresult *res = PQexecParams(r->pc, buf, np, NULL, p, NULL, NULL, 0);
		ExecStatusType st = PQresultStatus(res);
		if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
			fprintf(stderr, "csvsm-kbs: registry: %s", PQerrorMessage(r->pc));
			PQclear(res);
			return -1;
		}
		if (changed && *PQcmdTuples(res))
			*changed = atol(PQcmdTuples(res));
		for (int i = 0; i < PQntuples(res); i++) {
			w.ncols = PQnfields(res) < REG_MAX_COLS ? PQnfields(res) : REG_MAX_COLS;
			for (int c = 0; c < w.ncols; c++)
				w.col[c] = strdup(PQgetvalue(res, i, c));
			if (cb)
				cb(&w, ctx);
			row_free(&w);
			rows++;
		}
		PQclear(res);
		return rows;
	}
	sqlite3_stmt *st;
	if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
		fprintf(stderr, "csvsm-kbs: registry: %s\n", sqlite3_errmsg(r->db));
		return -1;
	}
	for (int i = 0; i < np; i++)
		sqlite3_bind_text(st, i + 1, p[i], -1, SQLITE_STATIC);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		w.ncols = sqlite3_column_count(st) < REG_MAX_COLS ? sqlite3_column_count(st)
								  : REG_MAX_COLS;
		for (int c = 0; c < w.ncols; c++) {
			const unsigned char *t = sqlite3_column_text(st, c);
			w.col[c] = strdup(t ? (const char *)t : "");
		}
		if (cb)
			cb(&w, ctx);
		row_free(&w);
		rows++;
	}
	if (rc != SQLITE_DONE) {
		fprintf(stderr, "csvsm-kbs: registry: %s\n", sqlite3_errmsg(r->db));
		sqlite3_finalize(st);
		return -1;
	}
	if (changed)
		*changed = sqlite3_changes(r->db);
	sqlite3_finalize(st);
	return rows;
}

/* Locked wrapper: every registry call is one statement under the lock. */
static long q(struct registry *r, const char *sql, int np, const char *const *p,
	      void (*cb)(struct row *w, void *ctx), void *ctx, long *changed)
{
	pthread_mutex_lock(&r->lock);
	long n = run(r, sql, np, p, cb, ctx, changed);
	pthread_mutex_unlock(&r->lock);
	return n;
}

static void count_row(struct row *w, void *ctx);

/* A registry made before the vTPM's columns gets them (PostgreSQL under the
 * advisory lock registry_open holds; SQLite in its one writer). */
static int migrate(struct registry *r)
{
	for (size_t i = 0; i < sizeof(vtpm_columns) / sizeof(vtpm_columns[0]); i++) {
		char sql[256];
		long have = 0;
		const char *p[] = {vtpm_columns[i][0]};
		if (!r->pg &&
		    run(r,
			"SELECT COUNT(*) FROM pragma_table_info('kbs_instances') WHERE name = ?1",
			1, p, count_row, &have, NULL) != 1)
			return -1;
		if (have)
			continue;
		snprintf(sql, sizeof(sql), "ALTER TABLE kbs_instances ADD COLUMN %s%s %s",
			 r->pg ? "IF NOT EXISTS " : "", vtpm_columns[i][0], vtpm_columns[i][1]);
		if (run(r, sql, 0, NULL, NULL, NULL, NULL) < 0)
			return -1;
	}
	return 0;
}

int registry_open(const char *url, struct registry **out, char *err, size_t n)
{
	struct registry *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return REG_ERR;
	pthread_mutex_init(&r->lock, NULL);
	if (!strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres:", 9)) {
		r->pg = true;
		r->pc = PQconnectdb(!strncmp(url, "postgres:", 9) ? url + 9 : url);
		if (PQstatus(r->pc) != CONNECTION_OK) {
			snprintf(err, n, "PostgreSQL: %s", PQerrorMessage(r->pc));
			registry_close(r);
			return REG_ERR;
		}
		PQclear(PQexec(r->pc, "SET client_min_messages TO warning"));
		/* Replicas create the tables at once: serialise the DDL. */
		PGresult *lk = PQexec(r->pc, "SELECT pg_advisory_lock(4242)");
		PQclear(lk);
	} else {
		const char *path = !strncmp(url, "sqlite:", 7) ? url + 7 : url;
		if (sqlite3_open_v2(path, &r->db,
				    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
					SQLITE_OPEN_FULLMUTEX,
				    NULL) != SQLITE_OK) {
			snprintf(err, n, "SQLite %s: %s", path,
				 r->db ? sqlite3_errmsg(r->db) : "out of memory");
			registry_close(r);
			return REG_ERR;
		}
		sqlite3_busy_timeout(r->db, 5000);
		if (sqlite3_exec(r->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", NULL,
				 NULL, NULL) != SQLITE_OK) {
			snprintf(err, n, "SQLite %s: %s", path, sqlite3_errmsg(r->db));
			registry_close(r);
			return REG_ERR;
		}
	}
	for (size_t i = 0; i < sizeof(schema) / sizeof(schema[0]); i++)
		if (run(r, schema[i], 0, NULL, NULL, NULL, NULL) < 0) {
			snprintf(err, n, "registry: cannot create its tables");
			registry_close(r);
			return REG_ERR;
		}
	if (migrate(r)) {
		snprintf(err, n, "registry: cannot add the vTPM columns");
		registry_close(r);
		return REG_ERR;
	}
	if (r->pg)
		PQclear(PQexec(r->pc, "SELECT pg_advisory_unlock(4242)"));
	*out = r;
	return REG_OK;
}

void registry_close(struct registry *r)
{
	if (!r)
		return;
	if (r->db)
		sqlite3_close(r->db);
	if (r->pc)
		PQfinish(r->pc);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

const char *registry_backend(const struct registry *r)
{
	return r->pg ? "postgresql" : "sqlite";
}

/* A statement that changes one row when its precondition holds: REG_OK, REG_NO or REG_ERR. */
static int one_row(struct registry *r, const char *sql, int np, const char *const *p)
{
	long ch;
	if (q(r, sql, np, p, NULL, NULL, &ch) < 0)
		return REG_ERR;
	return ch == 1 ? REG_OK : REG_NO;
}

static void i64s(char *b, int64_t v)
{
	snprintf(b, 24, "%lld", (long long)v);
}

static void cpy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

/* ---- sessions ---- */

int registry_session_new(struct registry *r, const char *id, const char *nonce,
			 const char *hash_alg, const char *vtpm, int64_t expires)
{
	char e[24];
	i64s(e, expires);
	const char *p[] = {id, nonce, hash_alg, e, vtpm ? vtpm : ""};
	long ch;
	if (q(r,
	      "INSERT INTO kbs_sessions (id, nonce, hash_alg, state, expires, vtpm) "
	      "VALUES (?1, ?2, ?3, 'authed', ?4, ?5)",
	      5, p, NULL, NULL, &ch) < 0)
		return REG_ERR;
	return ch == 1 ? REG_OK : REG_ERR;
}

static void session_row(struct row *w, void *ctx)
{
	struct reg_session *s = ctx;
	if (w->ncols < 10)
		return;
	cpy(s->id, sizeof(s->id), w->col[0]);
	cpy(s->nonce, sizeof(s->nonce), w->col[1]);
	cpy(s->hash_alg, sizeof(s->hash_alg), w->col[2]);
	cpy(s->state, sizeof(s->state), w->col[3]);
	s->expires = atoll(w->col[4]);
	s->status = atoi(w->col[5]);
	cpy(s->token, sizeof(s->token), w->col[6]);
	cpy(s->tee_pubkey, sizeof(s->tee_pubkey), w->col[7]);
	cpy(s->instance, sizeof(s->instance), w->col[8]);
	cpy(s->vtpm, sizeof(s->vtpm), w->col[9]);
}

#define SESSION_COLS                                                                               \
	"id, nonce, hash_alg, state, expires, status, token, tee_pubkey, instance, vtpm"

int registry_session_begin_attest(struct registry *r, const char *id, int64_t now,
				  struct reg_session *out)
{
	char t[24];
	i64s(t, now);
	const char *p[] = {id, t};
	memset(out, 0, sizeof(*out));
	long n = q(r,
		   "UPDATE kbs_sessions SET state = 'attesting' WHERE id = ?1 AND state = 'authed' "
		   "AND expires > ?2 RETURNING " SESSION_COLS,
		   2, p, session_row, out, NULL);
	return n < 0 ? REG_ERR : n == 1 ? REG_OK : REG_NO;
}

int registry_session_finish(struct registry *r, const char *id, int status, const char *token,
			    const char *tee_pubkey, const char *instance, int64_t expires)
{
	char st[24], e[24];
	i64s(st, status);
	i64s(e, expires);
	const char *p[] = {id, st, token, tee_pubkey, instance, e};
	long ch;
	if (q(r,
	      "UPDATE kbs_sessions SET state = 'attested', status = ?2, token = ?3, "
	      "tee_pubkey = ?4, instance = ?5, expires = ?6 WHERE id = ?1 AND state = 'attesting'",
	      6, p, NULL, NULL, &ch) < 0)
		return REG_ERR;
	return ch == 1 ? REG_OK : REG_NO;
}

int registry_session_get(struct registry *r, const char *id, int64_t now, struct reg_session *out)
{
	char t[24];
	i64s(t, now);
	const char *p[] = {id, t};
	memset(out, 0, sizeof(*out));
	long n = q(r,
		   "SELECT " SESSION_COLS " FROM kbs_sessions WHERE id = ?1 AND state = 'attested' "
		   "AND expires > ?2",
		   2, p, session_row, out, NULL);
	return n < 0 ? REG_ERR : n == 1 ? REG_OK : REG_NO;
}

int registry_session_sweep(struct registry *r, int64_t now)
{
	char t[24];
	i64s(t, now);
	const char *p[] = {t};
	return q(r, "DELETE FROM kbs_sessions WHERE expires <= ?1", 1, p, NULL, NULL, NULL) < 0
		   ? REG_ERR
		   : REG_OK;
}

static void count_row(struct row *w, void *ctx)
{
	*(long *)ctx = w->ncols == 1 ? atol(w->col[0]) : -1;
}

/* the sessions that can release nothing (?1: the contraindicated status) */
#define SESSION_USELESS                                                                            \
	"(state = 'authed' OR (state = 'attested' AND status = CAST(?1 AS INTEGER)))"

int registry_session_count(struct registry *r, int64_t now, int useless, long *count)
{
	char t[24], st[24];
	i64s(t, now);
	i64s(st, useless);
	const char *p[] = {st, t};
	*count = -1;
	long n =
	    q(r, "SELECT COUNT(*) FROM kbs_sessions WHERE " SESSION_USELESS " AND expires > ?2", 2,
	      p, count_row, count, NULL);
	return n == 1 && *count >= 0 ? REG_OK : REG_ERR;
}

int registry_session_evict(struct registry *r, int useless, long n, long *deleted)
{
	char st[24], lim[24];
	i64s(st, useless);
	i64s(lim, n);
	const char *p[] = {st, lim};
	/* one statement: replicas evicting at once each delete what is still there */
	return q(r,
		 "DELETE FROM kbs_sessions WHERE id IN (SELECT id FROM kbs_sessions "
		 "WHERE " SESSION_USELESS " ORDER BY expires LIMIT CAST(?2 AS INTEGER))",
		 2, p, NULL, NULL, deleted) < 0
		   ? REG_ERR
		   : REG_OK;
}

/* ---- instances ---- */

int registry_instance_attested(struct registry *r, const char *id, const char *chip_id,
			       const char *measurement, const char *status, int64_t now)
{
	char t[24];
	i64s(t, now);
	const char *p[] = {id, chip_id, measurement, t, status};
	long ch;
	/* One statement: concurrent attestations of one instance all count. */
	if (q(r,
	      "INSERT INTO kbs_instances (id, chip_id, measurement, first_attested, last_attested,"
	      " attestations, last_status) VALUES (?1, ?2, ?3, ?4, ?4, 1, ?5) "
	      "ON CONFLICT (id) DO UPDATE SET chip_id = excluded.chip_id, measurement = "
	      "excluded.measurement, last_attested = excluded.last_attested, attestations = "
	      "kbs_instances.attestations + 1, last_status = excluded.last_status",
	      5, p, NULL, NULL, &ch) < 0)
		return REG_ERR;
	return ch == 1 ? REG_OK : REG_ERR;
}

#define INSTANCE_COLS                                                                              \
	"id, chip_id, measurement, first_attested, last_attested, attestations, last_status, "     \
	"state_version, lease_holder, lease_expires"

static void instance_row(struct row *w, void *ctx)
{
	struct reg_instance *in = ctx;
	if (w->ncols < 10)
		return;
	cpy(in->id, sizeof(in->id), w->col[0]);
	cpy(in->chip_id, sizeof(in->chip_id), w->col[1]);
	cpy(in->measurement, sizeof(in->measurement), w->col[2]);
	in->first_attested = atoll(w->col[3]);
	in->last_attested = atoll(w->col[4]);
	in->attestations = atoll(w->col[5]);
	cpy(in->last_status, sizeof(in->last_status), w->col[6]);
	in->state_version = strtoull(w->col[7], NULL, 10);
	cpy(in->lease_holder, sizeof(in->lease_holder), w->col[8]);
	in->lease_expires = atoll(w->col[9]);
}

int registry_instance_get(struct registry *r, const char *id, struct reg_instance *out)
{
	const char *p[] = {id};
	memset(out, 0, sizeof(*out));
	long n = q(r, "SELECT " INSTANCE_COLS " FROM kbs_instances WHERE id = ?1", 1, p,
		   instance_row, out, NULL);
	return n < 0 ? REG_ERR : n == 1 ? REG_OK : REG_NO;
}

struct list_ctx {
	void (*cb)(const struct reg_instance *in, void *ctx);
	void *ctx;
};

static void list_row(struct row *w, void *ctx)
{
	struct list_ctx *l = ctx;
	struct reg_instance in = {0};
	instance_row(w, &in);
	l->cb(&in, l->ctx);
}

int registry_instance_list(struct registry *r, void (*cb)(const struct reg_instance *in, void *ctx),
			   void *ctx)
{
	struct list_ctx l = {cb, ctx};
	return q(r, "SELECT " INSTANCE_COLS " FROM kbs_instances ORDER BY id", 0, NULL, list_row,
		 &l, NULL) < 0
		   ? REG_ERR
		   : REG_OK;
}

int registry_state_advance(struct registry *r, const char *id, uint64_t expected, uint64_t next)
{
	char e[24], x[24];
	if (next <= expected || next > INT64_MAX)
		return REG_NO;
	snprintf(e, sizeof(e), "%llu", (unsigned long long)expected);
	snprintf(x, sizeof(x), "%llu", (unsigned long long)next);
	const char *p[] = {id, e, x};
	long ch;
	if (q(r, "UPDATE kbs_instances SET state_version = ?3 WHERE id = ?1 AND state_version = ?2",
	      3, p, NULL, NULL, &ch) < 0)
		return REG_ERR;
	return ch == 1 ? REG_OK : REG_NO;
}

int registry_lease_acquire(struct registry *r, const char *id, const char *holder, int64_t now,
			   int64_t until)
{
	char t[24], u[24];
	if (until <= now || !*holder)
		return REG_NO;
	i64s(t, now);
	i64s(u, until);
	const char *p[] = {id, holder, t, u};
	long ch;
	if (q(r,
	      "UPDATE kbs_instances SET lease_holder = ?2, lease_expires = ?4 WHERE id = ?1 AND "
	      "(lease_holder = '' OR lease_holder = ?2 OR lease_expires <= ?3)",
	      4, p, NULL, NULL, &ch) < 0)
		return REG_ERR;
	return ch == 1 ? REG_OK : REG_NO;
}

int registry_lease_release(struct registry *r, const char *id, const char *holder)
{
	const char *p[] = {id, holder};
	long ch;
	if (q(r,
	      "UPDATE kbs_instances SET lease_holder = '', lease_expires = 0 WHERE id = ?1 AND "
	      "lease_holder = ?2",
	      2, p, NULL, NULL, &ch) < 0)
		return REG_ERR;
	return ch == 1 ? REG_OK : REG_NO;
}

/* ---- resources ---- */

int registry_resource_put(struct registry *r, const char *repo, const char *type, const char *tag,
			  const char *rule, const uint8_t *val, size_t len)
{
	static const char hx[] = "0123456789abcdef";
	char *h;
	long ch;

	if (len > REG_VALUE_MAX || !(h = malloc(2 * len + 1)))
		return REG_ERR;
	for (size_t i = 0; i < len; i++) {
		h[2 * i] = hx[val[i] >> 4];
		h[2 * i + 1] = hx[val[i] & 15];
	}
	h[2 * len] = 0;
	const char *p[] = {repo, type, tag, rule, h};
	long n = q(r,
		   "INSERT INTO kbs_resources (repository, type, tag, rule, value) VALUES "
		   "(?1, ?2, ?3, ?4, ?5) ON CONFLICT (repository, type, tag) DO UPDATE SET "
		   "rule = excluded.rule, value = excluded.value",
		   5, p, NULL, NULL, &ch);
	memset(h, 0, 2 * len);
	free(h);
	return n < 0 ? REG_ERR : REG_OK;
}

struct res_ctx {
	char *rule;
	uint8_t *val;
	size_t len;
	bool bad;
};

static int hv(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void res_row(struct row *w, void *ctx)
{
	struct res_ctx *c = ctx;
	size_t l = w->ncols == 2 ? strlen(w->col[1]) : 1;
	if (w->ncols != 2 || l % 2 || l / 2 > REG_VALUE_MAX ||
	    !(c->val = malloc(l / 2 ? l / 2 : 1))) {
		c->bad = true;
		return;
	}
	snprintf(c->rule, 20, "%s", w->col[0]);
	for (size_t i = 0; i < l / 2; i++) {
		int a = hv(w->col[1][2 * i]), b = hv(w->col[1][2 * i + 1]);
		if (a < 0 || b < 0)
			c->bad = true;
		c->val[i] = (uint8_t)(a << 4 | (b & 15));
	}
	c->len = l / 2;
	memset(w->col[1], 0, l);
}

int registry_resource_get(struct registry *r, const char *repo, const char *type, const char *tag,
			  char rule[20], uint8_t **val, size_t *len)
{
	struct res_ctx c = {rule, NULL, 0, false};
	const char *p[] = {repo, type, tag};
	long n = q(r,
		   "SELECT rule, value FROM kbs_resources WHERE repository = ?1 AND type = ?2 AND "
		   "tag = ?3",
		   3, p, res_row, &c, NULL);
	if (n < 0 || c.bad) {
		free(c.val);
		return REG_ERR;
	}
	if (n == 0)
		return REG_NO;
	*val = c.val;
	*len = c.len;
	return REG_OK;
}

/* ---- the persistent vTPM (registry.h) ---- */

static void hexs(char *out, const uint8_t *b, size_t n)
{
	static const char hx[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hx[b[i] >> 4];
		out[2 * i + 1] = hx[b[i] & 15];
	}
	out[2 * n] = 0;
}

#define VTPM_COLS                                                                                  \
	"id, state_key, state_version, state_sha256, lease_holder, lease_expires, lease_seconds, " \
	"lease_seq, consent, ek, @NOW"

static void vtpm_row(struct row *w, void *ctx)
{
	struct reg_vtpm *v = ctx;
	if (w->ncols < 11 || strlen(w->col[1]) != 2 * REG_VTPM_KEY)
		return;
	cpy(v->id, sizeof(v->id), w->col[0]);
	for (size_t i = 0; i < REG_VTPM_KEY; i++) {
		int a = hv(w->col[1][2 * i]), b = hv(w->col[1][2 * i + 1]);
		v->state_key[i] = (uint8_t)(a << 4 | (b & 15));
	}
	memset(w->col[1], 0, 2 * REG_VTPM_KEY);
	v->version = strtoull(w->col[2], NULL, 10);
	cpy(v->sealed_sha256, sizeof(v->sealed_sha256), w->col[3]);
	cpy(v->lease_holder, sizeof(v->lease_holder), w->col[4]);
	v->lease_expires = atoll(w->col[5]);
	v->lease_seconds = atoll(w->col[6]);
	v->lease_seq = strtoull(w->col[7], NULL, 10);
	cpy(v->consent, sizeof(v->consent), w->col[8]);
	cpy(v->ek, sizeof(v->ek), w->col[9]);
	v->now = atoll(w->col[10]);
}

int registry_vtpm_register(struct registry *r, const char *id, const uint8_t key[REG_VTPM_KEY],
			   int64_t lease_seconds, bool reset)
{
	char k[2 * REG_VTPM_KEY + 1], ls[24];
	long ch;
	if (lease_seconds < 1)
		return REG_NO;
	hexs(k, key, REG_VTPM_KEY);
	i64s(ls, lease_seconds);
	const char *p[] = {id, k, ls};
	long n = q(
	    r,
	    reset ? "INSERT INTO kbs_instances (id, chip_id, measurement, first_attested, "
		    "last_attested, attestations, last_status, state_key, lease_seconds) VALUES "
		    "(?1, '', '', 0, 0, 0, 'registered', ?2, CAST(?3 AS BIGINT)) ON CONFLICT (id) "
		    "DO UPDATE SET state_key = excluded.state_key, lease_seconds = "
		    "excluded.lease_seconds, state_version = 0, state_sha256 = '', consent = '', "
		    "ek = '', lease_holder = '', lease_expires = 0, lease_seq = 0"
		  : "INSERT INTO kbs_instances (id, chip_id, measurement, first_attested, "
		    "last_attested, attestations, last_status, state_key, lease_seconds) VALUES "
		    "(?1, '', '', 0, 0, 0, 'registered', ?2, CAST(?3 AS BIGINT)) ON CONFLICT (id) "
		    "DO NOTHING",
	    3, p, NULL, NULL, &ch);
	memset(k, 0, sizeof(k));
	return n < 0 ? REG_ERR : ch == 1 ? REG_OK : REG_NO;
}

int registry_vtpm_get(struct registry *r, const char *id, struct reg_vtpm *out)
{
	const char *p[] = {id};
	memset(out, 0, sizeof(*out));
	long n = q(r, "SELECT " VTPM_COLS " FROM kbs_instances WHERE id = ?1 AND state_key <> ''",
		   1, p, vtpm_row, out, NULL);
	return n < 0 ? REG_ERR : n == 1 ? REG_OK : REG_NO;
}

int registry_vtpm_lease(struct registry *r, const char *id, const char *holder,
			struct reg_vtpm *out)
{
	const char *p[] = {id, holder};
	memset(out, 0, sizeof(*out));
	if (!*holder)
		return REG_NO;
	/* SET reads the row as it was: the sequence restarts for a new holder,
	 * and the consent goes to the first holder of a never-committed state. */
	long n =
	    q(r,
	      "UPDATE kbs_instances SET lease_holder = ?2, lease_expires = @NOW + lease_seconds, "
	      "lease_seq = CASE WHEN lease_holder = ?2 THEN lease_seq ELSE 0 END, "
	      "consent = CASE WHEN state_version = 0 AND consent = '' THEN ?2 ELSE consent END "
	      "WHERE id = ?1 AND state_key <> '' AND (lease_holder = '' OR lease_holder = ?2 OR "
	      "lease_expires <= @NOW) RETURNING " VTPM_COLS,
	      2, p, vtpm_row, out, NULL);
	return n < 0 ? REG_ERR : n == 1 ? REG_OK : REG_NO;
}

int registry_vtpm_commit(struct registry *r, const char *id, const char *holder, uint64_t seq,
			 uint64_t version, const char *sealed_sha256, struct reg_vtpm *out)
{
	char sq[24], v[24];
	struct reg_vtpm tmp;
	if (!out)
		out = &tmp;
	memset(out, 0, sizeof(*out));
	if (!*holder || version == 0 || version > INT64_MAX || seq > INT64_MAX ||
	    strlen(sealed_sha256) != 64)
		return REG_NO;
	snprintf(sq, sizeof(sq), "%llu", (unsigned long long)seq);
	snprintf(v, sizeof(v), "%llu", (unsigned long long)version);
	const char *p[] = {id, holder, sq, v, sealed_sha256};
	long n =
	    q(r,
	      "UPDATE kbs_instances SET state_version = CAST(?4 AS BIGINT), state_sha256 = ?5, "
	      "lease_seq = CAST(?3 AS BIGINT), lease_expires = @NOW + lease_seconds "
	      "WHERE id = ?1 AND state_key <> '' AND lease_holder = ?2 AND "
	      "lease_seq < CAST(?3 AS BIGINT) AND (state_version + 1 = CAST(?4 AS BIGINT) OR "
	      "(state_version = CAST(?4 AS BIGINT) AND state_sha256 = ?5)) RETURNING " VTPM_COLS,
	      5, p, vtpm_row, out, NULL);
	if (n < 0)
		return REG_ERR;
	if (n == 1)
		return REG_OK;
	/* not taken: the row as it is, for the refusal's reason */
	return registry_vtpm_get(r, id, out) == REG_ERR ? REG_ERR : REG_NO;
}

int registry_vtpm_ek(struct registry *r, const char *id, const char *holder, const char *ek)
{
	const char *p[] = {id, holder, ek};
	if (!*holder || strlen(ek) != 64)
		return REG_NO;
	return one_row(
	    r,
	    "UPDATE kbs_instances SET ek = ?3 WHERE id = ?1 AND state_key <> '' AND "
	    "lease_holder = ?2 AND consent = ?2 AND state_version = 0 AND (ek = '' OR ek = ?3)",
	    3, p);
}

int registry_vtpm_release(struct registry *r, const char *id)
{
	const char *p[] = {id};
	return one_row(
	    r,
	    "UPDATE kbs_instances SET lease_holder = '', lease_expires = 0 WHERE id = ?1 "
	    "AND state_key <> ''",
	    1, p);
}
