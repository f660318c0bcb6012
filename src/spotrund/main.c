/*
 * spotrund - the spotrun control plane daemon.  See docs/control-plane.md
 * and docs/api.md.  Everything but argument handling, signals and the
 * api.url / pid files lives in lib/ctl (ctl.h).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/log.h"
#include "common/proc.h"
#include "common/timeutil.h"
#include "cloud/conf.h"
#include "cloud/timing.h"
#include "ctl/ctl.h"
#include "ctl/ctlfile.h"
#include "market/catalog.h"
#include "statelock.h"
#include "store/store.h"

static const char usage[] =
	"usage: spotrund [options]\n"
	"\n"
	"The spotrun control plane: REST API, state store, reconciler and the\n"
	"local spot cloud.  Writes <state-dir>/api.url and spotrund.pid.\n"
	"\n"
	"  --listen HOST:PORT       listen address (127.0.0.1:7077; port 0 = any);\n"
	"                           an address other hosts can reach needs TLS\n"
	"  --tls-cert FILE          serve HTTPS with this PEM certificate (chain)\n"
	"  --tls-key FILE           and this PEM private key (mode 0600)\n"
	"  --insecure-listen        allow a non-loopback --listen without TLS:\n"
	"                           tokens and secrets cross the network in clear\n"
	"  --state-dir DIR          state (default $SPOTRUN_STATE_DIR, else\n"
	"                           $XDG_STATE_HOME/spotrun or ~/.local/state/spotrun)\n"
	"  --store URI              where the state lives: postgresql://... (a\n"
	"                           libpq URI; docs/store.md), default\n"
	"                           $SPOTRUN_STORE, else SQLite in the state dir\n"
	"  --lease-ms N             the leader's lease when daemons share a\n"
	"                           PostgreSQL store (5000; 300..10000): a standby\n"
	"                           takes over within 2 x N of the leader's death\n"
	"  --config FILE            settings from a YAML file (default\n"
	"                           $SPOTRUN_CONFIG): any flag below without\n"
	"                           its \"--\", and a providers: section with\n"
	"                           each provider's regions, images, subnets\n"
	"                           (docs/providers.md); flags override it\n"
	"  --providers NAMES        where nodes run, comma-separated: local (the\n"
	"                           built-in spot cloud, the default), aws\n"
	"                           (EC2: credentials, region and endpoint as the\n"
	"                           AWS SDKs find them) or gcp (Compute Engine:\n"
	"                           application default credentials; docs/\n"
	"                           providers.md);\n"
	"                           default: the config file's; --provider is\n"
	"                           the same\n"
	"  --aws-image AMI          aws: the image nodes boot (spotrun-agent\n"
	"                           installed; required to launch)\n"
	"  --aws-subnet ID          aws: subnet (default: the zone's default VPC)\n"
	"  --aws-security-group ID  aws: security group (default: the VPC's)\n"
	"  --aws-key-name NAME      aws: SSH key pair (default: none)\n"
	"  --aws-instance-profile NAME  aws: IAM instance profile (default: none)\n"
	"  --data-dir DIR           catalog + traces (default: data/ found as the\n"
	"                           catalog finds it, or $SPOTRUN_DATA)\n"
	"  --agent PATH             spotrun-agent binary (default: beside spotrund)\n"
	"  --time-scale N           cloud seconds per real second (3600)\n"
	"  --trace-start HOURS      cloud clock at first start, in trace hours (48)\n"
	"  --provision-ms N         local provisioning delay, real ms (1000)\n"
	"  --notice-ms N            the local cloud's preemption notice lead,\n"
	"                           real ms (5000; a real cloud's notice carries\n"
	"                           its own time)\n"
	"  --timing NAME|FILE       give the local cloud a real cloud's timings\n"
	"                           (data/timing/NAME.json: aws, gcp, azure):\n"
	"                           its notice lead and per-node boots drawn\n"
	"                           from its distribution, in cloud seconds\n"
	"                           divided by --time-scale; --notice-ms and\n"
	"                           --provision-ms still win when given\n"
	"  --timing-seed N          seed of the boot draws (1)\n"
	"  --stop-grace-ms N        how long a stop may take past a notice's\n"
	"                           deadline, or from a policy move, real ms\n"
	"                           (5000)\n"
	"  --heartbeat-ms N         agent heartbeat period (1000)\n"
	"  --heartbeat-timeout DUR  node LOST after this silence (10s)\n"
	"  --boot-timeout DUR       BOOTING node LOST if it never registers (30s)\n"
	"  --bill-interval-ms N     ledger row per node per interval (1000)\n"
	"  --policy NAME            placement policy from lib/sim (spotrun)\n"
	"  --restart-guess-ms N     agent+workload start time assumed by the\n"
	"                           policy, real ms (3000)\n"
	"  --http-threads N         HTTP worker threads (4)\n"
	"  --tick-ms N              reconciler period (100)\n"
	"  --help                   this text\n";

static volatile sig_atomic_t stop_sig;

/* Where the value being read came from: "" (the command line) or
 * "FILE:LINE: " (the configuration file). */
