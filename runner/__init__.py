"""kinrun: turn one YAML file into a running Kubernetes controller.

The public face of the library. Layers underneath, low to high (a lower layer never imports a
higher one):

    errors, clock                     pure data and time; no I/O
    cache, workqueue                  the client-go informer pipeline; no Kubernetes I/O
    kube                              the official client, raw dict LIST/WATCH, writes
    config, hooks, actions            the YAML model, pluggy hookspecs, Jinja2 actions
    controller, app                   workers, and the main job that joins everything
    cli                               thin argument parsing over the above
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
