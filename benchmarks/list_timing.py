"""Where the wall time of one 10,000-Pod LIST on kube-apiserver goes: the server, the wire, the
decoder. Not part of the test run.

    KUBEBUILDER_ASSETS=/var/cache/kinrun/envtest .venv/bin/python benchmarks/list_timing.py
    ... --pods 10000 --repeat 5 --out benchmarks/results/<name>.json

Starts envtest (kube-apiserver 1.20 + etcd, pinned to CPU 0 as ``run.py`` does), creates
``--pods`` Pods (``servers.Envtest.prepare_pods``), then from CPU 1 sends the LISTs an informer
sends, one at a time on one kept-alive HTTP/1.1 TLS connection (``http.client``), the variants
interleaved, ``--repeat`` times each:

- ``json`` / ``protobuf``: ``Accept: application/json`` or ``application/vnd.kubernetes.protobuf``
  (kinrun asks for JSON; client-go for what its ``rest.Config.ContentType`` says);
- ``+gzip``: with ``Accept-Encoding: gzip`` (what Go's ``http.Transport`` sends unless told not
  to, so client-go gets it; kube-apiserver compresses answers over 128 KB when asked, feature
  ``APIResponseCompression``, beta and on since 1.16); kinrun's urllib3 asks for nothing;
- ``rv0``: ``resourceVersion=0&limit=500`` (the reflector's first LIST in kinrun and client-go:
  served from the watch cache, in one piece: the limit is ignored there) or ``paged``:
  ``limit=500`` without resourceVersion (etcd, 500 per page, ``continue`` followed).

For each LIST: the time to the response headers (``ttfb``: the server reads and encodes before
it writes anything), to the last byte (``transfer`` = last - headers), the bytes on the wire and
decoded, kube-apiserver's and etcd's CPU seconds for it (``/proc/<pid>/stat`` before and after:
nothing else talks to the server meanwhile), and for JSON the decode this process does after
the read (``orjson.loads``; kinrun's ``loads_list_page``, what its LIST runs), plus
gunzip when compressed, in this process's CPU seconds (the GC off, as in kinrun's LIST). Prints a table (medians) and writes every sample as JSON.
"""

from __future__ import annotations

import argparse
import gc
import gzip
import http.client
import json
import os
import ssl
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import orjson  # noqa: E402

import servers  # noqa: E402
from kinrun.kube.listwatch import loads_list_page  # noqa: E402

JSON = "application/json"
PROTOBUF = "application/vnd.kubernetes.protobuf"
VARIANTS = {  # name: (Accept, gzip, paged)
    "json-rv0": (JSON, False, False),
    "protobuf-rv0": (PROTOBUF, False, False),
    "json-rv0+gzip": (JSON, True, False),
    "protobuf-rv0+gzip": (PROTOBUF, True, False),
    "json-paged": (JSON, False, True),
    "protobuf-paged": (PROTOBUF, False, True),
}


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Lister:
    """One kept-alive TLS connection to the server; ``list()`` times one (paged) LIST."""

    def __init__(self, srv: servers.Envtest, namespace: str) -> None:
        self.srv, self.path = srv, f"/api/v1/namespaces/{namespace}/pods"
        host, port = srv.srv.url.removeprefix("https://").rsplit(":", 1)
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        self.conn = http.client.HTTPSConnection(host, int(port), timeout=120, context=ctx)
        self.pids = {"apiserver": srv.srv._apiserver.proc.pid, "etcd": srv.srv._etcd.proc.pid}

    def _get(self, query: str, accept: str, gz: bool) -> tuple[bytes, float, float, dict]:
        headers = {"Authorization": f"Bearer {self.srv.srv.token}", "Accept": accept}
        if gz:
            headers["Accept-Encoding"] = "gzip"
        t0 = time.perf_counter()
        self.conn.request("GET", f"{self.path}?{query}", headers=headers)
        resp = self.conn.getresponse()
        t_head = time.perf_counter()
        data = resp.read()
        t_end = time.perf_counter()
        if resp.status != 200:
            raise RuntimeError(f"GET {query}: HTTP {resp.status}: {data[:200]!r}")
        info = {"encoding": resp.getheader("Content-Encoding") or "",
                "transfer_encoding": resp.getheader("Transfer-Encoding") or "",
                "content_type": resp.getheader("Content-Type") or ""}
        return data, t_head - t0, t_end - t_head, info

    def list(self, variant: str) -> dict:
        accept, gz, paged = VARIANTS[variant]
        cpu0 = {k: proc_cpu(p) for k, p in self.pids.items()}
        me0 = time.process_time()
        t0 = time.perf_counter()
        query = "limit=500" if paged else "resourceVersion=0&limit=500"
        bodies, ttfb, transfer, pages, info = [], 0.0, 0.0, 0, {}
        while True:
            data, head, rest, info = self._get(query, accept, gz)
            pages += 1
            if pages == 1:
                ttfb = head
            transfer += rest
            bodies.append(data)
            if not paged or accept != JSON:
                if paged:  # protobuf: the continue token is inside; read it from a JSON page
                    cont = self._continue_of_protobuf(data)
                    if cont:
                        query = f"limit=500&continue={quote(cont)}"
                        continue
                break
            cont = orjson.loads(data)["metadata"].get("continue")
            if not cont:
                break
            query = f"limit=500&continue={quote(cont)}"
        wall = time.perf_counter() - t0
        cpu1 = {k: proc_cpu(p) for k, p in self.pids.items()}
        out = {"variant": variant, "pages": pages, "wall_s": wall, "ttfb_s": ttfb,
               "transfer_s": transfer, "wire_bytes": sum(map(len, bodies)),
               "client_read_cpu_s": time.process_time() - me0,
               "server_cpu_s": {k: cpu1[k] - cpu0[k] for k in cpu0}, **info}
        raw = bodies
        if info.get("encoding") == "gzip":
            t = time.process_time()
            raw = [gzip.decompress(b) for b in bodies]
            out["gunzip_s"] = time.process_time() - t
        out["bytes"] = sum(map(len, raw))
        if accept == JSON:  # CPU seconds, the GC off (as kinrun's LIST: gc_paused)
            gc.disable()
            try:
                t = time.process_time()
                docs = [orjson.loads(b) for b in raw]
                out["orjson_s"] = time.process_time() - t
                out["items"] = sum(len(d["items"]) for d in docs)
                del docs
                t = time.process_time()
                docs = [loads_list_page(b, drop_managed_fields=True) for b in raw]
                out["kinrun_decode_s"] = time.process_time() - t
                del docs
            finally:
                gc.enable()
        return out

    def _continue_of_protobuf(self, data: bytes) -> str:
        """A protobuf page's ``metadata.continue`` (read from the wire form, no decoder)."""
        return _protobuf_continue(data)


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def _fields(buf: bytes, i: int, end: int):
    """(field number, wire type, value or (start, end)) of the protobuf message buf[i:end]."""
    while i < end:
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
            yield num, wt, v
        elif wt == 2:
            n, i = _varint(buf, i)
            yield num, wt, (i, i + n)
            i += n
        elif wt == 5:
            i += 4
        elif wt == 1:
            i += 8
        else:
            raise ValueError(f"wire type {wt}")


