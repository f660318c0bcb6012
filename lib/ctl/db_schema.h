/* db_schema.h - the ordered migrations of spotrund's database. */
#ifndef SR_CTL_DB_SCHEMA_H
#define SR_CTL_DB_SCHEMA_H
#include <stddef.h>
extern const char *const ctl_db_migrations[];
extern const size_t ctl_db_nmigrations;
#endif
