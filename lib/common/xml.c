/*
 * xml.c - AWS Query-protocol answers read with libxml2 (xml.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "xml.h"

xmlDoc *sr_xml_parse(const char *xml, size_t len)
{
	if (xml == NULL || len == 0 || len > INT32_MAX)
		return NULL;
	return xmlReadMemory(xml, (int)len, "answer.xml", NULL,
			     XML_PARSE_NONET | XML_PARSE_NOERROR |
			     XML_PARSE_NOWARNING);
}

bool sr_xml_is(const xmlNode *n, const char *name)
{
	return n != NULL && n->type == XML_ELEMENT_NODE &&
	       strcmp((const char *)n->name, name) == 0;
}

xmlNode *sr_xml_child(const xmlNode *n, const char *name)
{
	if (n == NULL)
		return NULL;
	for (xmlNode *c = n->children; c != NULL; c = c->next)
		if (sr_xml_is(c, name))
			return c;
	return NULL;
}

xmlNode *sr_xml_next(xmlNode *c, const char *name)
{
	for (c = c != NULL ? c->next : NULL; c != NULL; c = c->next)
		if (sr_xml_is(c, name))
			return c;
	return NULL;
}

int sr_xml_text(const xmlNode *n, char *buf, size_t len)
{
	xmlChar *t;

	buf[0] = '\0';
	if (n == NULL)
		return -1;
	t = xmlNodeGetContent(n);
	if (t == NULL)
		return -1;
	snprintf(buf, len, "%s", (const char *)t);
	xmlFree(t);
	return buf[0] != '\0' ? 0 : -1;
}

int sr_xml_ctext(const xmlNode *n, const char *name, char *buf, size_t len)
{
	return sr_xml_text(sr_xml_child(n, name), buf, len);
}

char *sr_xml_strdup(const xmlNode *n)
{
	xmlChar *t;
	char *out = NULL;

	if (n == NULL)
		return NULL;
	t = xmlNodeGetContent(n);
	if (t == NULL)
		return NULL;
	if (t[0] != '\0')
		out = strdup((const char *)t);
	OPENSSL_cleanse(t, strlen((const char *)t));
	xmlFree(t);
	return out;
}

int sr_xml_error(const char *xml, size_t len, char *code, size_t code_len,
		 char *msg, size_t msg_len)
{
	xmlDoc *doc = sr_xml_parse(xml, len);
	xmlNode *root, *e;
	int rc = -1;

	code[0] = '\0';
	msg[0] = '\0';
	if (doc == NULL)
		return rc;
	root = xmlDocGetRootElement(doc);
	e = sr_xml_child(sr_xml_child(root, "Errors"), "Error");
	if (e == NULL)
		e = sr_xml_child(root, "Error");
	if (e != NULL && sr_xml_ctext(e, "Code", code, code_len) == 0) {
		sr_xml_ctext(e, "Message", msg, msg_len);
		rc = 0;
	}
	xmlFreeDoc(doc);
	return rc;
}
