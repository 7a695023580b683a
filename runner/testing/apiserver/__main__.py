"""Run the embedded API server in the foreground: ``python -m kinrun.testing.apiserver``.

Options: ``--port`` (default 0: a free port), ``--host``, ``--kubeconfig PATH`` (where to write
the kubeconfig; default a temp file), ``--bookmark-interval`` seconds, ``--history-size``
events, ``--load FILE.yaml`` (seed objects, repeatable), ``--controllers on|off`` (the garbage
collector and namespace controller; default on unless ``$KINRUN_EMBEDDED_CONTROLLERS`` is
``off``, as ``kinrun --embedded``). Prints the URL and the kubeconfig
path, then serves until interrupted (Ctrl-C / SIGTERM).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

import yaml

from kinrun import safe_yaml

from .server import EmbeddedAPIServer, controllers_default


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, serve until SIGINT/SIGTERM; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m kinrun.testing.apiserver",
                                     description="In-process Kubernetes API server for tests.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--kubeconfig", default=None)
    parser.add_argument("--bookmark-interval", type=float, default=60.0)
    parser.add_argument("--history-size", type=int, default=10000)
    parser.add_argument("--load", action="append", default=[], metavar="FILE")
    parser.add_argument("--controllers", choices=("on", "off"),
                        default="on" if controllers_default() else "off")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with EmbeddedAPIServer(args.port, host=args.host, bookmark_interval=args.bookmark_interval,
                           history_size=args.history_size, kubeconfig=args.kubeconfig,
                           controllers=args.controllers == "on") as srv:
        for path in args.load:
            with open(path, encoding="utf-8") as fh:
                srv.load([doc for doc in safe_yaml.load_all(fh, safe_yaml.ObjectLoader) if doc])
        print(f"serving {srv.url}\nkubeconfig {srv.kubeconfig_path}", flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
