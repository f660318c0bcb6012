/*
 * ckpt_bench_raw.c - the raw peers of `spotrun ckpt bench`: a plain
 * sequential O_DIRECT write + fsync and read of the same bytes, striped
 * over the bench's directories the way a user would stripe by hand (piece
 * k of the state to directory k, one thread per directory, all at once),
 * and the per-phase breakdown of both sides for the JSON.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckpt_bench.h"

#define RAW_CHUNK (64u << 20)

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void bench_stripe(uint64_t len, int n, int k, uint64_t *off, uint64_t *size)
{
	uint64_t per = len / (uint64_t)n / 4096 * 4096;

	*off = per * (uint64_t)k;
	*size = k == n - 1 ? len - *off : per;
}

struct raw_job {
	const char *path;
	uint8_t *buf;        /* the piece */
	uint64_t len;
	int write, direct, rc;
	struct bench_raw_phases ph;
};

static int raw_write_one(struct raw_job *j)
{
	int fd = open(j->path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
	uint64_t body, off = 0;
	double t, c;
	int rc = 0;

	j->direct = fd >= 0;
	if (fd < 0)
		fd = open(j->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -errno;
	body = j->direct ? j->len / 4096 * 4096 : j->len;
	t = bench_now();
	c = thread_cpu();
	while (off < body) {
		uint64_t k = body - off < RAW_CHUNK ? body - off : RAW_CHUNK;
		ssize_t w = pwrite(fd, j->buf + off, k, (off_t)off);

		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			break;
		}
		off += (uint64_t)w;
	}
	if (rc == 0 && body < j->len) { /* unaligned tail, buffered */
		int fd2 = open(j->path, O_WRONLY);

		if (fd2 < 0 || pwrite(fd2, j->buf + body, j->len - body,
				      (off_t)body) != (ssize_t)(j->len - body))
			rc = -EIO;
		if (fd2 >= 0)
			close(fd2);
	}
	j->ph.write_s = bench_now() - t;
	j->ph.write_cpu_s = thread_cpu() - c;
	t = bench_now();
	c = thread_cpu();
	if (rc == 0 && fsync(fd) != 0)
		rc = -errno;
	j->ph.fsync_s = bench_now() - t;
	j->ph.fsync_cpu_s = thread_cpu() - c;
	close(fd);
	return rc;
}

static int raw_read_one(struct raw_job *j)
{
	int fd = open(j->path, O_RDONLY | O_DIRECT);
	uint64_t off = 0, want = (j->len + 4095) / 4096 * 4096;

	j->direct = fd >= 0;
	if (fd < 0) {
		fd = open(j->path, O_RDONLY);
		if (fd >= 0)
			posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	}
	if (fd < 0)
		return -errno;
	while (off < want) {
		uint64_t k = want - off < RAW_CHUNK ? want - off : RAW_CHUNK;
		ssize_t r = pread(fd, j->buf + off, k, (off_t)off);

		if (r < 0) {
			close(fd);
			return -errno;
		}
		if (r == 0)
			break;
		off += (uint64_t)r;
	}
	close(fd);
	return off >= j->len ? 0 : -EIO;
}

static void *raw_thread(void *p)
{
	struct raw_job *j = p;

	j->rc = j->write ? raw_write_one(j) : raw_read_one(j);
	return NULL;
}

/* Run the n pieces at once (the first in this thread). */
static int raw_run(const char *const *paths, int n, uint8_t *buf,
		   uint64_t len, int write, double *secs, int *direct,
		   struct bench_raw_phases *ph)
{
	struct raw_job j[BENCH_MAX_DIRS];
	pthread_t th[BENCH_MAX_DIRS];
	int started[BENCH_MAX_DIRS] = { 0 }, rc = 0;
	double t0;

	if (n < 1 || n > BENCH_MAX_DIRS)
		return -EINVAL;
	memset(j, 0, sizeof j);
	for (int k = 0; k < n; k++) {
		uint64_t off, size;

		bench_stripe(len, n, k, &off, &size);
		j[k].path = paths[k];
		j[k].buf = buf + off;
		j[k].len = size;
		j[k].write = write;
	}
	t0 = bench_now();
	for (int k = 1; k < n; k++)
		started[k] = pthread_create(&th[k], NULL, raw_thread, &j[k]) == 0;
	raw_thread(&j[0]);
	for (int k = 1; k < n; k++) {
		if (started[k])
			pthread_join(th[k], NULL);
		else
			raw_thread(&j[k]); /* no thread: in turn, still correct */
	}
	*secs = bench_now() - t0;
	*direct = 1;
	if (ph)
		memset(ph, 0, sizeof *ph);
	for (int k = 0; k < n; k++) {
		*direct &= j[k].direct;
		if (j[k].rc && rc == 0)
			rc = j[k].rc;
		if (ph) {
			ph->write_s += j[k].ph.write_s;
			ph->write_cpu_s += j[k].ph.write_cpu_s;
			ph->fsync_s += j[k].ph.fsync_s;
			ph->fsync_cpu_s += j[k].ph.fsync_cpu_s;
		}
	}
	return rc;
}

int bench_raw_write(const char *const *paths, int n, const uint8_t *buf,
		    uint64_t len, double *secs, int *direct,
		    struct bench_raw_phases *ph)
{
	for (int k = 0; k < n; k++)
		unlink(paths[k]);
	return raw_run(paths, n, (uint8_t *)buf, len, 1, secs, direct, ph);
}

int bench_raw_read(const char *const *paths, int n, uint8_t *buf,
		   uint64_t len, double *secs, int *direct)
{
	return raw_run(paths, n, buf, len, 0, secs, direct, NULL);
}

static json_t *phase(double wall, double cpu)
{
	return json_pack("{s:f,s:f}", "wall_s", wall, "cpu_s", cpu);
}

json_t *bench_phases_json(const struct spotckpt_write_profile *p,
			  double proc_cpu_s)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	for (int i = 0; i < SPOTCKPT_WP_COUNT; i++)
		json_object_set_new(o, spotckpt_wphase_name(i),
				    phase((double)p->wall_ns[i] * 1e-9,
					  (double)p->cpu_ns[i] * 1e-9));
	json_object_set_new(o, "commit_s", json_real((double)p->commit_ns * 1e-9));
	json_object_set_new(o, "writer_cpu_s",
			    json_real((double)p->cpu_total_ns * 1e-9));
	json_object_set_new(o, "process_cpu_s", json_real(proc_cpu_s));
	json_object_set_new(o, "writes", json_integer((json_int_t)p->writes));
	json_object_set_new(o, "fsyncs", json_integer((json_int_t)p->fsyncs));
	json_object_set_new(o, "lanes", json_integer((json_int_t)p->lanes));
	json_object_set_new(o, "fixed_buffers", json_boolean(p->fixed_buffers));
	json_object_set_new(o, "preallocated", json_boolean(p->preallocated));
	return o;
}

json_t *bench_raw_phases_json(const struct bench_raw_phases *ph)
{
	return json_pack("{s:o,s:o}", "write", phase(ph->write_s, ph->write_cpu_s),
			 "fsync", phase(ph->fsync_s, ph->fsync_cpu_s));
}