static char where[2200];

static void on_signal(int sig)
{
	stop_sig = sig;
}

static int bad(const char *opt, const char *val)
{
	fprintf(stderr, "spotrund: %s%s: invalid value '%s'\ntry 'spotrund "
		"--help'\n", where, opt, val);
	return 2;
}

static int parse_i64(const char *opt, const char *s, int64_t min, int64_t *out)
{
	char *end = NULL;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min)
		return bad(opt, s);
	*out = v;
	return 0;
}

static int parse_dur_ms(const char *opt, const char *s, int64_t *out)
{
	int64_t ns;

	if (sr_dur_parse(s, &ns, NULL) || ns <= 0)
		return bad(opt, s);
	*out = ns / 1000000;
	return 0;
}

static void default_state_dir(char *buf, size_t n)
{
	const char *s = getenv("SPOTRUN_STATE_DIR");
	const char *x = getenv("XDG_STATE_HOME");
	const char *h = getenv("HOME");

	if (s && *s)
		snprintf(buf, n, "%s", s);
	else if (x && *x)
		snprintf(buf, n, "%s/spotrun", x);
	else
		snprintf(buf, n, "%s/.local/state/spotrun", h ? h : ".");
}

/* The providers setting a --aws-* flag sets (cloud/conf.h keys). */
static const char *aws_flag_key(int opt)
{
	switch (opt) {
	case 0x101: return "image";
	case 0x102: return "subnet";
	case 0x103: return "security_group";
	case 0x104: return "key_name";
	default: return "instance_profile";
	}
}

/* A flag's value for provider `prov` (wins over the config file). */
static int flag_override(struct cloud_confs *cs, const char *prov,
			 const char *key, const char *val)
{
	struct cloud_conf *c = cloud_confs_find(cs, prov, 1);

	if (!c || cloud_conf_override(c, key, val)) {
		fprintf(stderr, "spotrund: out of memory\n");
		return -1;
	}
	return 0;
}

