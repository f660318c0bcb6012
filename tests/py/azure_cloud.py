"""An Azure emulator for the tests (loopback only): Entra's token
endpoint, ARM's virtualMachines with their long-running operations, the
Retail Prices API, and each VM's IMDS with Scheduled Events.

  POST /{tenant}/oauth2/v2.0/token          client credentials -> a token
  PUT|GET|DELETE /subscriptions/{s}/resourceGroups/{rg}/providers/
      Microsoft.Compute/virtualMachines[/{name}]   (Bearer token required)
  GET  /subscriptions/{s}/providers/Microsoft.Compute/locations/{loc}/
      operations/{id}                        InProgress, then the outcome
  GET  /api/retail/prices?$filter=...        one item per page (NextPageLink)
  GET  /imds/{vm}/metadata/instance/compute/name
  GET|POST /imds/{vm}/metadata/scheduledevents  (Metadata: true required)

A VM is its customData (base64, the node's bootstrap script) run by
/bin/sh in a new session under work/<name>/, with SPOTRUN_NODE_ROOT,
SPOTRUN_IMDS_URL (its own IMDS) and SPOTRUN_EMU_HIDE, as the EC2 emulator
runs user-data.  preempt(name) posts a Preempt event for it (and one for
another VM, which its agent must ignore); at NotBefore, or as soon as
the VM acknowledges the event (StartRequests), the VM is evicted:
its processes are killed and, evictionPolicy Delete, it is deleted with
its NIC, disk and IP.  A create's or a delete's answer names its
operation (Azure-AsyncOperation, Retry-After 1).  capacity[size] = False makes a create's
operation fail with AllocationFailed (a capacity error).  Every request
is recorded (method, path, query, headers, body) for the tests."""

import base64
import email.utils
import json
import os
import signal
import subprocess
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "emulator-access-token"


def kill_session(sid):
    """SIGKILL every process of session sid (a VM's processes)."""
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rfind(")") + 2:].split()
        if len(fields) > 3 and int(fields[3]) == sid:
            try:
                os.kill(int(d), signal.SIGKILL)
            except OSError:
                pass


