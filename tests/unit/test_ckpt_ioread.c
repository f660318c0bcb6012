/*
 * test_ckpt_ioread.c - the reading stream (lib/ckpt/ioread.c) on its own:
 * many ranges through a small queue (more ranges than the queue holds,
 * empty ones, unaligned ones, ones that cross chunk boundaries, several
 * files), each delivered whole and in order and finished exactly once in
 * the order handed out (80 empty ranges in a row fill the FIFO of open
 * ranges with nothing in flight); and the stop paths: a sink error, a finish error
 * and a file that cannot be opened end the stream with that error, the
 * failing range gets it, the ones after it -ECANCELED, and no range is
 * asked for after the error.  Run with io_uring and with the pread
 * fallback (SPOTCKPT_NO_URING), with and without O_DIRECT.
 */
#include "ckpt_test.h"

#include <fcntl.h>

#include "../../lib/ckpt/internal.h"

#define FILE_BYTES (3u << 20)
#define NR 300
#define CHUNK (64u << 10)

static uint8_t pattern(int file, uint64_t off)
{
	return (uint8_t)((off * 2654435761u) >> 13) ^ (uint8_t)(file * 77);
}

struct rng_def { int file; uint64_t off, len; };

struct src_state {
	char *path[2];
	struct rng_def def[NR];
	uint64_t at[NR];       /* next offset each range's sink expects */
	int finished[NR];      /* times finish ran */
	int frc[NR];           /* the rc finish got */
	int handed, nfin;      /* ranges handed out / finished so far */
	int bad_sink, bad_finish, bad_open; /* range that fails, or -1 */
	int order_ok;
};

struct rud { struct src_state *s; int i; };
static struct rud ruds[NR];

static int t_sink(void *ud, uint64_t off, const uint8_t *p, uint64_t n)
{
	struct rud *u = ud;
	struct src_state *s = u->s;
	const struct rng_def *d = &s->def[u->i];

	assert_int_equal(off, s->at[u->i]);
	assert_true(off >= d->off && off + n <= d->off + d->len);
	for (uint64_t k = 0; k < n; k++) {
		if (p[k] != pattern(d->file, off + k))
			fail_msg("range %d: byte %llu differs", u->i,
				 (unsigned long long)(off + k));
	}
	s->at[u->i] = off + n;
	if (u->i == s->bad_sink && n > 0)
		return -EIO;
	return 0;
}

static int t_next(void *ud, struct ckpt_read_range *r)
{
	struct src_state *s = ud;
	int i = s->handed;

	if (i == NR)
		return 0;
	ruds[i].s = s;
	ruds[i].i = i;
	r->path = i == s->bad_open ? "/nonexistent/spotrun-ioread-test"
				   : s->path[s->def[i].file];
	r->off = s->def[i].off;
	r->len = s->def[i].len;
	r->sink = t_sink;
	r->ud = &ruds[i];
	s->at[i] = s->def[i].off;
	s->handed++;
	return 1;
}

static int t_finish(void *ud, struct ckpt_read_range *r, int rc)
{
	struct src_state *s = ud;
	struct rud *u = r->ud;

	if (u->i != s->nfin)
		s->order_ok = 0;
	s->nfin++;
	s->finished[u->i]++;
	s->frc[u->i] = rc;
	if (rc == 0) {
		/* every byte arrived */
		assert_int_equal(s->at[u->i], s->def[u->i].off + s->def[u->i].len);
		if (u->i == s->bad_finish)
			return -EBADMSG;
	}
	return rc;
}

static char *make_file(const char *dir, int file)
{
	char *p = NULL;
	uint8_t *b = malloc(FILE_BYTES);
	int fd;

	assert_non_null(b);
	assert_true(asprintf(&p, "%s/f%d", dir, file) > 0);
	for (uint64_t i = 0; i < FILE_BYTES; i++)
		b[i] = pattern(file, i);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, FILE_BYTES), FILE_BYTES);
	close(fd);
	free(b);
	return p;
}

/* Ranges of every shape: empty, 1 byte, unaligned, chunk-crossing,
 * back to back and with gaps, alternating files in runs. */
