"""The ``kinrun`` command: parse arguments, call the library, map errors to exit codes.

    kinrun [options] CONFIG                    run the controllers until SIGINT/SIGTERM
    kinrun validate CONFIG...                  check config files
    kinrun schema                              print the config JSON Schema
    kinrun plugins CONFIG                      list plugins and the hooks each implements
    kinrun render CONFIG --object FILE ...     print the API requests a reconcile would send
    kinrun test TESTFILE...                    run a config's test cases (no cluster)
    kinrun init NAME                           scaffold a controller folder
    kinrun help [COMMAND] | kinrun version

``kinrun CONFIG`` and ``kinrun validate CONFIG`` share the first positional: if the first
argument is a subcommand name it is the subcommand, otherwise the arguments are a run. (A config
file literally named ``validate`` is run as ``kinrun ./validate``.)

Exit codes: 0 success (also after a graceful stop on SIGINT/SIGTERM); 1 runtime error (also
a drain that did not finish within the drain timeout, a stop that overran it by more than
``kinrun.app.EXIT_SLACK`` seconds, or a busy metrics port); 2 usage, config file or cluster
configuration error (nothing was started); 130 interrupted (a second signal that cut the
drain short, or Ctrl-C during another command).

Signals of a run: ``main`` installs the SIGINT/SIGTERM handlers (:mod:`kinrun.signals`) before
anything else, ahead of the heavy imports and the config loading. A signal that arrives then
is recorded and the run stops as soon as it begins, before connecting to anything: exit 0
("SIGTERM received before the run started: stopping"), unless the config is invalid (2). Only
the interpreter's own start-up (tens of ms before ``main`` runs) is unprotected.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kinrun import __version__
from kinrun.errors import ApiConnectionError, ClusterConfigError, ConfigError, KinrunError

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_NO_CASES = 5
"""``kinrun test``: no case selected (``-k`` deselected every case), as pytest's 5."""
EXIT_INTERRUPTED = 130

EXIT_CODES_HELP = """\
exit codes:
  0    success; a run stopped by SIGINT/SIGTERM after draining its workqueues (also a
       signal received before the run started)
  1    runtime error; a drain that did not finish within the drain timeout; a stop that
       took longer than the drain timeout + 5s; metrics port in use
  2    usage error, invalid config file, or no usable cluster configuration
  130  interrupted (a second SIGINT/SIGTERM during the stop, or Ctrl-C in another command)
"""

COMMANDS_HELP = """\
commands (give one as the first argument; anything else is a config file to run):
  validate CONFIG... [--explain]
                          check config files; prints "FILE: ok" or every error (file:line:col);
                          --explain: the fields templates read, per informer
  schema                  print the JSON Schema of the config file
  plugins CONFIG          list the plugins found and the hooks each implements
  render CONFIG --object FILE [--old FILE] [--lookup FILE]... [--controller NAME]
         [--deleted [--reason R]] [-o yaml|json] [--show-secrets]
                          print the API requests a controller's actions would send for an object;
                          with --graph mermaid|dot instead of --object: draw its children graphs
  rbac CONFIG [--namespace NS] [--name NAME] [--service-account NAME]
       [--service-account-namespace NS] [--kubeconfig PATH [--context NAME]] [--crd FILE|DIR]
       [--dry-run] [--explain]
                          print the least-privilege RBAC (Roles, ClusterRole, bindings) it needs
  manifests CONFIG -o DIR [--namespace NS] [--name NAME] [--service-account NAME]
            [--service-account-namespace NS] [--kubeconfig PATH [--context NAME]]
            [--crd FILE|DIR] [--image IMAGE] [--replicas N] [--with EXTRA]
            [--insecure-metrics] [--kubernetes-version MAJOR.MINOR]
                          write a kustomize base: ServiceAccount, RBAC, ConfigMap, Deployment
  test TESTFILE... [-k EXPR] [--junit FILE] [--timeout DURATION] [--show-secrets]
                          run test cases of configs on the embedded API server (no cluster);
                          exit 5 when -k selects no case
  init NAME [--dir DIR]   make a folder NAME: a config, its test cases, a kustomize overlay,
                          a CI check (validate + test)
  help [COMMAND]          this help, or a command's
  version                 print kinrun's version
"""

_log = logging.getLogger("kinrun.cli")


class UsageError(Exception):
    """A bad combination of arguments (exit 2)."""