static const struct option opts[] = {
	{ "listen", required_argument, NULL, 'l' },
	{ "state-dir", required_argument, NULL, 's' },
	{ "store", required_argument, NULL, 0x106 },
	{ "lease-ms", required_argument, NULL, 0x107 },
	{ "provider", required_argument, NULL, 'p' },
	{ "providers", required_argument, NULL, 'p' },
	{ "aws-image", required_argument, NULL, 0x101 },
	{ "aws-subnet", required_argument, NULL, 0x102 },
	{ "aws-security-group", required_argument, NULL, 0x103 },
	{ "aws-key-name", required_argument, NULL, 0x104 },
	{ "aws-instance-profile", required_argument, NULL, 0x105 },
	{ "data-dir", required_argument, NULL, 'd' },
	{ "agent", required_argument, NULL, 'a' },
	{ "time-scale", required_argument, NULL, 'T' },
	{ "trace-start", required_argument, NULL, 'S' },
	{ "provision-ms", required_argument, NULL, 'P' },
	{ "notice-ms", required_argument, NULL, 'N' },
	{ "timing", required_argument, NULL, 0x10a },
	{ "timing-seed", required_argument, NULL, 0x10b },
	{ "stop-grace-ms", required_argument, NULL, 0x109 },
	{ "heartbeat-ms", required_argument, NULL, 'H' },
	{ "heartbeat-timeout", required_argument, NULL, 'O' },
	{ "boot-timeout", required_argument, NULL, 'B' },
	{ "bill-interval-ms", required_argument, NULL, 'I' },
	{ "policy", required_argument, NULL, 'y' },
	{ "restart-guess-ms", required_argument, NULL, 'R' },
	{ "http-threads", required_argument, NULL, 't' },
	{ "tick-ms", required_argument, NULL, 'k' },
	{ "tls-cert", required_argument, NULL, 'C' },
	{ "tls-key", required_argument, NULL, 'K' },
	{ "insecure-listen", no_argument, NULL, 'X' },
	{ "config", required_argument, NULL, 0x108 },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct opts_out {
	struct ctl_config *cfg;
	struct cloud_confs *confs;
	char *state, *host;
	size_t state_cap, host_cap;
	const char *timing;        /* --timing, NULL none */
	bool notice_set, provision_set;
};

/* Apply option `opt` with argument arg (NULL for a flag without one):
 * 0, or the exit status (2 a bad value, 1 out of memory, 3 --help
 * printed: exit 0). */
static int apply(int opt, const char *arg, struct opts_out *o)
{
	struct ctl_config *cfg = o->cfg;
	char *colon, *end = NULL;
	int64_t v;

	switch (opt) {
	case 'l':
		colon = strrchr(arg, ':');
		if (!colon || colon == arg ||
		    (size_t)(colon - arg) >= o->host_cap)
			return bad("--listen", arg);
		memcpy(o->host, arg, (size_t)(colon - arg));
		o->host[colon - arg] = '\0';
		v = strtoll(colon + 1, &end, 10);
		if (end == colon + 1 || *end || v < 0 || v > 65535)
			return bad("--listen", arg);
		cfg->listen_port = (int)v;
		break;
	case 's': snprintf(o->state, o->state_cap, "%s", arg); break;
	case 0x106: cfg->store = arg; break;
	case 0x107:
		if (parse_i64("--lease-ms", arg, 300, &cfg->lease_ms))
			return 2;
		if (cfg->lease_ms > 10000)
			return bad("--lease-ms", arg);
		break;
	case 'C': cfg->tls_cert = arg; break;
	case 'K': cfg->tls_key = arg; break;
	case 'X': cfg->insecure_listen = 1; break;
	case 'p': cfg->provider = arg; break;
	case 0x101: case 0x102: case 0x103: case 0x104: case 0x105:
		/* --aws-KEY: the aws provider's setting KEY, over the
		 * config file's at every level */
		if (flag_override(o->confs, "aws", aws_flag_key(opt), arg))
			return 1;
		break;
	case 'd': cfg->data_dir = arg; break;
	case 'a': cfg->agent_path = arg; break;
	case 'y': cfg->policy = arg; break;
	case 'T':
		cfg->time_scale = strtod(arg, &end);
		if (end == arg || *end || !(cfg->time_scale > 0 &&
					    cfg->time_scale <= 1e7))
			return bad("--time-scale", arg);
		break;
	case 'S':
		cfg->trace_start_h = strtod(arg, &end);
		if (end == arg || *end || cfg->trace_start_h < 0)
			return bad("--trace-start", arg);
		break;
	case 'P':
		if (parse_i64("--provision-ms", arg, 0, &cfg->provision_ms))
			return 2;
		o->provision_set = true;
		break;
	case 0x10a: o->timing = arg; break;
	case 0x10b:
		if (parse_i64("--timing-seed", arg, 0, &v))
			return 2;
		cfg->timing_seed = (uint64_t)v;
		break;
	case 'N':
		if (parse_i64("--notice-ms", arg, 1, &cfg->notice_ms))
			return 2;
		o->notice_set = true;
		/* the local cloud's setting, over the config file's */
		if (flag_override(o->confs, "local", "notice_ms", arg))
			return 1;
		break;
	case 0x109: if (parse_i64("--stop-grace-ms", arg, 1, &cfg->stop_grace_ms)) return 2; break;
	case 'H': if (parse_i64("--heartbeat-ms", arg, 10, &cfg->heartbeat_ms)) return 2; break;
	case 'O': if (parse_dur_ms("--heartbeat-timeout", arg, &cfg->heartbeat_timeout_ms)) return 2; break;
	case 'B': if (parse_dur_ms("--boot-timeout", arg, &cfg->boot_timeout_ms)) return 2; break;
	case 'I': if (parse_i64("--bill-interval-ms", arg, 10, &cfg->bill_interval_ms)) return 2; break;
	case 'R': if (parse_i64("--restart-guess-ms", arg, 0, &cfg->restart_guess_ms)) return 2; break;
	case 'k': if (parse_i64("--tick-ms", arg, 1, &cfg->tick_ms)) return 2; break;
	case 't':
		if (parse_i64("--http-threads", arg, 1, &v))
			return 2;
		if (v > 64)
			return bad("--http-threads", arg);
		cfg->http_threads = (int)v;
		break;
	case 0x108: break; /* --config: read before the other flags */
	case 'h':
		fputs(usage, stdout);
		return 3;
	default:
		fputs("try 'spotrund --help'\n", stderr);
		return 2;
	}
	return 0;
}

/* The configuration file: --config FILE (or --config=FILE), else
 * $SPOTRUN_CONFIG; NULL none. */
static const char *config_path(int argc, char **argv)
{
	const char *env = getenv("SPOTRUN_CONFIG");

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--config") && i + 1 < argc)
			return argv[i + 1];
		if (!strncmp(argv[i], "--config=", 9))
			return argv[i] + 9;
	}
	return env && *env ? env : NULL;
}