class AzureCloud:
    def __init__(self, work, location="eastus", prices=None, notice_s=30,
                 boot_s=0.2, page=2):
        self.work = work
        self.location = location
        self.prices = prices or {}   # size -> (spot, on-demand) USD/h
        self.notice_s = notice_s
        self.boot_s = boot_s
        self.page = page
        self.vms = {}                # name -> dict
        self.ops = {}                # id -> (vm name, ready_at, outcome)
        self.capacity = {}           # size -> False: AllocationFailed
        self.requests = []
        self.acks = []               # event ids acknowledged
        self.evicted = []            # (name, how): "ack" | "notbefore"
        self.noticed = {}            # name -> when preempt() posted it
        self.incarnation = 1
        self.events = []             # scheduled events (dicts)
        self.mu = threading.Lock()
        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.srv.server_address[1]
        self._stop = threading.Event()
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self._clock = threading.Thread(target=self._tick, daemon=True)
        self._clock.start()

    # ---- control from the test -------------------------------------------
    def preempt(self, name):
        """Post a Preempt for VM `name` (and a Freeze for another VM)."""
        nb = time.time() + self.notice_s
        with self.mu:
            self.events.append({
                "EventId": "other-%d" % self.incarnation,
                "EventType": "Freeze", "ResourceType": "VirtualMachine",
                "Resources": ["another-vm"], "EventStatus": "Scheduled",
                "NotBefore": email.utils.formatdate(nb, usegmt=True),
                "Description": "another VM's event",
                "EventSource": "Platform", "DurationInSeconds": 5})
            self.events.append({
                "EventId": "preempt-%s" % name, "EventType": "Preempt",
                "ResourceType": "VirtualMachine", "Resources": [name],
                "EventStatus": "Scheduled",
                "NotBefore": email.utils.formatdate(nb, usegmt=True),
                "Description": "Spot eviction", "EventSource": "Platform",
                "DurationInSeconds": -1, "_at": nb})
            self.incarnation += 1
            self.noticed[name] = time.time()

    def running(self):
        with self.mu:
            return [n for n, v in self.vms.items()
                    if v["state"] == "Succeeded"]

    def stop(self):
        self._stop.set()
        self.srv.shutdown()
        self.srv.server_close()
        with self.mu:
            for v in self.vms.values():
                self._kill(v)

    # ---- internals --------------------------------------------------------
    def _kill(self, v):
        """Kill the VM's process session (the agent and its workload)."""
        p = v.get("proc")
        v["proc"] = None
        if not p:
            return
        kill_session(p.pid)
        p.poll()

    def _evict(self, name, how):
        v = self.vms.pop(name, None)
        if v:
            self._kill(v)
            self.evicted.append((name, how))
        self.events = [e for e in self.events if name not in e["Resources"]]
        self.incarnation += 1

    def _tick(self):
        while not self._stop.wait(0.05):
            now = time.time()
            with self.mu:
                for e in list(self.events):
                    if e.get("_acked"):
                        self._evict(e["Resources"][0], "ack")
                    elif e.get("_at") and now >= e["_at"]:
                        self._evict(e["Resources"][0], "notbefore")
                for op, (name, at, outcome) in list(self.ops.items()):
                    v = self.vms.get(name)
                    if v and v["state"] == "Creating" and now >= at:
                        if outcome == "Succeeded":
                            v["state"] = "Succeeded"
                            self._boot(name, v)
                        else:
                            v["state"] = "Failed"

    def _boot(self, name, v):
        d = os.path.join(self.work, name)
        os.makedirs(os.path.join(d, "root"), exist_ok=True)
        script = base64.b64decode(
            v["body"]["properties"]["osProfile"].get("customData", ""))
        path = os.path.join(d, "custom-data.sh")
        with open(path, "wb") as f:
            f.write(script)
        env = dict(os.environ, SPOTRUN_NODE_ROOT=os.path.join(d, "root"),
                   SPOTRUN_IMDS_URL="%s/imds/%s" % (self.url, name),
                   SPOTRUN_EMU_HIDE=self.work)
        log = open(os.path.join(d, "boot.log"), "wb")
        v["proc"] = subprocess.Popen(["/bin/sh", path], env=env, stdout=log,
                                     stderr=subprocess.STDOUT,
                                     start_new_session=True)
        log.close()

    def _op_url(self, op):
        return ("%s/subscriptions/sub/providers/Microsoft.Compute/locations/"
                "%s/operations/%s?api-version=2024-03-01"
                % (self.url, self.location, op))

    def _vm_view(self, name, v):
        b = v["body"]
        out = {"name": name, "location": b["location"], "tags": b["tags"],
               "id": "/subscriptions/sub/resourceGroups/rg/providers/"
                     "Microsoft.Compute/virtualMachines/" + name,
               "properties": {
                   "provisioningState": v["state"],
                   "hardwareProfile": b["properties"]["hardwareProfile"],
                   "priority": b["properties"].get("priority", "Regular"),
                   "timeCreated": time.strftime(
                       "%Y-%m-%dT%H:%M:%SZ", time.gmtime(v["created"]))}}
        if "zones" in b:
            out["zones"] = b["zones"]
        return out

    def _handler(self):
        cloud = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, status, body=None, headers=None):
                data = b"" if body is None else (
                    body if isinstance(body, bytes) else
                    json.dumps(body).encode())
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _err(self, status, code, msg):
                self._send(status, {"error": {"code": code, "message": msg}})

            def _do(self):
                u = urllib.parse.urlsplit(self.path)
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                with cloud.mu:
                    cloud.requests.append({
                        "method": self.command, "path": u.path,
                        "query": u.query, "headers": dict(self.headers),
                        "body": body})
                parts = u.path.strip("/").split("/")
                if len(parts) >= 2 and parts[0] == "imds":
                    return self._imds(parts[1], "/" + "/".join(parts[2:]),
                                      body)
                if u.path.endswith("/oauth2/v2.0/token"):
                    return self._token(body)
                if u.path == "/api/retail/prices":
                    return self._prices(u.query)
                if self.headers.get("Authorization") != "Bearer " + TOKEN:
                    return self._err(401, "InvalidAuthenticationToken",
                                     "bad token")
                if "/operations/" in u.path:
                    return self._op(parts[-1])
                if "virtualMachines" in parts:
                    i = parts.index("virtualMachines")
                    name = parts[i + 1] if len(parts) > i + 1 else None
                    return self._vm(name, body, u.query)
                return self._err(404, "NotFound", u.path)

            do_GET = do_PUT = do_POST = do_DELETE = _do

            def _token(self, body):
                f = urllib.parse.parse_qs(body.decode())
                if (f.get("grant_type") != ["client_credentials"] or
                        f.get("scope") != [
                            "https://management.azure.com/.default"] or
                        not f.get("client_id") or
                        not (f.get("client_secret") or
                             f.get("client_assertion"))):
                    return self._send(400, {"error": "invalid_request"})
                self._send(200, {"token_type": "Bearer", "expires_in": 3599,
                                 "ext_expires_in": 3599,
                                 "access_token": TOKEN})

            def _prices(self, query):
                q = urllib.parse.parse_qs(query)
                flt = q.get("$filter", [""])[0]
                skip = int(q.get("$skip", ["0"])[0])
                items = []
                for size, (spot, od) in sorted(cloud.prices.items()):
                    if "'%s'" % size not in flt:
                        continue
                    short = size.replace("Standard_", "").replace("_", " ")
                    for sku, p in ((short + " Spot", spot), (short, od),
                                   (short + " Low Priority", od / 5)):
                        items.append({
                            "currencyCode": "USD", "retailPrice": p,
                            "unitPrice": p, "armRegionName": cloud.location,
                            "location": "US East", "armSkuName": size,
                            "skuName": sku, "meterName": sku,
                            "productName": "Virtual Machines Series",
                            "serviceName": "Virtual Machines",
                            "unitOfMeasure": "1 Hour",
                            "type": "Consumption"})
                page = items[skip:skip + 1]
                nxt = None
                if skip + 1 < len(items):
                    nxt = "%s/api/retail/prices?%s" % (
                        cloud.url, urllib.parse.urlencode(
                            {"$filter": flt, "$skip": skip + 1}))
                self._send(200, {"BillingCurrency": "USD", "Items": page,
                                 "NextPageLink": nxt,
                                 "Count": len(page)})

            def _op(self, op):
                with cloud.mu:
                    o = cloud.ops.get(op)
                    v = cloud.vms.get(o[0]) if o else None
                    st = v["state"] if v else None
                if not o:
                    return self._err(404, "NotFound", op)
                if o[0] is None:  # a delete: done when answered
                    return self._send(200, {"status": "Succeeded"})
                if st == "Creating":
                    return self._send(200, {"status": "InProgress"},
                                      {"Retry-After": "1"})
                if st == "Failed" or o[2] != "Succeeded":
                    return self._send(200, {"status": "Failed", "error": {
                        "code": o[2], "message": "Allocation failed."}})
                self._send(200, {"status": "Succeeded"})

            def _vm(self, name, body, query):
                if "api-version=" not in query:
                    return self._err(400, "MissingApiVersionParameter", "")
                if self.command == "GET" and name is None:
                    q = urllib.parse.parse_qs(query)
                    skip = int(q.get("$skiptoken", ["0"])[0])
                    with cloud.mu:
                        allv = [cloud._vm_view(n, v) for n, v in
                                sorted(cloud.vms.items())]
                    page = allv[skip:skip + cloud.page]
                    out = {"value": page}
                    if skip + cloud.page < len(allv):
                        out["nextLink"] = "%s%s?api-version=2024-03-01&" \
                            "$skiptoken=%d" % (cloud.url, self.path.split(
                                "?")[0], skip + cloud.page)
                    return self._send(200, out)
                with cloud.mu:
                    v = cloud.vms.get(name)
                    if self.command == "GET":
                        if not v:
                            return self._err(404, "ResourceNotFound", name)
                        return self._send(200, cloud._vm_view(name, v))
                    if self.command == "DELETE":
                        if not v:
                            return self._send(204)
                        cloud._kill(v)
                        del cloud.vms[name]
                        op = "del-%s-%d" % (name, len(cloud.ops))
                        cloud.ops[op] = (None, time.time(), "Succeeded")
                        return self._send(202, None, {
                            "Azure-AsyncOperation": cloud._op_url(op),
                            "Retry-After": "1"})
                    doc = json.loads(body)
                    p = doc["properties"]
                    size = p["hardwareProfile"]["vmSize"]
                    if v:
                        return self._send(200, cloud._vm_view(name, v))
                    op = "op-%s-%d" % (name, len(cloud.ops))
                    outcome = "Succeeded" if cloud.capacity.get(
                        size, True) else "AllocationFailed"
                    cloud.vms[name] = {"body": doc, "state": "Creating",
                                       "created": time.time(), "proc": None}
                    cloud.ops[op] = (name, time.time() + cloud.boot_s,
                                     outcome)
                    view = cloud._vm_view(name, cloud.vms[name])
                self._send(201, view, {
                    "Azure-AsyncOperation": cloud._op_url(op),
                    "Retry-After": "1"})

            def _imds(self, name, path, body):
                if self.headers.get("Metadata") != "true":
                    return self._send(400, {"error": "bad_request"})
                with cloud.mu:
                    if name not in cloud.vms:
                        return self._send(404, {"error": "not_found"})
                    if path == "/metadata/instance/compute/name":
                        return self._send(200, name.encode())
                    if path != "/metadata/scheduledevents":
                        return self._send(404, {"error": "not_found"})
                    if self.command == "POST":
                        for r in json.loads(body).get("StartRequests", []):
                            cloud.acks.append(r["EventId"])
                            for e in cloud.events:
                                if e["EventId"] == r["EventId"] and \
                                        e.get("_at"):
                                    # Azure proceeds at once (next tick)
                                    e["_at"] = 0
                                    e["_acked"] = True
                        return self._send(200, b"")
                    doc = {"DocumentIncarnation": cloud.incarnation,
                           "Events": [{k: v for k, v in e.items()
                                       if not k.startswith("_")}
                                      for e in cloud.events]}
                self._send(200, doc)

        return H
