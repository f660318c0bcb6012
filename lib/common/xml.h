/*
 * xml.h - reading the XML answers of AWS's Query protocol (EC2, STS) with
 * libxml2.
 *
 * Documents are parsed with XML_PARSE_NONET and without entity
 * substitution or DTD loading, so an answer cannot make us read a file or
 * the network; the caller bounds the size.  Elements are found by local
 * name (the services' namespaces are ignored).
 */
#ifndef SR_COMMON_XML_H
#define SR_COMMON_XML_H

#include <stdbool.h>
#include <stddef.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

/* The document, or NULL when xml is empty, too big or malformed.  Free
 * with xmlFreeDoc(). */
xmlDoc *sr_xml_parse(const char *xml, size_t len);

/* n is an element called name. */
bool sr_xml_is(const xmlNode *n, const char *name);

/* First element child of n called name, or NULL (n may be NULL). */
xmlNode *sr_xml_child(const xmlNode *n, const char *name);

/* Next sibling element called name after c, or NULL. */
xmlNode *sr_xml_next(xmlNode *c, const char *name);

/* Text of element n into buf (cut to fit); "" when n is NULL.  Returns 0
 * when n had text, -1 otherwise. */
int sr_xml_text(const xmlNode *n, char *buf, size_t len);

/* Text of the child `name` of n, as sr_xml_text. */
int sr_xml_ctext(const xmlNode *n, const char *name, char *buf, size_t len);

/* Text of element n, malloc'd (caller frees; for secrets: wipes), or
 * NULL when n is NULL, empty or memory ran out.  libxml's own copy is
 * wiped before it is freed. */
char *sr_xml_strdup(const xmlNode *n);

/* The Code and Message of an error answer: <Response><Errors><Error>
 * (EC2) or <ErrorResponse><Error> (STS, IAM).  0, or -1 when the body is
 * no such document (code and msg are then ""). */
int sr_xml_error(const char *xml, size_t len, char *code, size_t code_len,
		 char *msg, size_t msg_len);

#endif
