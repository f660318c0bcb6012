/*
 * ctlfile.c - the daemon's configuration file (see ctlfile.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "common/fsutil.h"
#include "ctl/ctlfile.h"

static int add_setting(struct ctl_file *f, const char *k, const char *v,
		       int line)
{
	struct ctl_file_setting *s = realloc(f->v, (f->n + 1) * sizeof *s);

	if (!s)
		return -ENOMEM;
	f->v = s;
	s[f->n].key = strdup(k);
	s[f->n].val = strdup(v);
	s[f->n].line = line;
	if (!s[f->n].key || !s[f->n].val) {
		free(s[f->n].key);
		free(s[f->n].val);
		return -ENOMEM;
	}
	f->n++;
	return 0;
}

/* The same key twice ("state_dir" and "state-dir" too). */
static const struct ctl_file_setting *seen(const struct ctl_file *f,
					   const char *k)
{
	for (size_t i = 0; i < f->n; i++) {
		const char *a = f->v[i].key, *b = k;

		while (*a && *b && (*a == *b || ((*a == '_' || *a == '-') &&
						 (*b == '_' || *b == '-')))) {
			a++;
			b++;
		}
		if (!*a && !*b)
			return &f->v[i];
	}
	return NULL;
}

static int doc_read(struct ctl_file *f, yaml_document_t *doc, struct sr_err *e)
{
	yaml_node_t *root = yaml_document_get_root_node(doc);

	if (!root)
		return 0; /* an empty file: nothing set */
	if (root->type != YAML_MAPPING_NODE)
		return sr_err_set(e, -EINVAL, "%s:%d: expected a mapping of "
				  "settings (listen: ..., providers: ...)", f->path,
				  (int)root->start_mark.line + 1);
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		int line = (int)k->start_mark.line + 1;
		const char *ks = k->type == YAML_SCALAR_NODE ?
				 (const char *)k->data.scalar.value : NULL;
		const struct ctl_file_setting *dup;
		int rc;

		if (!ks || !ks[0])
			return sr_err_set(e, -EINVAL, "%s:%d: expected a setting "
					  "name", f->path, line);
		if (!strcmp(ks, "providers")) {
			if (f->providers.n)
				return sr_err_set(e, -EINVAL, "%s:%d: providers: "
						  "given twice", f->path, line);
			rc = cloud_confs_parse_yaml(doc, v, f->path, &f->providers,
						    e);
			if (rc)
				return rc;
			continue;
		}
		if (v->type != YAML_SCALAR_NODE)
			return sr_err_set(e, -EINVAL, "%s:%d: %s: expected a value "
					  "(a string or a number)", f->path, line, ks);
		dup = seen(f, ks);
		if (dup)
			return sr_err_set(e, -EINVAL, "%s:%d: %s: given twice "
					  "(first on line %d)", f->path, line, ks,
					  dup->line);
		if (add_setting(f, ks, (const char *)v->data.scalar.value, line))
			return sr_err_set(e, -ENOMEM, "out of memory");
	}
	return 0;
}

int ctl_file_load(const char *path, struct ctl_file *out, struct sr_err *e)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	char *buf = NULL;
	size_t len = 0;
	bool have_parser = false, have_doc = false;
	int rc;

	memset(out, 0, sizeof *out);
	out->path = strdup(path);
	if (!out->path)
		return sr_err_set(e, -ENOMEM, "out of memory");
	rc = sr_fs_read_file(path, CTL_FILE_MAX, &buf, &len, e);
	if (rc)
		goto out;
	if (!yaml_parser_initialize(&parser)) {
		rc = sr_err_set(e, -ENOMEM, "out of memory");
		goto out;
	}
	have_parser = true;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		rc = sr_err_set(e, -EINVAL, "%s:%d: not YAML: %s", path,
				(int)parser.problem_mark.line + 1,
				parser.problem ? parser.problem : "parse error");
		goto out;
	}
	have_doc = true;
	rc = doc_read(out, &doc, e);
out:
	if (have_doc)
		yaml_document_delete(&doc);
	if (have_parser)
		yaml_parser_delete(&parser);
	free(buf);
	return rc;
}

void ctl_file_free(struct ctl_file *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++) {
		free(f->v[i].key);
		free(f->v[i].val);
	}
	free(f->v);
	free(f->path);
	cloud_confs_free(&f->providers);
	memset(f, 0, sizeof *f);
}

int ctl_config_file_providers(const char *path, struct cloud_confs *out,
			      struct sr_err *e)
{
	struct ctl_file f;
	int rc = ctl_file_load(path, &f, e);

	if (!rc) {
		*out = f.providers; /* moved */
		memset(&f.providers, 0, sizeof f.providers);
	}
	ctl_file_free(&f);
	return rc;
}