class Refused(Exception):
    """A command refuses its arguments: one line ``PROG: MESSAGE`` on stderr, exit 2 (no
    usage line: the arguments parse, what they name does not fit)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit code.

    For a run, the stop signals are installed first (see the module docstring). Called with
    ``argv=None`` (the process's own command line), SIGINT/SIGTERM are ignored once the run
    returned, until the process exits: a late signal cannot turn the run's exit code into
    -15. With an explicit ``argv`` (in-process callers) the previous handlers are restored.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    typo = _mistyped_command(args)
    if typo is not None:
        _err(f"kinrun: unknown command {args[0]!r} (did you mean {typo!r}?)")
        return EXIT_USAGE
    command = args.pop(0) if args and args[0] in _COMMANDS else "run"  # `run` may be explicit
    if command != "run":
        return _main(command, args)
    from kinrun import signals  # standard library only: installed before the heavy imports
    from kinrun.gc.policy import raise_thresholds

    # The main job's GC thresholds (the policy the Manager applies when its caches start)
    # from the first import on: the modules, functions and classes imported at start-up live
    # as long as the process, and default thresholds walked them in two full collections
    # (about 35 ms of a 0.4 s start, benchmarks/startup.py).
    previous = raise_thresholds()
    watcher = signals.install()
    try:
        return _main(command, args)
    finally:
        if argv is None:
            watcher.ignore_from_now()
        else:  # an in-process caller gets its process back as it was
            watcher.uninstall()
            gc.set_threshold(*previous)


def _mistyped_command(args: Sequence[str]) -> str | None:
    """The command the first argument is a typo of (``valdiate``: ``validate``), or None: it
    is a command, an option, an existing file, or close to no command name (difflib)."""
    import difflib

    if not args or args[0] in _COMMANDS or args[0].startswith("-") or Path(args[0]).exists():
        return None
    close = difflib.get_close_matches(args[0], list(_COMMANDS), n=1, cutoff=0.75)
    return close[0] if close else None


def _main(command: str, args: list[str]) -> int:
    parser = _parser(command)
    if command == "run" and not args:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        ns = parser.parse_args(args)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else (EXIT_OK if exc.code is None else EXIT_USAGE)
    try:
        return _COMMANDS[command](ns)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        _err(f"{parser.prog}: error: {exc}")
        return EXIT_USAGE
    except Refused as exc:
        _err(f"{parser.prog}: {exc}")
        return EXIT_USAGE
    except ConfigError as exc:
        _err(str(exc))
        return EXIT_USAGE
    except ClusterConfigError as exc:
        _err(f"kinrun: {exc}; use --kubeconfig/--context, or --embedded to run on the "
             f"embedded API server")
        return EXIT_USAGE
    except KinrunError as exc:
        _err(f"kinrun: {exc}")
        return EXIT_RUNTIME
    except KeyboardInterrupt:
        _err("kinrun: interrupted")
        return EXIT_INTERRUPTED


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --- parsers ---------------------------------------------------------------------------------


def _parser(command: str) -> argparse.ArgumentParser:
    return {"run": _run_parser, "validate": _validate_parser, "schema": _schema_parser,
            "plugins": _plugins_parser, "render": _render_parser, "test": _test_parser,
            "rbac": _rbac_parser, "manifests": _manifests_parser, "init": _init_parser,
            "help": _help_parser, "version": _version_parser}[command]()


def _new(prog: str, description: str, epilog: str = EXIT_CODES_HELP) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=prog, description=description, epilog=epilog,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def _add_log_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"),
                        help="lowest level logged (default info)")
    parser.add_argument("--log-format", default="text", choices=("text", "json", "zap"),
                        help="text lines, one JSON object per line, or JSON with "
                             "controller-runtime's zap keys (default text)")


def _run_parser() -> argparse.ArgumentParser:
    parser = _new("kinrun", "Turn one YAML file into a running Kubernetes controller: run the "
                  "controllers of CONFIG until SIGINT/SIGTERM, then drain and exit.",
                  COMMANDS_HELP + "\n" + EXIT_CODES_HELP)
    parser.add_argument("config", metavar="CONFIG", help="the config file (see `kinrun schema`)")
    parser.add_argument("--kubeconfig", metavar="PATH", help="kubeconfig file (overrides cluster.kubeconfig)")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (overrides cluster.context)")
    parser.add_argument("--namespace", "-n", metavar="NS",
                        help="watch only namespace NS (every namespaced informer)")
    parser.add_argument("--embedded", action="store_true",
                        help="run against an in-process embedded API server instead of a cluster")
    parser.add_argument("--seed", metavar="FILE", action="append", default=[],
                        help="with --embedded: load the objects of this YAML/JSON file first (repeatable)")
    parser.add_argument("--drain-timeout", metavar="DURATION", type=_duration,
                        help="after a stop signal, let the workqueues drain this long (30s, "
                             "1m30s, or seconds; overrides the config's shutdown.drainTimeout)")
    parser.add_argument("--dry-run", action="store_true",
                        help="real reads, but every write (apply, patch, delete, Event) is sent "
                             "with dryRun=All: the server validates it and persists nothing; "
                             "logs 'dry-run: would patch KIND NS/NAME: field old -> new' per "
                             "write; skips leader election")
    parser.add_argument("--shard-id", metavar="NAME",
                        help="with sharding: this replica's name in the ring (its Lease and "
                             "label value; default: $POD_NAME, else the host name)")
    parser.add_argument("--health-probe-bind-address", metavar="HOST:PORT", type=_bind_address,
                        default=_UNSET,
                        help="serve /healthz and /readyz on HOST:PORT (:8081 for every address; "
                             "0 disables; overrides the config's probes.address and probes.port)")
    parser.add_argument("--metrics-secure", action="store_true",
                        help="serve /metrics over HTTPS to authenticated and authorized "
                             "clients only (TokenReview, SubjectAccessReview), as the config's "
                             "metrics.secure; needs metrics:")
    _add_log_flags(parser)
    parser.add_argument("--version", action="version", version=f"kinrun {__version__}")
    return parser


def _bind_address(text: str) -> tuple[str, int] | None:
    """argparse type of ``--health-probe-bind-address`` (``kinrun.probes.parse_bind_address``):
    (host, port), or None for ``0`` (disabled)."""
    from kinrun.probes import parse_bind_address

    try:
        return parse_bind_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _with_probe_address(config: Any, ns: argparse.Namespace) -> Any:
    """``config`` with ``--health-probe-bind-address`` applied (when given): probes on that
    address (``stuckReconcileAfter`` kept, else its default), or none for ``0``."""
    if "health_probe_bind_address" not in ns or ns.health_probe_bind_address is _UNSET:
        return config
    import dataclasses

    from kinrun.config.model import ProbesSpec

    if ns.health_probe_bind_address is None:
        return dataclasses.replace(config, probes=None)
    host, port = ns.health_probe_bind_address
    probes = dataclasses.replace(config.probes or ProbesSpec(), address=host, port=port)
    return dataclasses.replace(config, probes=probes)


def _with_metrics_secure(config: Any, ns: argparse.Namespace) -> Any:
    """``config`` with ``--metrics-secure`` applied; UsageError without ``metrics:``."""
    if not getattr(ns, "metrics_secure", False):
        return config
    if config.metrics is None:
        raise UsageError("--metrics-secure needs metrics: in the config")
    import dataclasses

    return dataclasses.replace(config, metrics=dataclasses.replace(config.metrics, secure=True))


_UNSET = object()
"""Default of ``--health-probe-bind-address``: not given (None means ``0``, disabled)."""


def _duration(text: str) -> float:
    """argparse type of a duration flag: float seconds (``kinrun.durations``)."""
    from kinrun.durations import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _validate_parser() -> argparse.ArgumentParser:
    parser = _new("kinrun validate", "Check config files: schema, references between informers "
                  "and controllers, plugin files, template syntax. Prints 'FILE: ok' for each "
                  "valid file (stdout) and every error of the others (stderr).")
    parser.add_argument("configs", metavar="CONFIG", nargs="+", help="config files")
    parser.add_argument("--explain", action="store_true",
                        help="also print, per informer, the fields the templates read of its "
                             "objects and whether they were checked against its kind's schema")
    return parser


def _schema_parser() -> argparse.ArgumentParser:
    return _new("kinrun schema", "Print the JSON Schema (draft 2020-12) of the config file.")


def _plugins_parser() -> argparse.ArgumentParser:
    parser = _new("kinrun plugins", "List the plugins a config loads (its `plugins:` and the "
                  "`kinrun` entry points) and the hooks each implements.")
    parser.add_argument("config", metavar="CONFIG", help="the config file")
    _add_log_flags(parser)
    return parser


def _render_parser() -> argparse.ArgumentParser:
    parser = _new("kinrun render", "Render a controller's actions for one object and print the "
                  "resulting steps (API requests, log lines, requeues) without sending anything.")
    parser.add_argument("config", metavar="CONFIG", help="the config file")
    parser.add_argument("--object", metavar="FILE",
                        help="the object (YAML or JSON, one document); required unless --graph")
    parser.add_argument("--graph", choices=("mermaid", "dot"),
                        help="print the controller's children graphs instead (children "
                             "actions: each child, its kind, what it waits for; dashed: "
                             "includeWhen), as a Mermaid flowchart or Graphviz DOT")
    parser.add_argument("--old", metavar="FILE", help="its previous version, if the reconcile uses `old`")
    parser.add_argument("--lookup", metavar="FILE", action="append", default=[],
                        help="objects (YAML or JSON, one or more documents) the caches hold for "
                             "get/list/by_index: each goes to every informer that would deliver "
                             "it (repeatable; default: empty caches)")
    parser.add_argument("--controller", metavar="NAME",
                        help="the controller (needed when the config has several)")
    parser.add_argument("--deleted", action="store_true",
                        help="render onDelete instead: the object is gone, so it is `old` (its "
                             "final state, as at run time) unless --old is given")
    parser.add_argument("--reason", choices=("deleted", "left", "unknown"),
                        help="with --deleted: why the object is gone, as `reason` in the "
                             "templates (default deleted; left: it no longer matches the "
                             "informer's selectors; unknown: a relist no longer found it). A "
                             "live render's reason is added, or updated with --old")
    parser.add_argument("--output", "-o", default="yaml", choices=("yaml", "json"),
                        help="output format (default yaml)")
    parser.add_argument("--show-secrets", action="store_true",
                        help="print the values of Secrets in requests (default: each value "
                             "replaced by its size, as kubectl describe secret); log, event, "
                             "stop and fail messages stay redacted as at run time")
    _add_log_flags(parser)
    return parser


def _test_parser() -> argparse.ArgumentParser:
    parser = _new("kinrun test", "Run the cases of test files (schemas/kinrun-test.schema.json) "
                  "on the embedded API server with a fake clock: for the objects and events of "
                  "each case, check the requests sent, the reconcile results and the log lines. "
                  "Prints 'PASS name' or 'FAIL name (seconds)' with a diff per case.",
                  "exit codes:\n  0    every selected case passed\n  1    a case failed\n"
                  "  2    usage error, invalid test file or config, --junit FILE not writable\n"
                  "  5    no case selected (-k deselected every case), as pytest\n")
    parser.add_argument("files", metavar="TESTFILE", nargs="+", help="test files")
    parser.add_argument("-k", metavar="EXPR", dest="select",
                        help="run only cases whose name matches: a substring, or an expression "
                             "of substrings with and/or/not (as pytest -k)")
    parser.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report to FILE "
                        "(checked writable before any case runs)")
    parser.add_argument("--timeout", metavar="DURATION", type=_duration,
                        help="real time a step may take to become quiet (overrides the files' "
                             "timeout; default 10s)")
    parser.add_argument("--show-secrets", action="store_true",
                        help="show the values of Secrets in the diffs of failed cases "
                             "(default: each value replaced by its size)")
    return parser


# --- commands --------------------------------------------------------------------------------


def _cmd_run(ns: argparse.Namespace) -> int:
    from kinrun.config import RunOptions, load
    from kinrun.logging_setup import configure_logging

    if ns.seed and not ns.embedded:
        raise UsageError("--seed needs --embedded")
    for seed in ns.seed:
        if not Path(seed).is_file():
            raise UsageError(f"--seed {seed}: no such file")
    config = load(ns.config)
    if ns.namespace:
        config = config.with_namespace(ns.namespace)
    config = _with_metrics_secure(_with_probe_address(config, ns), ns)
    handler = configure_logging(ns.log_level, ns.log_format, batched=True)
    options = RunOptions(config_path=Path(ns.config), kubeconfig=ns.kubeconfig, context=ns.context,
                         namespace=ns.namespace, embedded=ns.embedded, dry_run=ns.dry_run,
                         seeds=tuple(Path(s) for s in ns.seed), log_level=ns.log_level,
                         log_format=ns.log_format, drain_timeout=ns.drain_timeout,
                         shard_id=ns.shard_id)
    from kinrun.app import run  # imported here: it pulls in the kubernetes client

    try:
        return int(run(config, options))
    except ApiConnectionError as exc:
        if options.embedded:
            raise
        from kinrun.kube.kubeconfig import describe_access

        cluster = options.effective_cluster(config)
        where = describe_access(kubeconfig=cluster.kubeconfig, context=cluster.context)
        raise ApiConnectionError(f"{exc} ({where}); no cluster? add --embedded to run on the "
                                 "embedded API server") from None
    except (KinrunError, KeyboardInterrupt):
        raise
    except Exception:  # noqa: BLE001 - the last line of defence: report, exit 1
        _log.exception("kinrun: unexpected error")
        return EXIT_RUNTIME
    finally:
        handler.flush()  # waiting info lines before anything main() prints


def _cmd_validate(ns: argparse.Namespace) -> int:
    from kinrun.config import load
    from kinrun.plan import plan
    from kinrun.rbac import config_crds

    from kinrun.sharding.scope import describe

    status = EXIT_OK
    for path in ns.configs:
        try:
            compiled = plan(load(path))  # load + plan: whatever the run would refuse first
            config_crds(compiled.config)  # crds: files that rbac and manifests read
        except ConfigError as exc:
            _err(str(exc))
            status = EXIT_USAGE
        else:
            print(f"{path}: ok", flush=True)
            for line in describe(compiled.config):  # with sharding: a line per informer
                print(f"{path}: {line}", flush=True)
            if ns.explain:
                from kinrun.plan import read_report

                for line in read_report(compiled):
                    print(f"{path}: {line}", flush=True)
    return status


def _cmd_schema(ns: argparse.Namespace) -> int:
    from kinrun.config import schema_text

    sys.stdout.write(schema_text())
    return EXIT_OK


def _cmd_plugins(ns: argparse.Namespace) -> int:
    from kinrun.config import load
    from kinrun.logging_setup import configure_logging
    from kinrun.plugin_manager import config_plugins

    configure_logging(ns.log_level, ns.log_format)
    config = load(ns.config)
    manager = config_plugins(config)  # ConfigError names the file and plugins[i]
    for line in plugin_lines(manager):
        print(line)
    return EXIT_OK


def plugin_lines(manager: Any) -> list[str]:
    """Lines describing each plugin (name, where it came from, hooks it implements), from
    ``kinrun.plugin_manager.describe_plugins``."""
    from kinrun.plugin_manager import describe_plugins

    lines = []
    for name, source, hooks in describe_plugins(manager):
        lines.append(f"{name}  ({source})")
        lines.append(f"  hooks: {', '.join(hooks) if hooks else '(none)'}")
    return lines or ["(no plugins)"]


def _cmd_test(ns: argparse.Namespace) -> int:
    from kinrun.testing import runner

    try:
        select = runner.selector(ns.select)
    except ValueError as exc:
        raise UsageError(str(exc)) from None

    if ns.junit:
        _check_writable(ns.junit)

    def report(outcome: Any) -> None:
        for line in runner.outcome_lines(outcome):
            print(line, flush=True)
    run = runner.run_files(ns.files, select=select, report=report, timeout=ns.timeout,
                           show_secrets=ns.show_secrets)
    print(runner.summary_line(run), flush=True)
    if ns.junit:
        try:
            Path(ns.junit).write_bytes(runner.junit_xml(run))
        except OSError as exc:
            raise Refused(f"--junit {ns.junit}: {exc.strerror or exc}") from None
    if run.failed:
        return EXIT_RUNTIME
    if all(o.skipped for o in run.outcomes):
        _err("kinrun test: no case selected")
        return EXIT_NO_CASES
    return EXIT_OK


def _check_writable(path: str) -> None:
    """Refused (``--junit PATH: reason``) unless ``path`` can be written: opened for append
    (nothing truncated), and removed again when it did not exist."""
    target = Path(path)
    existed = target.exists()
    try:
        with target.open("ab"):
            pass
    except OSError as exc:
        raise Refused(f"--junit {path}: {exc.strerror or exc}") from None
    if not existed:
        target.unlink(missing_ok=True)


def _cmd_render(ns: argparse.Namespace) -> int:
    from kinrun.config import load
    from kinrun.logging_setup import configure_logging

    configure_logging(ns.log_level, ns.log_format)
    config = load(ns.config)
    controller = _pick_controller(config, ns.controller)
    if ns.graph:
        from kinrun.config.children import graph_picture
        print(graph_picture(controller, ns.graph), end="")
        return EXIT_OK
    if not ns.object:
        raise UsageError("kinrun render needs --object FILE (or --graph)")
    if ns.reason and not ns.deleted:
        raise UsageError("--reason needs --deleted (a live render's reason is added, or "
                         "updated with --old)")
    obj = _read_object(ns.object, "--object")
    old = _read_object(ns.old, "--old") if ns.old else None
    _check_watched(config, controller, obj, ns.object)
    if not obj["metadata"].get("uid"):
        obj["metadata"]["uid"] = PLACEHOLDER_UID
        _err(f"kinrun render: --object {ns.object} has no metadata.uid: using {PLACEHOLDER_UID}")
    if ns.deleted and old is None:
        old = obj  # at run time a deletion's old is the object's final state
    key = object_key(obj)
    if ns.deleted:
        reason = ns.reason or "deleted"
    else:
        reason = "updated" if old is not None else "added"
    cached = [o for path in ns.lookup for o in _read_objects(path, "--lookup")]
    steps = _render(config, controller, key, None if ns.deleted else obj, old, ns.deleted, reason,
                    cached)
    if not ns.show_secrets:
        from kinrun.redact import redact_steps, redact_strings, secret_values

        steps = redact_strings(redact_steps(steps), secret_values(obj, old))
    print(_dump(steps, ns.output), end="")
    return EXIT_OK


PLACEHOLDER_UID = "00000000-0000-0000-0000-000000000000"
"""``kinrun render``'s uid of an object file without ``metadata.uid`` (owner references need
one; the server would have set it)."""


def _check_watched(config: Any, controller: Any, obj: dict[str, Any], path: str) -> None:
    """Refused unless the controller's primary informer would deliver ``obj``: its
    apiVersion and kind, a watched namespace, its label and field selectors."""
    from kinrun.plan import selector_matcher

    spec = config.informers[controller.primary]
    what = f"controller {controller.name!r} reconciles informer {spec.name!r}"
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version != spec.api_version or (spec.kind is not None and kind != spec.kind):
        watched = f"{spec.api_version} {spec.kind or spec.resource}"
        raise Refused(f"--object {path}: {api_version} {kind} is not what informer "
                      f"{spec.name!r} watches ({watched}), whose objects controller "
                      f"{controller.name!r} reconciles")
    namespace = obj["metadata"].get("namespace")
    if spec.namespaces is not None and namespace and namespace not in spec.namespaces:
        raise Refused(f"--object {path}: namespace {namespace!r} is not watched: {what}, "
                      f"which watches namespaces {', '.join(spec.namespaces)}")
    matches = selector_matcher(spec)
    if matches is not None and not matches(obj):
        selectors = "; ".join(f"{flag} {value!r}" for flag, value in (
            ("labelSelector", spec.label_selector), ("fieldSelector", spec.field_selector))
            if value)
        raise Refused(f"--object {path}: does not match the selectors of informer "
                      f"{spec.name!r} ({selectors}), which {controller.name!r} reconciles")


def _pick_controller(config: Any, name: str | None) -> Any:
    names = [c.name for c in config.controllers]
    if name is None:
        if len(names) != 1:
            raise UsageError(f"the config has several controllers: give --controller "
                             f"({', '.join(names)})")
        return config.controllers[0]
    try:
        return config.controller(name)
    except KeyError:
        raise UsageError(f"no controller {name!r} (known: {', '.join(names)})") from None


def _read_object(path: str, flag: str) -> dict[str, Any]:
    import yaml
    from kinrun import safe_yaml

    try:
        data = safe_yaml.load(Path(path).read_text(encoding="utf-8"),
                              safe_yaml.StrictObjectLoader)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else path
        problem = getattr(exc, "problem", None) or exc
        raise UsageError(f"{flag} {where}: not YAML/JSON: {problem}") from None
    if not isinstance(data, dict) or not isinstance(data.get("metadata"), dict) \
            or not data["metadata"].get("name"):
        raise UsageError(f"{flag} {path}: not a Kubernetes object (no metadata.name)")
    return data


def _read_objects(path: str, flag: str) -> list[dict[str, Any]]:
    """The objects of a YAML/JSON file (several documents, ``kind: List`` opened), as
    ``--seed`` reads them (``kinrun.testing.seeds.load_seed_file``)."""
    from kinrun.testing.seeds import load_seed_file

    try:
        return load_seed_file(Path(path))
    except ConfigError as exc:
        raise UsageError(f"{flag} {exc}") from None


def object_key(obj: dict[str, Any]) -> str:
    """The workqueue key of an object: ``namespace/name``, or ``name`` when it has no namespace
    (as client-go MetaNamespaceKeyFunc)."""
    meta = obj["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"])


def _render(config: Any, controller: Any, key: str, obj: dict[str, Any] | None,
            old: dict[str, Any] | None, deleted: bool, reason: str = "",
            cached: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The described steps of one reconcile of ``key``, as the run decides and renders them
    (``kinrun.reconcile.Reconciler.render``: actions, onDelete or finalize, between the
    finalizer patches a run sends; the hook call a hook controller would make). Lookups in
    templates (``get``/``list``/``by_index``) see the ``cached`` objects (``--lookup``)."""
    from kinrun.bound import offline_reconciler
    from kinrun.plan import plan
    from kinrun.clock import REAL_CLOCK, FakeClock, WallOverride
    from kinrun.templating import template_seed
    from kinrun.testing.recording import EPOCH

    # the wall clock of `kinrun test` at its start, one microsecond later at each reading:
    # Event names and timestamps are the same run to run, and two Events of one render (one
    # kept before a fail, one of onError) are two Events, as in a run
    reads = itertools.count()
    clock = WallOverride(FakeClock(wall=EPOCH), lambda: EPOCH + next(reads) * 1e-6)
    compiled = plan(config, clock=clock, render_clock=REAL_CLOCK,  # a timeout is real time
                    template_seed=template_seed("render"))  # `random` as every render
    reconciler = offline_reconciler(compiled, controller.name, cached or ())
    projection = compiled.informers[controller.primary].projection
    if projection is not None:  # as the run's cache holds them
        from kinrun.kube.projection import shown

        logging.getLogger("kinrun.render").debug(
            "informer %s is projected: templates see %s and metadata (projection: auto)",
            controller.primary, ", ".join(sorted(shown(p) for p in projection.paths)))
        obj, old = (projection.project(o) if o is not None else None for o in (obj, old))
    rendered = reconciler.render(key, None if deleted else obj, old=old,
                                 reason=reason or ("deleted" if deleted else ""))
    if rendered.nothing is not None:
        _err(f"kinrun render: {rendered.nothing}")
    return list(rendered.steps)


