/*
 * ec2emu_xml.c - the EC2 emulator's request parameters and answer
 * documents (EC2 2016-11-15 XML), and its clock conversions (ec2emu.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sigv4.h"
#include "common/timeutil.h"
#include "ec2emu_int.h"

#define NS "http://ec2.amazonaws.com/doc/2016-11-15/"

/* ---- clock ------------------------------------------------------------ */

double ec2emu__now(const struct ec2emu *m)
{
	double real = (double)(sr_time_mono_ns() - m->t0_ns) / 1e9;

	return m->trace_start + m->time_scale * real;
}

/* Epoch seconds of cloud time sim (for EC2 timestamps). */
int64_t ec2emu__epoch(const struct ec2emu *m, double sim)
{
	return m->epoch0 + (int64_t)(sim - m->trace_start);
}

int64_t ec2emu__real_ns(const struct ec2emu *m, double sim)
{
	return m->epoch0_ns + (int64_t)((sim - m->trace_start) / m->time_scale * 1e9);
}

void ec2emu__ts(const struct ec2emu *m, double sim, char out[40])
{
	sr_time_format_rfc3339(ec2emu__epoch(m, sim) * 1000000000LL, 3, out, 40);
}

/* ---- request parameters ---------------------------------------------- */

void ec2emu__params_free(struct emu_params *p)
{
	for (size_t i = 0; i < 2 * p->n; i++)
		free(p->kv[i]);
	free(p->kv);
	memset(p, 0, sizeof(*p));
}

int ec2emu__params_parse(const char *body, size_t len, struct emu_params *p)
{
	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < len;) {
		size_t j = i, eq;
		char **t;

		while (j < len && body[j] != '&')
			j++;
		eq = i;
		while (eq < j && body[eq] != '=')
			eq++;
		if (j > i) {
			t = realloc(p->kv, 2 * (p->n + 1) * sizeof(*t));
			if (t == NULL)
				goto oom;
			p->kv = t;
			p->kv[2 * p->n] = sr_sigv4_uri_decode(body + i, eq - i, 1,
							      NULL);
			p->kv[2 * p->n + 1] =
				eq < j ? sr_sigv4_uri_decode(body + eq + 1,
							     j - eq - 1, 1, NULL)
				       : strdup("");
			p->n++;
			if (p->kv[2 * p->n - 2] == NULL || p->kv[2 * p->n - 1] == NULL)
				goto oom;
		}
		i = j + 1;
	}
	return 0;
oom:
	ec2emu__params_free(p);
	return -ENOMEM;
}

const char *ec2emu__param(const struct emu_params *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->kv[2 * i], name) == 0)
			return p->kv[2 * i + 1];
	return NULL;
}

const char *ec2emu__paramf(const struct emu_params *p, const char *fmt, ...)
{
	char name[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	return ec2emu__param(p, name);
}

/* ---- answers ---------------------------------------------------------- */

void ec2emu__xml_esc(FILE *f, const char *s)
{
	for (; s != NULL && *s != '\0'; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f);
		}
	}
}

void ec2emu__fail(struct emu_answer *a, int status, const char *code,
		 const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	free(a->body);
	a->body = NULL;
	a->status = status;
	snprintf(a->code, sizeof(a->code), "%s", code);
	f = open_memstream(&a->body, &a->len);
	if (f == NULL)
		return;
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Response><Errors>"
	      "<Error><Code>", f);
	ec2emu__xml_esc(f, code);
	fputs("</Code><Message>", f);
	ec2emu__xml_esc(f, msg);
	fputs("</Message></Error></Errors><RequestID>"
	      "00000000-0000-4000-8000-000000000000</RequestID></Response>", f);
	fclose(f);
}

FILE *ec2emu__begin(struct emu_answer *a, const char *root)
{
	FILE *f = open_memstream(&a->body, &a->len);

	if (f == NULL)
		return NULL;
	a->status = 200;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<%s xmlns=\"" NS
		   "\">\n  <requestId>00000000-0000-4000-8000-%012x</requestId>\n",
		root, (unsigned)rand());
	return f;
}

