/* plan_peer.c - spotrun.peer_replicas in `spotrun plan` (plan_peer.h). */
#include "plan_peer.h"

#include <stdio.h>

#define GIB 1073741824.0

uint64_t plan_peer_bytes(const struct jobspec *js)
{
	if (js->peer_replicas <= 0)
		return 0;
	return (uint64_t)js->peer_replicas * js->ckpt_bytes;
}

/* The first feasible placement, or NULL. */
static const struct plan_placement *first(const struct plan_result *r)
{
	return r->n_feasible ? &r->items[0] : NULL;
}

/* 1 fits, 0 does not, -1 unknown (no size or no RAM figure). */
static int fits(const struct plan_result *r, const struct jobspec *js)
{
	const struct plan_placement *p = first(r);
	uint64_t need = plan_peer_bytes(js);

	if (!p || !need || !(p->o.memory_gib > 0))
		return -1;
	/* the node's own part is in memory too while it saves */
	return (double)need + (double)js->ckpt_bytes <= p->o.memory_gib * GIB;
}

int plan_peer_check(const struct plan_result *r, const struct jobspec *js,
		    const char *file)
{
	const struct plan_placement *p = first(r);

	if (js->peer_replicas <= 0 || fits(r, js) != 0)
		return 0;
	fprintf(stderr, "spotrun plan: %s: spotrun.peer_replicas: %d copy(ies) "
		"of a rank's part (%.1f GiB, from spotrun.checkpoint.size) "
		"beside the node's own do not fit %s's %.0f GiB of RAM; lower "
		"spotrun.peer_replicas or choose a larger instance\n", file,
		js->peer_replicas, (double)plan_peer_bytes(js) / GIB,
		p->o.instance_type, p->o.memory_gib);
	return -1;
}

void plan_peer_print(const struct plan_result *r, const struct jobspec *js)
{
	const struct plan_placement *p = first(r);
	int f = fits(r, js);

	if (js->peer_replicas <= 0)
		return;
	if (!js->ckpt_bytes) {
		printf("\npeer copies: %d per node (spotrun.peer_replicas); "
		       "memory not checked: give spotrun.checkpoint.size\n",
		       js->peer_replicas);
		return;
	}
	printf("\npeer copies: %d per node (spotrun.peer_replicas): up to "
	       "%.1f GiB of RAM per node beside its own part", js->peer_replicas,
	       (double)plan_peer_bytes(js) / GIB);
	if (f < 0)
		printf(" (the node's RAM is not in the catalog)\n");
	else
		printf("; %s has %.0f GiB: %s\n", p->o.instance_type,
		       p->o.memory_gib, f ? "fits" : "does NOT fit");
}

json_t *plan_peer_json(const struct plan_result *r, const struct jobspec *js)
{
	int f = fits(r, js);

	if (js->peer_replicas <= 0)
		return NULL;
	return json_pack("{s:i,s:I,s:o}", "replicas", js->peer_replicas,
			 "bytes_per_node", (json_int_t)plan_peer_bytes(js),
			 "fits", f < 0 ? json_null() : json_boolean(f));
}