def _dump(steps: list[dict[str, Any]], output: str) -> str:
    if output == "json":
        return json.dumps(steps, indent=2, sort_keys=False, default=str) + "\n"
    import yaml

    return yaml.safe_dump(steps, sort_keys=False, default_flow_style=False, allow_unicode=True)


# --- deploying: rbac, manifests ---------------------------------------------------------------


def _add_identity_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespace", "-n", metavar="NS",
                        help="as the run's --namespace: every namespaced informer watches NS "
                             "only; also the ServiceAccount's namespace")
    parser.add_argument("--name", metavar="NAME",
                        help="name of the Roles, ClusterRole and bindings (default "
                             "kinrun-<config file name>)")
    parser.add_argument("--service-account", metavar="NAME",
                        help="the ServiceAccount granted (default: --name)")
    parser.add_argument("--service-account-namespace", metavar="NS",
                        help="its namespace (default: --namespace, else default)")
    parser.add_argument("--kubeconfig", metavar="PATH",
                        help="ask this cluster's discovery for kinds kinrun does not know "
                             "(CRDs); default: no cluster is contacted")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (with --kubeconfig)")
    parser.add_argument("--crd", metavar="FILE|DIR", action="append", default=[],
                        help="CustomResourceDefinition manifests that tell the plural and scope "
                             "of custom kinds without a cluster (repeatable; besides the "
                             "config's crds:)")