/* The file's settings, each as the flag of its name ("state_dir" is
 * --state-dir), before the command line's: flags override the file. */
static int apply_file(const struct ctl_file *f, struct opts_out *o)
{
	for (size_t i = 0; i < f->n; i++) {
		const struct ctl_file_setting *st = &f->v[i];
		const struct option *op = NULL;
		char name[64];
		size_t k;
		int rc;

		for (k = 0; st->key[k] && k < sizeof name - 1; k++)
			name[k] = st->key[k] == '_' ? '-' : st->key[k];
		name[k] = '\0';
		for (size_t q = 0; opts[q].name && !op; q++) {
			if (!strcmp(opts[q].name, name) && opts[q].val != 'h' &&
			    opts[q].val != 0x108)
				op = &opts[q];
		}
		if (!op) {
			fprintf(stderr, "spotrund: %s:%d: '%s' is not a setting (a "
				"setting is a spotrund flag without its \"--\", or "
				"providers:)\n", f->path, st->line, st->key);
			return 2;
		}
		snprintf(where, sizeof where, "%s:%d: ", f->path, st->line);
		if (op->has_arg == no_argument) {
			if (!strcmp(st->val, "false") || !strcmp(st->val, "no"))
				continue;
			if (strcmp(st->val, "true") && strcmp(st->val, "yes"))
				return bad(st->key, st->val);
		}
		rc = apply(op->val, op->has_arg == no_argument ? NULL : st->val, o);
		if (rc)
			return rc;
	}
	where[0] = '\0';
	return 0;
}

/* --timing: load the profile into *t and let it set the local cloud's
 * notice lead and mean boot where no flag did.  0 or an exit status. */
static int timing_apply(struct opts_out *o, struct cloud_timing *t)
{
	struct ctl_config *cfg = o->cfg;
	struct sr_err e = { 0 };
	char data[2048];
	int rc;

	if (cfg->data_dir)
		snprintf(data, sizeof data, "%s", cfg->data_dir);
	else if (catalog_find_data_dir(data, sizeof data))
		snprintf(data, sizeof data, "data");
	rc = cloud_timing_load(data, o->timing, t, &e);
	if (rc) {
		fprintf(stderr, "spotrund: --timing: %s\n", sr_err_str(&e, rc));
		return 2;
	}
	cfg->timing = t;
	if (!o->notice_set) {
		char ms[32];

		cfg->notice_ms = (int64_t)(t->notice_s / cfg->time_scale * 1e3);
		if (cfg->notice_ms < 1)
			cfg->notice_ms = 1;
		/* the local cloud's setting, over the config file's */
		snprintf(ms, sizeof ms, "%lld", (long long)cfg->notice_ms);
		if (flag_override(o->confs, "local", "notice_ms", ms))
			return 1;
	}
	if (!o->provision_set)
		cfg->provision_ms = (int64_t)(cloud_timing_boot_mean_s(t) /
					      cfg->time_scale * 1e3);
	return 0;
}

