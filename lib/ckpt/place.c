/*
 * place.c - where the engine's background threads run, and at which
 * priority (spotckpt_set_background).
 *
 * Each copy thread and the writer call ckpt__place_apply() before a job;
 * when the settings changed since the thread last applied them, it sets
 * its own CPU affinity (pthread_setaffinity_np) and, for the writer, its
 * own nice value (setpriority on its thread id: Linux keeps a nice value
 * per thread).  Both are best effort: a mask naming no online CPU, or a
 * nice value the process may not lower again, leaves the thread as it
 * was.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine.h"
#include "io.h"

void ckpt__place_apply(struct ckpt_place *p, unsigned *seen, int is_writer)
{
	unsigned g;
	cpu_set_t set;
	uint64_t mask;

	if (!p)
		return;
	g = atomic_load(&p->gen);
	if (g == *seen)
		return;
	*seen = g;
	mask = is_writer ? p->writer_cpus : p->copy_cpus;
	CPU_ZERO(&set);
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (mask ? c < 64 && (mask >> c & 1) : 1)
			CPU_SET(c, &set);
	}
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	if (is_writer)
		setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), p->nice);
}

SPOTCKPT_API int spotckpt_set_background(struct spotckpt *e,
					 const struct spotckpt_background *b)
{
	ckpt__errmsg_clear();
	if (!e || !b)
		return ckpt__fail(-EINVAL, "set_background: NULL argument");
	if (b->nice < 0 || b->nice > 19)
		return ckpt__fail(-EINVAL, "set_background: nice %d is not 0..19",
				  b->nice);
	pthread_mutex_lock(&e->mu);
	e->place.nice = b->nice;
	e->place.writer_cpus = b->writer_cpus;
	e->place.copy_cpus = b->copy_cpus;
	/* each lane (directory) its share of the cap */
	e->io->max_bytes_per_s = b->write_bytes_per_s / (uint64_t)e->stripes.n;
	ckpt__lanes_set_rate(e->stripes.lanes, e->io->max_bytes_per_s);
	atomic_fetch_add(&e->place.gen, 1);
	pthread_mutex_unlock(&e->mu);
	return 0;
}