def _rbac_parser() -> argparse.ArgumentParser:
    parser = _new("kinrun rbac", "Print the least-privilege RBAC that running CONFIG needs, "
                  "computed from its compiled plan: list/watch per informer, the verbs of "
                  "each action on the resource it writes, the Lease of leader election, and "
                  "rbac.extraRules. A Role (and RoleBinding) per namespace, a ClusterRole for "
                  "all namespaces and cluster-scoped kinds; no wildcards.")
    parser.add_argument("config", metavar="CONFIG", help="the config file")
    _add_identity_flags(parser)
    parser.add_argument("--dry-run", action="store_true",
                        help="for `kinrun CONFIG --dry-run`: adds get on what is written, no Lease")
    parser.add_argument("--explain", action="store_true",
                        help="precede the YAML with a comment per permission saying why")
    return parser


def _manifests_parser() -> argparse.ArgumentParser:
    parser = _new("kinrun manifests", "Write a kustomize base that deploys CONFIG: "
                  "ServiceAccount, the RBAC of `kinrun rbac`, a ConfigMap with the config and "
                  "its plugin files, a Deployment, a metrics Service (with metrics:) and "
                  "kustomization.yaml. Build it with `kubectl kustomize DIR`.")
    parser.add_argument("config", metavar="CONFIG", help="the config file")
    parser.add_argument("--output-dir", "-o", metavar="DIR", required=True,
                        help="the folder to write (created; files kinrun writes are replaced)")
    _add_identity_flags(parser)
    parser.add_argument("--image", metavar="IMAGE",
                        help=f"container image (default localhost/kinrun:{__version__})")
    parser.add_argument("--replicas", metavar="N", type=int,
                        help="pods (default 2 with leaderElection, else 1; more than 1 needs "
                             "leaderElection)")
    parser.add_argument("--with", metavar="EXTRA", dest="extras", action="append", default=[],
                        help="also write: namespace (the Namespace), monitoring (a "
                             "ServiceMonitor and a PrometheusRule with alerts; needs the "
                             "Prometheus Operator's CRDs), network-policy (the metrics port "
                             "from namespaces labelled metrics=enabled only); repeatable or "
                             "comma-separated")
    parser.add_argument("--insecure-metrics", action="store_true",
                        help="serve metrics over plain HTTP to anyone (default with metrics: "
                             "--metrics-secure, HTTPS to authorized scrapers only)")
    parser.add_argument("--kubernetes-version", metavar="MAJOR.MINOR", default=None,
                        help="the oldest cluster the objects must apply to (default 1.25; "
                             "below 1.21 the PodDisruptionBudget is policy/v1beta1)")
    return parser