void ec2emu__end(struct emu_answer *a, FILE *f, const char *root)
{
	fprintf(f, "</%s>\n", root);
	if (fclose(f) != 0)
		ec2emu__fail(a, 500, "InternalError", "out of memory");
}

const char *ec2emu__state_name(int s)
{
	static const char *const names[] = { "pending", "running",
					     "shutting-down", "terminated" };
	return names[s];
}

int ec2emu__state_code(int s)
{
	static const int codes[] = { 0, 16, 32, 48 };
	return codes[s];
}

void ec2emu__put_instance(const struct ec2emu *m, FILE *f,
			  const struct emu_inst *i)
{
	char ts[40];

	/* an instance's times are on the wall clock, as the instance sees
	 * them (price history stays on the market's clock) */
	sr_time_format_rfc3339(ec2emu__real_ns(m, i->launch_sim), 3, ts, sizeof ts);
	fprintf(f, "      <item>\n        <instanceId>%s</instanceId>\n"
		   "        <imageId>", i->id);
	ec2emu__xml_esc(f, i->image);
	fprintf(f, "</imageId>\n        <instanceState><code>%d</code><name>%s</name>"
		   "</instanceState>\n"
		   "        <privateDnsName>ip-10-0-0-%d.ec2.internal</privateDnsName>\n"
		   "        <dnsName/>\n        <reason/>\n"
		   "        <amiLaunchIndex>0</amiLaunchIndex>\n        <productCodes/>\n"
		   "        <instanceType>", ec2emu__state_code(i->state), ec2emu__state_name(i->state),
		i->seq % 250 + 2);
	ec2emu__xml_esc(f, i->type);
	fprintf(f, "</instanceType>\n        <launchTime>%s</launchTime>\n"
		   "        <placement><availabilityZone>", ts);
	ec2emu__xml_esc(f, i->zone);
	fprintf(f, "</availabilityZone><groupName/><tenancy>default</tenancy>"
		   "</placement>\n        <monitoring><state>disabled</state>"
		   "</monitoring>\n        <subnetId>");
	ec2emu__xml_esc(f, i->subnet);
	fprintf(f, "</subnetId>\n        <vpcId>vpc-00000000emulated</vpcId>\n"
		   "        <privateIpAddress>10.0.0.%d</privateIpAddress>\n"
		   "        <sourceDestCheck>true</sourceDestCheck>\n"
		   "        <groupSet/>\n", i->seq % 250 + 2);
	if (i->spot)
		fprintf(f, "        <instanceLifecycle>spot</instanceLifecycle>\n"
			   "        <spotInstanceRequestId>sir-emu%08u"
			   "</spotInstanceRequestId>\n", i->seq);
	if (i->reason[0] != '\0') {
		fprintf(f, "        <stateReason><code>");
		ec2emu__xml_esc(f, i->reason);
		fprintf(f, "</code><message>");
		ec2emu__xml_esc(f, i->reason);
		fprintf(f, "</message></stateReason>\n");
	}
	fprintf(f, "        <architecture>x86_64</architecture>\n"
		   "        <rootDeviceType>ebs</rootDeviceType>\n"
		   "        <rootDeviceName>/dev/xvda</rootDeviceName>\n"
		   "        <blockDeviceMapping/>\n"
		   "        <virtualizationType>hvm</virtualizationType>\n"
		   "        <clientToken>");
	ec2emu__xml_esc(f, i->token);
	fprintf(f, "</clientToken>\n        <tagSet>");
	for (size_t t = 0; t < i->ntags; t++) {
		fprintf(f, "<item><key>");
		ec2emu__xml_esc(f, i->tag_k[t]);
		fprintf(f, "</key><value>");
		ec2emu__xml_esc(f, i->tag_v[t]);
		fprintf(f, "</value></item>");
	}
	fprintf(f, "</tagSet>\n        <hypervisor>xen</hypervisor>\n"
		   "        <networkInterfaceSet/>\n"
		   "        <ebsOptimized>false</ebsOptimized>\n"
		   "      </item>\n");
}

