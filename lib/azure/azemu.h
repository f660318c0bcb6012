/*
 * azemu.h - an Azure emulator for the local spot cloud: Microsoft Entra's
 * token endpoint, the ARM calls the azure driver makes (virtualMachines
 * with their long-running operations; the NICs, OS disks and public IPs
 * a VM brings), the Retail Prices API, and each VM's IMDS with Scheduled
 * Events, for the Azure pools of one location of the local market
 * (cloud/localmkt.h: catalog offerings whose spot availability replays
 * real traces).
 *
 *   POST {url}/{tenant}/oauth2/v2.0/token   grant_type client_credentials,
 *        scope https://management.azure.com/.default, client_id, and
 *        client_secret or a client_assertion (a three-part JWT, PS256 or
 *        RS256, whose aud is a .../{tenant}/oauth2/v2.0/token URL) ->
 *        {"token_type":"Bearer","expires_in":3599,"access_token"}; else
 *        400 invalid_request / invalid_client (AADSTS codes)
 *   {url}/subscriptions/{s}/resourceGroups/{rg}/providers/...
 *        (Authorization: Bearer <a token it issued>, else 401
 *        InvalidAuthenticationToken; api-version required, else 400
 *        MissingApiVersionParameter; while throttled 429 TooManyRequests
 *        with Retry-After: 1)
 *     PUT    Microsoft.Compute/virtualMachines/{name}   201 + the VM
 *            (Creating) + Azure-AsyncOperation + Retry-After: 1; the same
 *            name again: 200, the VM it has.  A size the location does
 *            not sell: 409 SkuNotAvailable; over --quota-vms VMs: 409
 *            OperationNotAllowed (a core quota).  Its NIC, OS disk and
 *            public IP (networkInterfaceConfigurations[0], osDisk,
 *            publicIPAddressConfiguration, each with its deleteOption)
 *            are made with it.  Spot without capacity now (the trace, or
 *            --capacity SIZE=none): the operation ends Failed with
 *            AllocationFailed (ZonalAllocationFailed with zones) and the
 *            VM stays, provisioningState Failed.
 *     GET    Microsoft.Compute/virtualMachines[/{name}]  (list: --page a
 *            page, nextLink with $skiptoken)
 *     DELETE Microsoft.Compute/virtualMachines/{name}   202 + operation;
 *            its NIC/disk/IP go with it when their deleteOption is
 *            Delete, else they stay, detached
 *     GET    Microsoft.Network/networkInterfaces, Microsoft.Compute/disks,
 *            Microsoft.Network/publicIPAddresses (lists: which VM / NIC
 *            each is attached to: virtualMachine, managedBy,
 *            ipConfiguration)
 *     DELETE those by name: 202 + operation; one still attached: 400
 *            NicInUse / OperationNotAllowed / PublicIPAddressInUse
 *   GET  {url}/subscriptions/{s}/providers/Microsoft.Compute/locations/
 *        {loc}/operations/{id}    InProgress (Retry-After: 1) for
 *        --boot-s real seconds after the PUT, then Succeeded or Failed
 *        {"error":{"code","message"}}
 *   GET  {url}/api/retail/prices?$filter=...   the market's spot and
 *        pay-as-you-go prices (and a Low Priority row) of each size the
 *        filter names ('SIZE'), --page items a page, NextPageLink
 *   {url}/imds/{vm}/metadata/...  the VM's IMDS (Metadata: true required,
 *        else 400): instance/compute/name, identity/oauth2/token (a
 *        managed identity's token), scheduledevents (GET: DocumentIncarnation
 *        and every event; POST {"StartRequests":[{"EventId"}]})
 *   POST {url}/emu/preempt?name=N (every running spot VM without name;
 *        the size keeps no spot capacity after unless &keep_capacity=
 *        true), /emu/event?name=N&type=Preempt|Terminate|Reboot|Redeploy|
 *        Freeze (azemu_event), /emu/capacity?size=S&spot=none|plenty,
 *        /emu/throttle?n=K
 *        (the next K ARM calls answer 429), /emu/leak?name=N (the VM
 *        goes, its NIC, disk and IP stay, detached: a leak to sweep)
 *   GET  {url}/emu/state  {"vms":[{name,state,size,spot,tags}],"nics":[],
 *        "disks":[],"ips":[],"acks":[event ids],"evicted":[{name,how}],
 *        "noticed":{name: epoch s}}
 *   GET  {url}/emu/requests  every call but IMDS's recorded (the last 512):
 *        [{method,path,query,body}] (tests read what the driver sent)
 *
 * A VM is its customData (the bootstrap, base64) run by /bin/sh in a new
 * session under <work_dir>/<name>/ with SPOTRUN_NODE_ROOT, SPOTRUN_IMDS_URL
 * = <url>/imds/<name> and SPOTRUN_EMU_HIDE (emuhttp_vm_spawn).  Eviction
 * (the trace's pool losing capacity, /emu/preempt, azemu_preempt): a
 * Preempt event for the VM, NotBefore notice_s cloud seconds ahead, and a
 * Freeze event for another VM (its agent must leave it alone); at
 * NotBefore, or as soon as the VM acknowledges its event (StartRequests),
 * the VM is evicted: its session killed, and (evictionPolicy Delete) it
 * is deleted with the resources whose deleteOption is Delete.  Every
 * change of the event list moves DocumentIncarnation.
 *
 * Clock: cloud time = time_scale x real time since start.  Listens on
 * 127.0.0.1 only.  Thread-safe.
 */
#ifndef SR_AZURE_AZEMU_H
#define SR_AZURE_AZEMU_H

#include <stdbool.h>

#include <jansson.h>

#include "cloud/emuconf.h"
#include "common/err.h"

struct azemu_opts {
	struct emuhttp_conf conf;  /* capacity: "SIZE=none|plenty" */
	const char *location;      /* NULL: "eastus" */
	double notice_s;           /* Preempt -> NotBefore, cloud s; 0: 30 */
	double boot_s;             /* a create's operation, real s; 0: 0.2 */
	int page;                  /* VMs / prices a page; 0: 50 */
	int quota_vms;             /* VMs at most; 0: no limit */
};

struct azemu;

int azemu_start(const struct azemu_opts *o, struct azemu **out,
		struct sr_err *e);
const char *azemu_url(const struct azemu *m);
/* Evict VM `name` (NULL: every running spot VM) with a Preempt notice;
 * reclaim: its size keeps no spot capacity after.  How many. */
int azemu_preempt(struct azemu *m, const char *name, bool reclaim);
/* Post a Scheduled Event of type for VM name (Preempt, Terminate: the VM
 * is deleted at its acknowledgement or NotBefore; Reboot, Redeploy,
 * Freeze: the event ends then, the VM runs on), beside another VM's
 * Freeze: 0, -SR_ENOTFOUND (no such VM), -EINVAL (type). */
int azemu_event(struct azemu *m, const char *name, const char *type);
/* VM name goes, its NIC, disk and IP stay, detached (a leak to sweep):
 * 1, or 0 when there is no such VM. */
int azemu_leak(struct azemu *m, const char *name);
/* GET /emu/state's document (new reference). */
json_t *azemu_state(struct azemu *m);
void azemu_stop(struct azemu *m); /* kills every VM; NULL-safe */

#endif
