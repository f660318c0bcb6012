/*
 * ec2_userdata.c - the user-data script that boots a node (ec2.h,
 * ec2_bootstrap_script).
 *
 * On a real instance cloud-init runs the script once, as root, on a stock
 * Debian, Ubuntu or Amazon Linux image.  Root only prepares:
 *
 *   root: system user "spotrun" (created unless present; in the video and
 *         render groups where those exist, for the GPUs), /var/lib/spotrun
 *         and the node dir owned by it, the bootstrap file 0600 owned by
 *         it, user namespaces enabled for an unprivileged user
 *         (kernel.unprivileged_userns_clone, user.max_user_namespaces, and
 *         on Ubuntu 23.10+ an AppArmor profile with "userns," for the
 *         agent, else kernel.apparmor_restrict_unprivileged_userns=0)
 *     -> spotrun-agent as "spotrun" (systemd-run --uid where systemd runs,
 *        else setpriv, else runuser), never as root: its --private
 *        isolation is then "userns", full (docs/security.md).
 *
 * On the EC2 emulator (SPOTRUN_NODE_ROOT set, ec2emu.h) the "instance" is
 * the script's process session on the emulator's host, run as the
 * emulator's user: no user is made and the agent runs as that user.
 *
 * No value is pasted into the script unquoted: the secret, the URLs and
 * the paths are checked (no quote, space, '$', '`', backslash or control
 * character) and sit inside single quotes; the node id is a number; the
 * agent path also appears in the AppArmor profile, inside a here-document
 * whose delimiter is quoted (no expansion), so it is held to
 * [A-Za-z0-9._/+-] (no AppArmor glob or quote either).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/url.h"
#include "ec2_int.h"

/* A value that can sit inside single quotes in sh and on a command line:
 * printable ASCII, no quote, backslash or space. */