static void make_ranges(struct src_state *s)
{
	uint64_t x = 88172645463325252ull, at = 0;

	for (int i = 0; i < NR; i++) {
		uint64_t len;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		switch (i % 6) {
		case 0: len = 0; break;
		case 1: len = 1 + x % 100; break;
		case 2: len = CHUNK * 2 + x % 5000; break;
		default: len = x % 20000; break;
		}
		if (at + len > FILE_BYTES)
			at = 0;
		if (i % 7 == 3)
			at += x % 9000; /* a gap */
		if (at + len > FILE_BYTES)
			at = 0;
		if (i >= 200 && i < 280) { /* more empty ranges than the FIFO */
			len = 0;
			at = 8192;
		}
		s->def[i].file = (i / 25) % 2;
		s->def[i].off = at;
		s->def[i].len = len;
		at += len;
	}
}

static int run(struct src_state *s, int bad_sink, int bad_finish,
	       int bad_open)
{
	struct ckpt_read_src src = { t_next, t_finish, s };
	struct ckpt_io *io = NULL;
	int rc;

	memset(s->finished, 0, sizeof s->finished);
	memset(s->frc, 0, sizeof s->frc);
	s->handed = s->nfin = 0;
	s->order_ok = 1;
	s->bad_sink = bad_sink;
	s->bad_finish = bad_finish;
	s->bad_open = bad_open;
	assert_int_equal(ckpt__io_new(4, CHUNK, &io), 0);
	rc = ckpt__io_read_stream(io, &src);
	ckpt__io_free(io);
	assert_true(s->order_ok);
	assert_int_equal(s->nfin, s->handed);
	for (int i = 0; i < s->handed; i++)
		assert_int_equal(s->finished[i], 1);
	return rc;
}

static void check_stop(struct src_state *s, int bad, int want)
{
	assert_true(s->handed > bad);
	for (int i = 0; i < s->handed; i++) {
		if (i < bad)
			assert_int_equal(s->frc[i], 0);
		else if (i == bad)
			assert_int_equal(s->frc[i], want);
		else
			assert_int_equal(s->frc[i], -ECANCELED);
	}
	assert_true(s->handed < NR); /* stopped asking */
}

static void all_cases(void)
{
	char *dir = ct_tmpdir();
	struct src_state *s = calloc(1, sizeof *s);

	assert_non_null(s);
	s->path[0] = make_file(dir, 0);
	s->path[1] = make_file(dir, 1);
	make_ranges(s);

	assert_int_equal(run(s, -1, -1, -1), 0);
	assert_int_equal(s->handed, NR);
	for (int i = 0; i < NR; i++)
		assert_int_equal(s->frc[i], 0);

	assert_int_equal(run(s, 122, -1, -1), -EIO);
	check_stop(s, 122, -EIO);

	assert_int_equal(run(s, -1, 40, -1), -EBADMSG);
	for (int i = 0; i <= 40; i++)
		assert_int_equal(s->frc[i], 0); /* finish itself turned it */
	for (int i = 41; i < s->handed; i++)
		assert_int_equal(s->frc[i], -ECANCELED);
	assert_true(s->handed < NR);

	assert_int_equal(run(s, -1, -1, 77), -ENOENT);
	check_stop(s, 77, -ENOENT);

	for (int f = 0; f < 2; f++) {
		unlink(s->path[f]);
		free(s->path[f]);
	}
	free(s);
	ct_rmtree(dir);
	free(dir);
}

static void test_stream_ring(void **st)
{
	(void)st;
	all_cases();
}

static void test_stream_buffered(void **st)
{
	(void)st;
	setenv("SPOTCKPT_NO_DIRECT", "1", 1);
	all_cases();
	unsetenv("SPOTCKPT_NO_DIRECT");
}

static void test_stream_pread(void **st)
{
	(void)st;
	setenv("SPOTCKPT_NO_URING", "1", 1);
	all_cases();
	unsetenv("SPOTCKPT_NO_URING");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_ring),
		cmocka_unit_test(test_stream_buffered),
		cmocka_unit_test(test_stream_pread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
