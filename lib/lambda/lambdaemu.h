/*
 * lambdaemu.h - a Lambda Cloud emulator for the local spot cloud: the
 * REST API the lambda driver calls, over the Lambda pools of the local
 * market (cloud/localmkt.h; Lambda sells on-demand only: a pool's trace
 * says whether its region has capacity now), and an `ssh` for the
 * driver's bootstrap step.
 *
 *   {url}/api/v1/...  (Authorization: Bearer <the API key>, else 401
 *        global/invalid-api-key; while throttled 429)
 *     GET  instance-types   every type of the market with its price
 *          (price_cents_per_hour) and regions_with_capacity_available
 *          (the trace, or --capacity TYPE=none|plenty)
 *     POST instance-operations/launch {"region_name","instance_type_name",
 *          "ssh_key_names":[K],"quantity":1,"name"} -> instance_ids; a
 *          type it does not sell: 400 global/invalid-parameters; a region
 *          without capacity: 400 instance-operations/launch/insufficient-
 *          capacity; over --quota instances: 400 global/quota-exceeded
 *     GET  instances        every instance (booting for --boot-s real s,
 *          then active; terminated ones stay listed)
 *     POST instance-operations/terminate {"instance_ids":[...]}
 *   POST {url}/emu/fail?id=ID   the host fails: terminated, its processes
 *        killed (no notice: Lambda gives none)
 *   POST {url}/emu/throttle?n=K   the next K API calls answer 429
 *   POST {url}/emu/ssh?ip=IP    the ssh stand-in's: the body (a script)
 *        run on the active instance of that IP; 503 while it boots
 *   GET  {url}/emu/state   {"instances":[{id,name,ip,status,type,region}]}
 *   GET  {url}/emu/requests  every POST to the API recorded (the last
 *        512): [{method,path,body}]
 *
 * Each instance has an IP of 127.0.X.Y that names its directory,
 * <work_dir>/<ip>/.  <work_dir>/ssh (written at start) takes the
 * driver's ssh arguments (`[-i KEY] -o ... -- USER@IP 'sudo -n sh -s'`):
 * it appends IP to <work_dir>/ssh-calls, exits 255 (no route, sshd not
 * up) when the instance has no directory, while <work_dir>/ssh-down
 * exists, or when the emulator refuses, and else hands its stdin to
 * /emu/ssh, which runs it by /bin/sh in a new session under <ip>/ with
 * SPOTRUN_NODE_ROOT=<ip>/root (emuhttp_vm_spawn) and appends the
 * session's pid to <ip>/runs.  Terminating the instance kills its
 * sessions.
 *
 * Clock: cloud time = time_scale x real time since start.  Listens on
 * 127.0.0.1 only.  Thread-safe.
 */
#ifndef SR_LAMBDA_LAMBDAEMU_H
#define SR_LAMBDA_LAMBDAEMU_H

#include "cloud/emuconf.h"
#include "common/err.h"

#define LAMBDAEMU_KEY "lambda-emulator-key"

struct lambdaemu_opts {
	struct emuhttp_conf conf;  /* capacity: "TYPE=none|plenty", in every
				      region */
	const char *api_key;       /* NULL: LAMBDAEMU_KEY */
	double boot_s;             /* booting -> active, real s; 0: 0.3 */
	int quota;                 /* live instances at most; 0: no limit */
};

struct lambdaemu;

int lambdaemu_start(const struct lambdaemu_opts *o, struct lambdaemu **out,
		    struct sr_err *e);
const char *lambdaemu_url(const struct lambdaemu *m);
/* Every live instance's host fails (terminated): how many. */
int lambdaemu_fail_all(struct lambdaemu *m);
void lambdaemu_stop(struct lambdaemu *m); /* kills every instance */

#endif