def _identity(ns: argparse.Namespace) -> tuple[Any, Any]:
    """The config (with ``--namespace``) and the RBAC names of the flags."""
    from kinrun.config import load
    from kinrun.manifests import Names

    config = load(ns.config)
    if ns.namespace:
        config = config.with_namespace(ns.namespace)
    names = Names.for_config(Path(ns.config), name=ns.name, namespace=ns.namespace,
                             service_account=ns.service_account,
                             service_account_namespace=ns.service_account_namespace)
    return config, names


def _resolver(ns: argparse.Namespace) -> Any:
    """Discovery of the --kubeconfig cluster for unknown kinds, or None."""
    if not ns.kubeconfig:
        if ns.context:
            raise UsageError("--context needs --kubeconfig")
        return None
    from kinrun.kube import Client
    from kinrun.rbac import discovery_resolver

    return discovery_resolver(Client.from_config(kubeconfig=ns.kubeconfig, context=ns.context))


def _crds(ns: argparse.Namespace) -> Any:
    """The CRDs of ``--crd`` (paths relative to the working folder)."""
    from kinrun.crds import CrdSet

    return CrdSet.load(ns.crd)


def _cmd_rbac(ns: argparse.Namespace) -> int:
    from kinrun.manifests import dump_yaml, explain_lines
    from kinrun.plan import plan
    from kinrun.rbac import rbac_needs, rbac_objects

    config, names = _identity(ns)
    needs = rbac_needs(plan(config), dry_run=ns.dry_run, resolve=_resolver(ns),
                       crds=_crds(ns), webhook=names.webhook(config))
    for note in needs.notes:
        _err(f"kinrun rbac: note: {note}")
    if ns.explain:
        sys.stdout.write("".join(f"# {line}\n" for line in explain_lines(needs)))
    sys.stdout.write(dump_yaml(rbac_objects(needs, **names.rbac_kwargs())))
    return EXIT_OK


