/*
 * xml.c - reading the XML answers of S3 and Azure Blob with libxml2.
 * Only element names and texts are looked at; namespaces are ignored
 * (S3 answers in its 2006-03-01 namespace, Azure in none).  Entities
 * are not expanded from outside the document and the network is never
 * used (XML_PARSE_NONET, no XML_PARSE_NOENT / DTDLOAD).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

#include "os_int.h"

static xmlDocPtr parse(const char *doc, size_t len)
{
	if (!doc || len == 0 || len > INT32_MAX)
		return NULL;
	return xmlReadMemory(doc, (int)len, "response.xml", NULL,
			     XML_PARSE_NONET | XML_PARSE_NOERROR |
			     XML_PARSE_NOWARNING);
}

static int is(xmlNodePtr n, const char *name)
{
	return n->type == XML_ELEMENT_NODE &&
	       !strcmp((const char *)n->name, name);
}

static xmlNodePtr find(xmlNodePtr n, const char *name)
{
	for (; n; n = n->next) {
		xmlNodePtr f;

		if (is(n, name))
			return n;
		f = find(n->children, name);
		if (f)
			return f;
	}
	return NULL;
}

static char *text(xmlNodePtr n)
{
	xmlChar *c = xmlNodeGetContent(n);
	char *s;

	if (!c)
		return strdup("");
	s = strdup((const char *)c);
	xmlFree(c);
	return s;
}

char *os_xml_text(const char *doc, size_t len, const char *name)
{
	xmlDocPtr d = parse(doc, len);
	xmlNodePtr n;
	char *s = NULL;

	if (!d)
		return NULL;
	n = find(xmlDocGetRootElement(d), name);
	if (n)
		s = text(n);
	xmlFreeDoc(d);
	return s;
}

static int walk(xmlNodePtr n, const char *item, const char *a, const char *b,
		int (*fn)(void *, const char *, const char *), void *ud)
{
	for (; n; n = n->next) {
		int rc;

		if (is(n, item)) {
			char *va = NULL, *vb = NULL;

			xmlNodePtr na = a ? find(n->children, a) : NULL;
			xmlNodePtr nb = b ? find(n->children, b) : NULL;

			va = na ? text(na) : NULL;
			vb = nb ? text(nb) : NULL;
			rc = fn(ud, va, vb);
			free(va);
			free(vb);
			if (rc)
				return rc;
			continue;
		}
		rc = walk(n->children, item, a, b, fn, ud);
		if (rc)
			return rc;
	}
	return 0;
}

int os_xml_each(const char *doc, size_t len, const char *item, const char *a,
		const char *b, int (*fn)(void *ud, const char *va,
					 const char *vb),
		void *ud)
{
	xmlDocPtr d = parse(doc, len);
	int rc;

	if (!d)
		return -SR_EPARSE;
	rc = walk(xmlDocGetRootElement(d), item, a, b, fn, ud);
	xmlFreeDoc(d);
	return rc;
}

char *os_xml_escape(const char *s)
{
	size_t n = 1;
	char *out, *p;

	for (const char *c = s; *c; c++)
		n += *c == '&' || *c == '"' || *c == '\'' ? 6 : *c == '<' ||
		     *c == '>' ? 4 : 1;
	out = malloc(n);
	if (!out)
		return NULL;
	p = out;
	for (const char *c = s; *c; c++) {
		const char *r = *c == '&' ? "&amp;" : *c == '<' ? "&lt;" :
				*c == '>' ? "&gt;" : *c == '"' ? "&quot;" :
				*c == '\'' ? "&apos;" : NULL;

		if (r) {
			memcpy(p, r, strlen(r));
			p += strlen(r);
		} else {
			*p++ = *c;
		}
	}
	*p = 0;
	return out;
}
