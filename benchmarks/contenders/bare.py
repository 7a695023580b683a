"""Baseline: no framework — urllib3 plus ``orjson.loads``, the floor every contender sits on.

``sync``: a paged LIST (``limit=500``, following ``continue``) decoded with orjson; each item
counts as handled. ``events`` / ``latency``: a WATCH read line by line, each line decoded with
orjson and counted. A plain dict of the decoded objects is the cache; no queue, no handler; the cyclic GC is
disabled (decoded JSON has no cycles), so this is the floor of decoding and keeping objects. Reads the server, token and TLS setting
from the kubeconfig's current context (token or no auth; ``insecure-skip-tls-verify``).
"""

from __future__ import annotations

import _common

ARGS = _common.parse_args()
REC, GCMON, RSS0 = _common.start(ARGS)

import gc  # noqa: E402
import threading  # noqa: E402

gc.disable()  # the floor: decoded JSON is acyclic, and no collection ever runs here

import orjson  # noqa: E402
import urllib3  # noqa: E402
import yaml  # noqa: E402


def connection(path: str) -> tuple[str, dict[str, str], urllib3.PoolManager]:
    """(server URL, headers, pool) for the kubeconfig's current context."""
    with open(path) as f:
        kc = yaml.safe_load(f)
    ctx = next(c["context"] for c in kc["contexts"] if c["name"] == kc["current-context"])
    cluster = next(c["cluster"] for c in kc["clusters"] if c["name"] == ctx["cluster"])
    user = next((u["user"] for u in kc.get("users") or [] if u["name"] == ctx.get("user")), {})
    headers = {"Accept": "application/json"}
    if user.get("token"):
        headers["Authorization"] = f"Bearer {user['token']}"
    kw = {"cert_reqs": "CERT_NONE"} if cluster.get("insecure-skip-tls-verify") else {}
    urllib3.disable_warnings()
    return cluster["server"].rstrip("/"), headers, urllib3.PoolManager(**kw)


CACHE: dict[str, dict] = {}


def handle(obj: dict) -> None:
    md = obj["metadata"]
    CACHE[f"{md.get('namespace', '')}/{md['name']}"] = obj
    REC.handled(md["name"], md.get("namespace", ""), md.get("annotations"))


def paged_list(base: str, headers: dict, pool: urllib3.PoolManager, url: str) -> str:
    """LIST every page; returns the list's resourceVersion."""
    cont = ""
    while True:
        fields = {"limit": "500"} | ({"continue": cont} if cont else {})
        r = pool.request("GET", base + url, fields=fields, headers=headers)
        body = orjson.loads(r.data)
        for obj in body["items"]:
            handle(obj)
        cont = body["metadata"].get("continue", "")
        if not cont:
            return body["metadata"]["resourceVersion"]


def watch(base: str, headers: dict, pool: urllib3.PoolManager, url: str, since: str) -> None:
    fields = {"watch": "1", "resourceVersion": since, "allowWatchBookmarks": "true",
              "timeoutSeconds": "3600"}
    r = pool.request("GET", base + url, fields=fields, headers=headers, preload_content=False)
    buf = b""
    for chunk in r.stream(1 << 16):
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            ev = orjson.loads(line)
            if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                handle(ev["object"])
        if REC.done.is_set():
            return


def run() -> None:
    base, headers, pool = connection(ARGS.kubeconfig)
    url = f"/api/v1/namespaces/{ARGS.namespace}/pods"
    REC.opened()
    since = ARGS.since
    if ARGS.workload != "events":
        since = paged_list(base, headers, pool, url)
        if ARGS.workload == "sync":
            return
    watch(base, headers, pool, url, since)


threading.Thread(target=run, daemon=True, name="bare").start()
_common.wait_and_emit("bare", ARGS, REC, GCMON, RSS0)
