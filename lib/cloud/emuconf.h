/*
 * emuconf.h - what every emulator of the local spot cloud is started
 * with (lib/gcp/gceemu.h, lib/azure/azemu.h, lib/lambda/lambdaemu.h;
 * cloud/emuhttp.h emuhttp_open reads it).
 */
#ifndef SR_CLOUD_EMUCONF_H
#define SR_CLOUD_EMUCONF_H

struct emuhttp_conf {
	const char *data_dir;      /* catalog + traces */
	const char *work_dir;      /* VM directories (must exist) */
	int port;                  /* 0: ephemeral */
	double time_scale;         /* cloud s per real s; 0: 1 */
	/* "KEY=none" / "KEY=plenty": a zone's (GCE), a size's (Azure) or a
	 * type's (Lambda) capacity, whatever the trace says (NULL-terminated,
	 * may be NULL) */
	const char *const *capacity;
};

#endif
