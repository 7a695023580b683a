"""The layer order of kinrun's modules, written once; ``tests/unit/test_layers.py`` checks it.

Low to high. A module may import modules of its own layer or of lower layers, never of a higher
one (typing-only imports included): the pipeline (cache, workqueue) knows no Kubernetes client,
no pluggy and no config; the hookspecs name no action type; the spine (plan, bound, manager)
is one layer that compiles, wires and runs. Inside a layer imports form no circle
(``kinrun.spine`` holds the types its modules share: ``plan`` imports ``bound``, which imports
``manager``, never back). ``kinrun`` itself (the lazy public face) is above
everything; importing ``kinrun.__version__`` from it is allowed anywhere.
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "clock", "durations", "selectors", "conditions",  # pure data and time; no I/O;
     "redact", "threads", "safe_yaml", "result", "cron",   # Secret values kept out of output;
     "fencing", "openapi", "gc"),                          # supervised threads; bounded YAML;
                                                           # a reconcile's typed Result; the
                                                           # Lease's fence of a thread; the
                                                           # kinds' schemas; the GC pause,
                                                           # policy and its observer seam
    ("cache", "workqueue"),                                # the client-go informer pipeline
    ("kube", "hooks", "tls"),                              # the official client; the hookspecs;
                                                           # serving certificates
    ("config", "config_watch", "templating", "predicates",  # the YAML model, watching its
     "crds", "template_reads", "cache_reads", "cron_calls",  # files; the Jinja2 sandbox (and
     "plain_templates"),                                   # its plain templates); CRD files
                                                           # read offline
    ("actions", "plugin_manager", "metrics", "probes", "leader_election", "logging_setup",
     "log_batching"),
    ("reconcile", "controller", "schedule", "sharding",    # one key's reconcile; the workers;
     "admission"),                                         # cron schedules; a ring's replicas;
                                                           # admission webhooks
    ("spine", "manager", "bound", "plan", "kept_paths",    # the spine: its types; run,
     "rbac", "reload"),                                    # bind, compile; what a config
                                                           # reads of each cache; the RBAC a
                                                           # plan needs; reload
    ("testing",),                                          # embedded API server, fault proxy
    ("signals", "runnables", "app", "manifests", "reference",  # the main job, its runnables;
     "plugin_reference",                                   # the generated plugin API page;
     "monitoring", "scaffold"),                            # its deployment; its alerts;
                                                           # `kinrun init`;
                                                           # the generated template reference
    ("cli",),                                              # thin argument parsing
)
"""Each entry names top-level modules or packages of ``kinrun`` (``cache`` covers
``kinrun.cache.*``)."""
