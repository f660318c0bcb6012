/*
 * prof.c - where a tier-2 write spends its time (spotckpt_write_profile).
 *
 * A writing thread carries one struct ckpt_prof and calls
 * ckpt__prof_enter(p, phase) whenever it moves on to other work; the wall
 * and thread-CPU time since the previous call are charged to the phase it
 * leaves.  So every moment of the thread belongs to exactly one phase, and
 * a phase's wall minus its CPU is the time the thread was not running
 * there: blocked on the device, or waiting for a core.  Both clocks cost a
 * vDSO call or a short syscall; a write of 1 GiB in 8 MiB chunks switches
 * phase a few hundred times.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "engine.h"

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void ckpt__prof_start(struct ckpt_prof *p, int phase)
{
	if (!p)
		return;
	memset(p, 0, sizeof *p);
	p->cur = phase;
	p->t_wall = clock_ns(CLOCK_MONOTONIC);
	p->t_cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

void ckpt__prof_enter(struct ckpt_prof *p, int phase)
{
	int64_t w, c;

	if (!p || p->cur == phase)
		return;
	w = clock_ns(CLOCK_MONOTONIC);
	c = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	if (p->cur >= 0 && p->cur < SPOTCKPT_WP_COUNT) {
		p->wall_ns[p->cur] += w - p->t_wall;
		p->cpu_ns[p->cur] += c - p->t_cpu;
	}
	p->cur = phase;
	p->t_wall = w;
	p->t_cpu = c;
}

void ckpt__prof_add(struct ckpt_prof *dst, const struct ckpt_prof *src)
{
	for (int i = 0; i < SPOTCKPT_WP_COUNT; i++) {
		dst->wall_ns[i] += src->wall_ns[i];
		dst->cpu_ns[i] += src->cpu_ns[i];
	}
	dst->writes += src->writes;
	dst->fsyncs += src->fsyncs;
	dst->fixed_buffers |= src->fixed_buffers;
}

SPOTCKPT_API const char *spotckpt_wphase_name(int32_t phase)
{
	static const char *const names[SPOTCKPT_WP_COUNT] = {
		"prepare", "hash", "submit", "wait", "manifest", "fsync",
		"publish", "retention",
	};

	return phase >= 0 && phase < SPOTCKPT_WP_COUNT ? names[phase] : NULL;
}

SPOTCKPT_API int spotckpt_write_profile(struct spotckpt *e,
					struct spotckpt_write_profile *out)
{
	if (!e || !out)
		return -EINVAL;
	pthread_mutex_lock(&e->mu);
	*out = e->wprof;
	pthread_mutex_unlock(&e->mu);
	return 0;
}

void ckpt__prof_publish(const struct ckpt_commit_res *res,
			struct spotckpt_write_profile *out)
{
	const struct ckpt_prof *p = &res->prof;

	memset(out, 0, sizeof *out);
	for (int i = 0; i < SPOTCKPT_WP_COUNT; i++) {
		out->wall_ns[i] = p->wall_ns[i];
		out->cpu_ns[i] = p->cpu_ns[i];
		out->cpu_total_ns += p->cpu_ns[i];
	}
	out->commit_ns = res->commit_ns;
	out->bytes = res->bytes;
	out->writes = p->writes;
	out->fsyncs = (uint32_t)p->fsyncs;
	out->lanes = (uint32_t)res->lanes;
	out->fixed_buffers = p->fixed_buffers;
	out->preallocated = res->preallocated;
}
