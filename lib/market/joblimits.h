/*
 * joblimits.h - the one table of a job's numeric limits.
 *
 * The job file parser (jobspec.c), the stored-spec reader
 * (jobspec_json.c), the REST API's body parser (lib/ctl/api_body.c) and
 * the database schema's CHECK constraints (lib/store/schema.c) all take
 * their bounds from here, so a value one of them accepts is never refused
 * by another (issue 10: num_nodes 1025..4096 passed the job file and then
 * failed the schema with a 500).
 *
 *   field                    min   max    where
 *   num_nodes                  1   1024   job file, stored spec, schema
 *   resources.accelerators     1   1024   job file, stored spec (count)
 *   spotrun.max_restarts       0   1000   job file, API body, schema
 *   YAML nesting depth         -     64   job file (rejected while parsing)
 *   job file size (bytes)      -   256 KiB  every reader of a job file: the
 *                                         parser (so the CLI's plan, launch,
 *                                         sim), the API's spec_yaml
 *
 * Values must stay plain integer literals: the schema pastes them into
 * its SQL text with SR_LIMIT_STR().
 */
#ifndef SR_MARKET_JOBLIMITS_H
#define SR_MARKET_JOBLIMITS_H

#define SR_LIMIT_NUM_NODES_MIN 1
#define SR_LIMIT_NUM_NODES_MAX 1024
#define SR_LIMIT_ACCEL_COUNT_MAX 1024
#define SR_LIMIT_MAX_RESTARTS_MAX 1000
#define SR_LIMIT_SPARES_MAX 64      /* spotrun.spares */
#define SR_LIMIT_PEER_REPLICAS_MAX 8 /* spotrun.peer_replicas */
#define SR_LIMIT_YAML_DEPTH 64
#define SR_LIMIT_JOB_BYTES 262144

#define SR_LIMIT_STR_(x) #x
#define SR_LIMIT_STR(x) SR_LIMIT_STR_(x)

#endif