def _protobuf_continue(data: bytes) -> str:
    """``metadata.continue`` of a protobuf PodList: the envelope is ``k8s\\0`` + runtime.Unknown
    (field 2 = raw: the PodList), PodList field 1 = ListMeta, ListMeta field 3 = continue
    (k8s.io/apimachinery generated.proto: selfLink 1, resourceVersion 2, continue 3)."""
    assert data[:4] == b"k8s\x00", data[:8]
    for num, wt, v in _fields(data, 4, len(data)):
        if num == 2 and wt == 2:
            for n2, w2, v2 in _fields(data, v[0], v[1]):
                if n2 == 1 and w2 == 2:
                    for n3, w3, v3 in _fields(data, v2[0], v2[1]):
                        if n3 == 3 and w3 == 2:
                            return data[v3[0]:v3[1]].decode()
                    return ""
    return ""


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pods", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--out", default="")
    args = p.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    os.sched_setaffinity(0, {0})  # the servers inherit CPU 0, as in run.py
    samples: list[dict] = []
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load0 = os.getloadavg()
    with servers.Envtest.start_or_none() as srv:
        if srv is None:
            print(f"envtest: skipped ({servers.Envtest.why_not})")
            return 1
        srv.prepare_pods("bench-sync", args.pods)
        os.sched_setaffinity(0, {1})  # the client on CPU 1, as a contender
        lister = Lister(srv, "bench-sync")
        idle = {k: proc_cpu(pid) for k, pid in lister.pids.items()}
        time.sleep(10.0)  # the servers' own background CPU, to subtract from the contenders'
        idle = {k: (proc_cpu(pid) - idle[k]) / 10.0 for k, pid in lister.pids.items()}
        print(f"idle CPU per second: {idle}", flush=True)
        for v in variants:  # warm-up: one of each (connection, watch cache, first encoders)
            lister.list(v)
        for rep in range(args.repeat):
            for v in variants[rep % len(variants):] + variants[:rep % len(variants)]:
                s = lister.list(v) | {"rep": rep, "loadavg": os.getloadavg()[0]}
                print(json.dumps({k: (round(x, 4) if isinstance(x, float) else x)
                                  for k, x in s.items()}), flush=True)
                samples.append(s)
    print(table(samples, variants))
    print(f"{started} .. {time.strftime('%H:%M:%SZ', time.gmtime())}, load {load0} .. "
          f"{os.getloadavg()}")
    if args.out:
        Path(args.out).write_text(json.dumps({"started": started, "pods": args.pods,
                                              "loadavg_start": load0,
                                              "loadavg_end": os.getloadavg(),
                                              "idle_cpu_per_s": idle,
                                              "samples": samples}, indent=1))
    return 0


def table(samples: list[dict], variants: list[str]) -> str:
    def med(rows: list[dict], f) -> str:
        vals = [f(r) for r in rows if f(r) is not None]
        return f"{statistics.median(vals):.3f}" if vals else ""

    lines = ["| LIST | pages | wall s | to headers s | headers to last byte s | MB on the wire "
             "| MB decoded | kube-apiserver CPU s | etcd CPU s | gunzip s | orjson s | kinrun "
             "decode s |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for v in variants:
        rows = [s for s in samples if s["variant"] == v]
        lines.append(
            f"| {v} | {rows[0]['pages'] if rows else ''} | {med(rows, lambda r: r['wall_s'])} | "
            f"{med(rows, lambda r: r['ttfb_s'])} | {med(rows, lambda r: r['transfer_s'])} | "
            f"{med(rows, lambda r: r['wire_bytes'] / 1e6)} | {med(rows, lambda r: r['bytes'] / 1e6)}"
            f" | {med(rows, lambda r: r['server_cpu_s']['apiserver'])} | "
            f"{med(rows, lambda r: r['server_cpu_s']['etcd'])} | "
            f"{med(rows, lambda r: r.get('gunzip_s'))} | {med(rows, lambda r: r.get('orjson_s'))}"
            f" | {med(rows, lambda r: r.get('kinrun_decode_s'))} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
