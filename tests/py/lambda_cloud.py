"""A Lambda Cloud emulator for the tests (loopback only): the REST API's
instance-types, launch, instances and terminate, with an API key,
insufficient-capacity errors and instances that boot, and `lambda_ssh.py`
as the ssh the driver's bootstrap step runs: an instance's "IP" names its
directory under work/, where the stand-in runs the piped script in a
session of its own (SPOTRUN_NODE_ROOT=work/<ip>/root), as sshd would run
it on the machine.  fail(id) ends an instance as a host failure would
(terminated, its processes killed).  Every request is recorded."""

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from azure_cloud import kill_session

KEY = "lambda-emulator-key"
SSH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lambda_ssh.py")


class LambdaCloud:
    def __init__(self, work, types=None, boot_s=0.3):
        self.work = work
        self.types = types or {}     # name -> (cents/h, [regions])
        self.boot_s = boot_s
        self.instances = {}          # id -> dict
        self.requests = []
        self.mu = threading.Lock()
        self.srv = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.srv.daemon_threads = True
        self.url = "http://127.0.0.1:%d/api/v1" % self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def fail(self, iid):
        with self.mu:
            self._end(self.instances[iid])

    def live(self):
        with self.mu:
            return [i for i in self.instances.values()
                    if i["status"] != "terminated"]

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()
        with self.mu:
            for i in self.instances.values():
                self._end(i)

    def _end(self, inst):
        inst["status"] = "terminated"
        pid = os.path.join(self.work, inst["ip"], "pid")
        if os.path.exists(pid):
            with open(pid) as f:
                kill_session(int(f.read()))

    def _view(self, i):
        st = i["status"]
        if st == "booting" and time.time() >= i["at"]:
            st = i["status"] = "active"
        return {"id": i["id"], "name": i["name"], "ip": i["ip"],
                "status": st, "region": {"name": i["region"]},
                "instance_type": {"name": i["type"]},
                "ssh_key_names": i["keys"], "file_system_names": []}

    def _handler(self):
        cloud = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, status, doc):
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _err(self, status, code, msg):
                self._send(status, {"error": {"code": code, "message": msg}})

            def _do(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n)) if n else None
                path = self.path.split("/api/v1", 1)[-1]
                with cloud.mu:
                    cloud.requests.append((self.command, path, body))
                if self.headers.get("Authorization") != "Bearer " + KEY:
                    return self._err(401, "global/invalid-api-key",
                                     "API key was invalid")
                if path == "/instance-types" and self.command == "GET":
                    return self._send(200, {"data": {
                        name: {"instance_type": {
                            "name": name, "price_cents_per_hour": cents,
                            "description": name},
                            "regions_with_capacity_available": [
                                {"name": r} for r in regions]}
                        for name, (cents, regions) in cloud.types.items()}})
                if path == "/instances" and self.command == "GET":
                    with cloud.mu:
                        return self._send(200, {"data": [
                            cloud._view(i) for i in
                            cloud.instances.values()]})
                if path == "/instance-operations/launch":
                    return self._launch(body)
                if path == "/instance-operations/terminate":
                    with cloud.mu:
                        done = []
                        for iid in body["instance_ids"]:
                            i = cloud.instances.get(iid)
                            if i:
                                cloud._end(i)
                                done.append(cloud._view(i))
                    return self._send(200, {"data": {
                        "terminated_instances": done}})
                self._err(404, "global/object-does-not-exist", path)

            do_GET = do_POST = _do

            def _launch(self, b):
                t = cloud.types.get(b.get("instance_type_name"))
                if not t:
                    return self._err(400, "global/invalid-parameters",
                                     "unknown instance type")
                if b.get("region_name") not in t[1]:
                    return self._err(
                        400, "instance-operations/launch/"
                        "insufficient-capacity",
                        "Not enough capacity to fulfill launch request.")
                if b.get("quantity") != 1 or not b.get("ssh_key_names"):
                    return self._err(400, "global/invalid-parameters",
                                     "quantity 1 and an SSH key")
                with cloud.mu:
                    n = len(cloud.instances) + 1
                    iid = "0920582c7ff041399e34823a0be6%04d" % n
                    ip = "127.0.%d.%d" % (n // 250, n % 250 + 1)
                    os.makedirs(os.path.join(cloud.work, ip, "root"))
                    cloud.instances[iid] = {
                        "id": iid, "name": b.get("name"), "ip": ip,
                        "status": "booting", "region": b["region_name"],
                        "type": b["instance_type_name"],
                        "keys": b["ssh_key_names"],
                        "at": time.time() + cloud.boot_s}
                self._send(200, {"data": {"instance_ids": [iid]}})

        return H