static bool shell_safe(const char *s)
{
	if (s == NULL || s[0] == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (!isgraph((unsigned char)*s) || *s == '\'' || *s == '"' ||
		    *s == '\\' || *s == '`' || *s == '$')
			return false;
	return true;
}

/* An absolute path of plain characters: no shell, glob or AppArmor
 * meaning anywhere. */
static bool path_plain(const char *s)
{
	if (s == NULL || s[0] != '/')
		return false;
	for (; *s != '\0'; s++)
		if (!isalnum((unsigned char)*s) && strchr("._/+-", *s) == NULL)
			return false;
	return true;
}

/* 0 if url is an http(s) URL with a host, *plain set for http://. */
static int api_scheme(const char *url, int *plain)
{
	struct sr_url u;

	if (sr_url_parse_http(url, "api url", &u, NULL) < 0)
		return -EINVAL;
	*plain = strcmp(u.scheme, "http") == 0;
	sr_url_free(&u);
	return 0;
}

/* The control plane's URLs as the agent gets them: one, or every daemon
 * sharing the store, comma-separated, leader first (--api takes the
 * list).  Each must be http(s), and plain http only to loopback: the
 * bootstrap secret is a bearer credential until used, and the node token
 * after it: never in clear across a network. */
static int api_urls_ok(const char *list, struct sr_err *e)
{
	char one[1024];
	const char *p = list;

	if (!shell_safe(list))
		return sr_err_set(e, -EINVAL, "bootstrap: api url: expected "
				  "http(s) URLs without quotes or spaces");
	while (*p != '\0') {
		size_t n = strcspn(p, ",");
		int plain = 0;

		if (n == 0 || n >= sizeof(one))
			return sr_err_set(e, -EINVAL, "bootstrap: api url: an empty "
					  "or overlong URL in '%s'", list);
		memcpy(one, p, n);
		one[n] = '\0';
		if (api_scheme(one, &plain) < 0)
			return sr_err_set(e, -EINVAL, "bootstrap: api url '%s': "
					  "expected an http(s) URL", one);
		if (plain && !sr_url_is_loopback(one))
			return sr_err_set(e, -EINVAL, "bootstrap: api url '%s': "
					  "http:// to a host that is not loopback "
					  "would send the node's bootstrap secret and "
					  "token in clear; use https:// (spotrund "
					  "--tls-cert/--tls-key) or a tunnel", one);
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* Where the script decides who runs the agent and makes what it needs.
 * $u stays empty on the emulator.  No value of the caller's is in it but
 * the node id (%1$lld) and the agent path (%2$s, path_plain). */
#define SCRIPT_SETUP \
	"#!/bin/sh\n" \
	"# spotrun node bootstrap (EC2 user-data), node %1$lld\n" \
	"set -eu\n" \
	"umask 077\n" \
	"u=\n" \
	"if [ -n \"${SPOTRUN_NODE_ROOT:-}\" ]; then\n" \
	"  d=\"$SPOTRUN_NODE_ROOT/node-%1$lld\"\n" \
	"  mkdir -p \"$d/work\"\n" \
	"else\n" \
	"  # a real instance: root (cloud-init, once) only prepares; the\n" \
	"  # agent and its workloads run as the system user spotrun\n" \
	"  u=spotrun\n" \
	"  r=/var/lib/spotrun\n" \
	"  d=\"$r/node-%1$lld\"\n" \
	"  if ! id -u \"$u\" >/dev/null 2>&1; then\n" \
	"    useradd --system --user-group --no-create-home --home-dir \"$r\"" \
	" --shell \"$(command -v nologin || echo /bin/false)\" \"$u\"\n" \
	"  fi\n" \
	"  for g in video render; do\n" \
	"    if getent group \"$g\" >/dev/null 2>&1; then\n" \
	"      usermod -a -G \"$g\" \"$u\"\n" \
	"    fi\n" \
	"  done\n" \
	"  mkdir -p \"$r\"\n" \
	"  chown \"$u:$u\" \"$r\"\n" \
	"  chmod 700 \"$r\"\n" \
	"  mkdir \"$d\" \"$d/work\"\n" \
	"  # user namespaces for an unprivileged user (--private needs them)\n" \
	"  f=/proc/sys/kernel/unprivileged_userns_clone\n" \
	"  if [ -w \"$f\" ] && [ \"$(cat \"$f\")\" = 0 ]; then echo 1 >\"$f\"; fi\n" \
	"  f=/proc/sys/user/max_user_namespaces\n" \
	"  if [ -w \"$f\" ] && [ \"$(cat \"$f\")\" = 0 ]; then" \
	" echo 15000 >\"$f\"; fi\n" \
	"  f=/proc/sys/kernel/apparmor_restrict_unprivileged_userns\n" \
	"  if [ -w \"$f\" ] && [ \"$(cat \"$f\")\" != 0 ]; then\n" \
	"    p=/etc/apparmor.d/spotrun-agent\n" \
	"    if command -v apparmor_parser >/dev/null 2>&1 &&" \
	" [ -d /etc/apparmor.d ]; then\n" \
	"      cat >\"$p\" <<'SPOTRUN_EOF'\n" \
	"abi <abi/4.0>,\n" \
	"include <tunables/global>\n" \
	"profile spotrun-agent \"%2$s\" flags=(unconfined) {\n" \
	"  userns,\n" \
	"}\n" \
	"SPOTRUN_EOF\n" \
	"      chmod 644 \"$p\"\n" \
	"      apparmor_parser -r \"$p\" || echo 0 >\"$f\"\n" \
	"    else\n" \
	"      echo 0 >\"$f\"\n" \
	"    fi\n" \
	"  fi\n" \
	"fi\n"

/* The secret (%3$s) to a 0600 file the agent reads and removes, never
 * onto a command line (where ps would show it) nor into the cloud-init
 * log; then the agent's command line: agent %2$s, URLs %4$s, the
 * --private list %5$s, all single-quoted. */
#define SCRIPT_START \
	"printf '%%s\\n' '%3$s' >\"$d/bootstrap\"\n" \
	"chmod 600 \"$d/bootstrap\"\n" \
	"set -- '%2$s' --api '%4$s' --node-id %1$lld" \
	" --bootstrap-file \"$d/bootstrap\" --workdir \"$d/work\"" \
	" --private \"$d\" --private /var/lib/cloud%5$s%6$s\n" \
	"if [ -n \"${SPOTRUN_EMU_HIDE:-}\" ]; then\n" \
	"  set -- \"$@\" --private \"$SPOTRUN_EMU_HIDE\"\n" \
	"fi\n" \
	"if [ -n \"${SPOTRUN_IMDS_URL:-}\" ]; then\n" \
	"  set -- \"$@\" --imds \"$SPOTRUN_IMDS_URL\"\n" \
	"fi\n" \
	"if [ -z \"$u\" ]; then\n" \
	"  exec \"$@\" >>\"$d/agent.log\" 2>&1\n" \
	"fi\n" \
	": >\"$d/agent.log\"\n" \
	"chown -R \"$u:$u\" \"$d\"\n" \
	"if [ -d /run/systemd/system ] && command -v systemd-run" \
	" >/dev/null 2>&1; then\n" \
	"  exec systemd-run --unit=spotrun-agent-%1$lld --uid=\"$u\"" \
	" --gid=\"$u\" -p WorkingDirectory=\"$d\" \"$@\"\n" \
	"fi\n" \
	"uid=$(id -u \"$u\")\n" \
	"gid=$(id -g \"$u\")\n" \
	"HOME=\"$r\"\n" \
	"export HOME\n" \
	"cd \"$d\"\n" \
	"if command -v setpriv >/dev/null 2>&1; then\n" \
	"  set -- setpriv --reuid=\"$uid\" --regid=\"$gid\" --init-groups" \
	" -- \"$@\"\n" \
	"else\n" \
	"  set -- runuser -u \"$u\" -- \"$@\"\n" \
	"fi\n" \
	"nohup \"$@\" >>\"$d/agent.log\" 2>&1 &\n"

int ec2_bootstrap_script(const char *agent_path, const char *api_url,
			 int64_t node_id, const char *bootstrap,
			 const char *const *private_paths, char **out,
			 struct sr_err *e)
{
	return ec2_bootstrap_script_notice(agent_path, api_url, node_id,
					   bootstrap, private_paths, NULL, out,
					   e);
}

int ec2_bootstrap_script_notice(const char *agent_path, const char *api_url,
				int64_t node_id, const char *bootstrap,
				const char *const *private_paths,
				const char *notice, char **out,
				struct sr_err *e)
{
	char nopt[80] = "";
	const char *agent = agent_path != NULL ? agent_path : EC2_DEFAULT_AGENT;
	char priv[2048] = "";
	size_t k = 0;
	int n, rc;

	*out = NULL;
	if (!path_plain(agent))
		return sr_err_set(e, -EINVAL, "bootstrap: agent path: expected "
				  "an absolute path of letters, digits and "
				  "'._/+-'");
	rc = api_urls_ok(api_url, e);
	if (rc < 0)
		return rc;
	if (!shell_safe(bootstrap) || strlen(bootstrap) < 16 ||
	    strlen(bootstrap) > 256)
		return sr_err_set(e, -EINVAL, "bootstrap: secret: expected "
				  "16..256 printable characters without quotes");
	if (node_id <= 0)
		return sr_err_set(e, -EINVAL, "bootstrap: node id: expected > 0");
	for (size_t i = 0; private_paths && private_paths[i]; i++) {
		const char *p = private_paths[i];

		if (!shell_safe(p) || p[0] != '/')
			return sr_err_set(e, -EINVAL, "bootstrap: private path '%s':"
					  " expected an absolute path without "
					  "quotes or spaces", p);
		n = snprintf(priv + k, sizeof priv - k, " --private '%s'", p);
		if (n < 0 || (size_t)n >= sizeof priv - k)
			return sr_err_set(e, -EINVAL, "bootstrap: private paths: "
					  "longer than %zu bytes", sizeof priv);
		k += (size_t)n;
	}
	if (notice) {
		if (strlen(notice) == 0 || strlen(notice) > 60 ||
		    strspn(notice, "abcdefghijklmnopqrstuvwxyz,-") != strlen(notice))
			return sr_err_set(e, -EINVAL, "bootstrap: notice source "
					  "'%s': expected lower-case words and "
					  "commas", notice);
		snprintf(nopt, sizeof nopt, " --notice '%s'", notice);
	}
	/* asprintf would leave copies of the secret in what it freed while
	 * growing: size first, then one buffer the caller wipes. */
	n = snprintf(NULL, 0, SCRIPT_SETUP SCRIPT_START, (long long)node_id,
		     agent, bootstrap, api_url, priv, nopt);
	if (n < 0 || (*out = malloc((size_t)n + 1)) == NULL)
		return sr_err_set(e, -ENOMEM, "out of memory");
	snprintf(*out, (size_t)n + 1, SCRIPT_SETUP SCRIPT_START,
		 (long long)node_id, agent, bootstrap, api_url, priv, nopt);
	return 0;
}