int main(int argc, char **argv)
{
	struct ctl_config cfg;
	struct cloud_timing timing;
	struct ctl_file file = { 0 };
	struct ctl *c = NULL;
	struct sr_err e = { 0 };
	char state[2048], host[64], path[2400], buf[256];
	struct opts_out o = { &cfg, NULL, state, host, sizeof state, sizeof host,
			      NULL, false, false };
	const char *conf_file = config_path(argc, argv);
	struct sigaction sa;
	sigset_t block, old;
	int opt, rc, lock_fd = -1;

	ctl_config_defaults(&cfg);
	default_state_dir(state, sizeof state);
	if (getenv("SPOTRUN_STORE") && *getenv("SPOTRUN_STORE"))
		cfg.store = getenv("SPOTRUN_STORE");
	snprintf(host, sizeof host, "%s", cfg.listen_host);
	o.confs = &file.providers;
	if (conf_file) {
		rc = ctl_file_load(conf_file, &file, &e);
		if (rc) {
			fprintf(stderr, "spotrund: %s\n", sr_err_str(&e, rc));
			ctl_file_free(&file);
			return 2;
		}
		rc = apply_file(&file, &o);
		if (rc) {
			ctl_file_free(&file);
			return rc == 3 ? 0 : rc;
		}
	}
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		rc = apply(opt, optarg, &o);
		if (rc) {
			ctl_file_free(&file);
			return rc == 3 ? 0 : rc;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "spotrund: unexpected argument '%s'\ntry 'spotrund "
			"--help'\n", argv[optind]);
		ctl_file_free(&file);
		return 2;
	}
	cfg.state_dir = state;
	cfg.listen_host = host;
	cfg.providers = &file.providers;
	if (o.timing) {
		rc = timing_apply(&o, &timing);
		if (rc) {
			ctl_file_free(&file);
			return rc;
		}
	}
	/* every file the daemon creates (database, WAL, tokens, logs) is
	 * private to its user (issue 10: spotrun.db was created 0644) */
	umask(077);
	/* one daemon per SQLite state, for its whole life (statelock.h) */
	if (store_backend_of(cfg.store ? cfg.store : "") == STORE_SQLITE) {
		rc = statelock_take(state, &lock_fd, &e);
		if (rc) {
			fprintf(stderr, "spotrund: %s\n", sr_err_str(&e, rc));
			ctl_file_free(&file);
			return 1;
		}
	}
	/* the agents it starts trust the same certificate */
	if (cfg.tls_cert)
		setenv("SPOTRUN_CA_CERT", cfg.tls_cert, 0);

	/* Block the stop signals in every thread (they inherit the mask);
	 * the main thread waits for them with sigsuspend, so a signal that
	 * arrives before the wait is not lost. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, &old);

	rc = ctl_start(&cfg, &c, &e);
	if (rc) {
		fprintf(stderr, "spotrund: %s\n", sr_err_str(&e, rc));
		ctl_file_free(&file);
		return rc == -EACCES || rc == -EINVAL ? 2 : 1;
	}
	if (cfg.insecure_listen && strncmp(host, "127.", 4) != 0)
		fprintf(stderr, "spotrund: WARNING: --insecure-listen: the API "
			"on %s:%d is reachable from other hosts WITHOUT TLS; bearer "
			"tokens and job secrets cross the network in clear\n",
			host, ctl_port(c));
	snprintf(path, sizeof path, "%s/api.url", state);
	snprintf(buf, sizeof buf, "%s\n", ctl_url(c));
	rc = sr_fs_write_atomic(path, buf, strlen(buf), 0600, &e);
	snprintf(path, sizeof path, "%s/spotrund.pid", state);
	/* "PID START": START (the /proc starttime) tells this process from
	 * a later one that reuses the pid */
	snprintf(buf, sizeof buf, "%d %lld\n", (int)getpid(),
		 (long long)sr_proc_start_time(getpid()));
	if (!rc)
		rc = sr_fs_write_atomic(path, buf, strlen(buf), 0600, &e);
	if (rc) {
		fprintf(stderr, "spotrund: %s\n", sr_err_str(&e, rc));
		ctl_stop(c);
		ctl_file_free(&file);
		return 1;
	}
	while (!stop_sig)
		sigsuspend(&old);
	sr_info("ctl", "stopping", "signal=%d", (int)stop_sig);
	/* Nodes keep running: the next start adopts them (docs/api.md). */
	ctl_stop(c);
	ctl_file_free(&file);
	unlink(path);
	if (lock_fd >= 0)
		close(lock_fd); /* the lock goes with it */
	return 0;
}