def _kubernetes_version(text: str | None) -> tuple[int, int]:
    import re

    from kinrun.manifests import DEFAULT_KUBERNETES_VERSION

    if text is None:
        return DEFAULT_KUBERNETES_VERSION
    match = re.fullmatch(r"v?(\d+)\.(\d+)(\.\d+)?", text)
    if not match:
        raise UsageError(f"--kubernetes-version {text!r}: expected MAJOR.MINOR such as 1.20")
    return int(match[1]), int(match[2])


def _cmd_manifests(ns: argparse.Namespace) -> int:
    from kinrun.manifests import write_base

    config, names = _identity(ns)
    if ns.replicas is not None and ns.replicas < 1:
        raise UsageError("--replicas must be at least 1")
    out_dir = Path(ns.output_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise Refused(f"-o {ns.output_dir}: exists and is not a directory")
    try:
        written = write_base(config, out_dir, names, image=ns.image,
                             replicas=ns.replicas, resolve=_resolver(ns), crds=_crds(ns),
                             extras=[e for v in ns.extras for e in v.split(",") if e],
                             secure_metrics=not ns.insecure_metrics,
                             kubernetes_version=_kubernetes_version(ns.kubernetes_version),
                             warn=lambda text: _err(
                                 f"kinrun manifests: note: {text}"))
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and str(exc.filename) != ns.output_dir else ""
        raise Refused(f"-o {ns.output_dir}: cannot write{where}: {exc.strerror or exc}") from None
    for path in written:
        print(path)
    return EXIT_OK


def _init_parser() -> argparse.ArgumentParser:
    parser = _new("kinrun init", "Make a folder NAME with a config, its kinrun test cases, a "
                  "kustomize overlay over the base of `kinrun manifests`, and a CI check that "
                  "runs `kinrun validate` and `kinrun test`. Writes nothing if NAME exists and "
                  "is not empty.")
    parser.add_argument("name", metavar="NAME", help="the controller's name (a DNS-1123 label)")
    parser.add_argument("--dir", metavar="DIR", default=".",
                        help="where to make the folder NAME (default: here)")
    return parser


def _cmd_init(ns: argparse.Namespace) -> int:
    from kinrun.scaffold import ScaffoldError, init

    try:
        written = init(ns.name, Path(ns.dir))
    except ScaffoldError as exc:
        raise Refused(str(exc)) from None
    for path in written:
        print(path)
    return EXIT_OK


def _help_parser() -> argparse.ArgumentParser:
    parser = _new("kinrun help", "Show the help of kinrun, or of one command.")
    parser.add_argument("command", metavar="COMMAND", nargs="?",
                        help="a command (default: the run's help, with every command)")
    return parser


def _cmd_help(ns: argparse.Namespace) -> int:
    command = ns.command or "run"
    if command not in _COMMANDS:
        raise Refused(f"unknown command {command!r}; commands: {', '.join(sorted(_COMMANDS))}")
    _parser(command).print_help(sys.stdout)
    return EXIT_OK


def _version_parser() -> argparse.ArgumentParser:
    return _new("kinrun version", "Print kinrun's version.")


def _cmd_version(ns: argparse.Namespace) -> int:
    print(f"kinrun {__version__}")
    return EXIT_OK


_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": _cmd_run, "validate": _cmd_validate, "schema": _cmd_schema, "plugins": _cmd_plugins,
    "render": _cmd_render, "test": _cmd_test, "rbac": _cmd_rbac, "manifests": _cmd_manifests,
    "init": _cmd_init, "help": _cmd_help, "version": _cmd_version,
}


if __name__ == "__main__":
    sys.exit(main())
