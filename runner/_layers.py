"""The layer order of kinrun's modules, written once; ``tests/unit/test_layers.py`` checks it.

Low to high. A module may import modules of its own layer or of lower layers, never of a higher
one (typing-only imports included): the pipeline (cache, workqueue) knows no Kubernetes client,
no pluggy and no config; the hookspecs name no action type; the spine (plan, bound, manager)
is one layer that compiles, wires and runs. ``kinrun`` itself (the lazy public face) is above
everything; importing ``kinrun.__version__`` from it is allowed anywhere.
"""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "clock", "durations", "selectors", "conditions",  # pure data and time; no I/O;
     "redact", "openapi"),                                 # Secret values kept out of output;
                                                           # the kinds' schemas
    ("cache", "workqueue"),                                # the client-go informer pipeline
    ("kube", "hooks"),                                     # the official client; the hookspecs
    ("config", "config_watch", "templating", "predicates",  # the YAML model, watching its
     "crds"),                                              # files; the Jinja2 sandbox; CRD
                                                           # files read offline
    ("actions", "plugin_manager", "metrics", "probes", "leader_election", "logging_setup"),
    ("reconcile", "controller", "schedule", "sharding"),   # one key's reconcile; the workers;
                                                           # cron schedules; a ring's replicas
    ("plan", "bound", "manager", "rbac", "reload"),        # the spine: compile, bind, run;
                                                           # the RBAC a plan needs; reload
    ("testing",),                                          # embedded API server, fault proxy
    ("signals", "app", "manifests", "reference"),          # the main job; its deployment;
                                                           # the generated template reference
    ("cli",),                                              # thin argument parsing
)
"""Each entry names top-level modules or packages of ``kinrun`` (``cache`` covers
``kinrun.cache.*``)."""
