"""Contender: the official client's own ``kubernetes.informer.SharedInformer`` (client >= 37).

It lists with ``CoreV1Api.list_namespaced_pod`` into model objects, keeps an ``ObjectCache``,
then watches with ``watch.Watch().stream`` (models) and calls the registered handlers on its
thread. For the ``events`` workload its list function answers the initial (non-watch) call
with an empty list at ``--since``, so that its watch replays the server's history; the watch
calls go to the real API method unchanged.
"""

from __future__ import annotations

import _common

ARGS = _common.parse_args()
REC, GCMON, RSS0 = _common.start(ARGS)

import functools  # noqa: E402

from kubernetes import client, config  # noqa: E402
from kubernetes.informer import ADDED, DELETED, MODIFIED, SharedInformer  # noqa: E402


def list_func_for(api: client.CoreV1Api):
    """The list function given to the informer (see the module docstring for ``events``)."""
    real = api.list_namespaced_pod

    @functools.wraps(real)
    def list_pods(*args, **kwargs):
        if not kwargs.get("watch"):
            REC.opened()
            if ARGS.workload == "events":
                return client.V1PodList(items=[], metadata=client.V1ListMeta(
                    resource_version=ARGS.since))
        return real(*args, **kwargs)

    return list_pods


def on_event(pod) -> None:
    md = pod.metadata
    REC.handled(md.name, md.namespace, md.annotations)


api = client.CoreV1Api(config.new_client_from_config(config_file=ARGS.kubeconfig))
informer = SharedInformer(list_func_for(api), namespace=ARGS.namespace)
for etype in (ADDED, MODIFIED, DELETED):
    informer.add_event_handler(etype, on_event)
informer.start()
_common.wait_and_emit("client-informer", ARGS, REC, GCMON, RSS0)
