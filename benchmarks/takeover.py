"""Leader takeover with and without warm standby, on a real kube-apiserver (envtest).

Run: ``KUBEBUILDER_ASSETS=... python benchmarks/takeover.py [--pods 10000] [--repeat 2]``.
Not part of the test run.

Per mode (``warm``: ``leaderElection.warmStandby: true``; ``cold``: false) and repetition: a
leader and a standby ``kinrun CONFIG`` on ``--pods`` Pods; the leader is killed (SIGKILL: no
release, as a crashed node), and the standby's log gives, from the moment it became leader:
the first reconcile, and the last of the ``--pods`` initial reconciles (a hook plugin counts
them and logs ``reconciled N``). The lease duration is short (4 s) so that the expiry wait,
which is the same for both modes, does not dominate; it is reported apart.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from servers import Envtest  # noqa: E402

PLUGIN = '''
import logging
from kinrun.hooks import hookimpl
_seen = set()
_log = logging.getLogger("takeover")

@hookimpl
def kinrun_reconcile(key, obj):
    if obj is not None and key not in _seen:
        _seen.add(key)
        if len(_seen) == 1 or len(_seen) % {step} == 0:
            _log.info("reconciled %d", len(_seen))
'''

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
plugins: [./takeover_plugin.py]
informers:
  pods: {{apiVersion: v1, kind: Pod, namespaces: [{ns}]}}
controllers:
  - {{name: takeover, for: pods, workers: 2, reconcile: {{hooks: true}},
     rateLimiter: {{qps: 100000, burst: 100000}}}}
leaderElection:
  leaseName: takeover-{mode}
  namespace: {ns}
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 500ms
  warmStandby: {warm}
"""

_STAMP = re.compile(r"^(\S+Z) ")


class Proc:
    """A kinrun subprocess whose lines are timestamped by its own log (UTC ms)."""

    def __init__(self, config: Path, kubeconfig: str) -> None:
        self.p = subprocess.Popen([sys.executable, "-m", "kinrun.cli", str(config),
                                   "--kubeconfig", kubeconfig],
                                  cwd=config.parent, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True,
                                  env=dict(os.environ, PYTHONUNBUFFERED="1"))
        self.lines: list[str] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.p.stdout:  # type: ignore[union-attr]
            with self.cond:
                self.lines.append(line.rstrip())
                self.cond.notify_all()

    def wait(self, pattern: str, timeout: float = 300) -> float:
        """The log time (epoch seconds) of the first line matching ``pattern``."""
        rx = re.compile(pattern)
        with self.cond:
            ok = self.cond.wait_for(lambda: any(rx.search(x) for x in self.lines), timeout)
            if not ok:
                raise RuntimeError(f"no {pattern!r}; log:\n" + "\n".join(self.lines[-30:]))
            line = next(x for x in self.lines if rx.search(x))
        return dt.datetime.fromisoformat(_STAMP.match(line).group(1).replace("Z", "+00:00")
                                         ).timestamp()

    def kill(self) -> float:
        now = time.time()
        self.p.send_signal(signal.SIGKILL)
        self.p.wait()
        return now

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            self.p.wait(60)


def one(env: Envtest, ns: str, pods: int, warm: bool, work: Path, rep: int) -> dict[str, float]:
    mode = f"{'warm' if warm else 'cold'}-{rep}"
    (work / "takeover_plugin.py").write_text(PLUGIN.format(step=max(1, pods // 10)))
    config = work / f"{mode}.yaml"
    config.write_text(CONFIG.format(ns=ns, mode=mode, warm=str(warm).lower()))
    leader = Proc(config, env.kubeconfig)
    leader.wait("became leader")
    leader.wait(rf"reconciled {pods}\b")
    standby = Proc(config, env.kubeconfig)
    standby.wait("waiting to become leader")
    if warm:
        standby.wait("warm standby: caches synced")
    killed = leader.kill()
    led = standby.wait("became leader")
    first = standby.wait(r"reconciled 1\b")
    last = standby.wait(rf"reconciled {pods}\b")
    standby.stop()
    return {"lease_wait": led - killed, "first": first - led, "all": last - led}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    with Envtest.start_or_none() as env, tempfile.TemporaryDirectory() as tmp:
        if env is None:
            sys.exit(f"takeover: no real kube-apiserver: {Envtest.why_not}")
        ns = "takeover"
        env.prepare_pods(ns, args.pods)
        results: dict[str, list[dict[str, float]]] = {"warm": [], "cold": []}
        for rep in range(args.repeat):
            for mode in ("cold", "warm"):
                results[mode].append(one(env, ns, args.pods, mode == "warm", Path(tmp), rep))
                print(mode, {k: round(v, 3) for k, v in results[mode][-1].items()}, flush=True)
        print(f"\n{args.pods} Pods; seconds from the standby becoming leader (median of "
              f"{args.repeat}); lease wait after SIGKILL reported apart")
        for mode, runs in results.items():
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print(f"  {mode}: first reconcile {med['first']:.2f}  all reconciled "
                  f"{med['all']:.2f}  (lease wait {med['lease_wait']:.2f})")


if __name__ == "__main__":
    main()
