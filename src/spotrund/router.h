/*
 * router.h - route registration for files linked into spotrund.
 * See lib/ctl/router.h and docs/api.md "Adding routes".
 */
#ifndef SR_SPOTRUND_ROUTER_H
#define SR_SPOTRUND_ROUTER_H
#include "ctl/router.h"
#endif
