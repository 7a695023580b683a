"""The column definitions of kube-apiserver 1.20's Tables of built-in kinds: each column's
name, type, priority and description, in the order 1.20's printers
(``pkg/printers/internalversion/printers.go``, ``AddHandlers``) declare them. The cells are
``printers.py``'s.

1.20's printers take most descriptions from the API types' swagger docs
(``apiv1.ConfigMap{}.SwaggerDoc()["data"]``): those are written here as a :class:`Field` of
the kind and read from the same docs in the shipped OpenAPI (``kinrun.openapi``), so the text
is not copied twice. The rest are the printers' own words, or swagger docs of types 1.20's
OpenAPI no longer serves (the ``extensions/v1beta1`` selectors of the workloads), written out.
As kube-apiserver 1.20.2 sends them (``GET ... Accept:
application/json;as=Table;v=v1;g=meta.k8s.io``; ``tests/envtest/test_differential_tables.py``).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from kinrun.openapi import builtin_schemas

Definition = tuple[str, str, int, str]
"""(name, type, priority, description)."""


class Field(NamedTuple):
    """A column described by the swagger doc of a field of its kind: ``path`` dotted from the
    object (``status.nodeInfo.kubeletVersion``; ``[]`` steps into list items), the
    description of that property as the OpenAPI declares it (not of the type it refers to)."""

    path: str


NAME = Field("metadata.name")
AGE = Field("metadata.creationTimestamp")
CONTAINERS = "Names of each container in the template."
IMAGES = "Images referenced by each container in the template."

_COLUMNS: dict[tuple[str, str], list[tuple[str, str, int, str | Field]]] = {
    ('', 'ConfigMap'): [
        ('Name', 'string', 0, NAME),
        ('Data', 'string', 0, Field('data')),
        ('Age', 'string', 0, AGE),
    ],
    ('', 'Endpoints'): [
        ('Name', 'string', 0, NAME),
        ('Endpoints', 'string', 0, Field('subsets')),
        ('Age', 'string', 0, AGE),
    ],
    ('', 'Event'): [
        ('Last Seen', 'string', 0, Field('lastTimestamp')),
        ('Type', 'string', 0, Field('type')),
        ('Reason', 'string', 0, Field('reason')),
        ('Object', 'string', 0, Field('involvedObject')),
        ('Subobject', 'string', 1, Field('involvedObject.fieldPath')),
        ('Source', 'string', 1, Field('source')),
        ('Message', 'string', 0, Field('message')),
        ('First Seen', 'string', 1, Field('firstTimestamp')),
        ('Count', 'string', 1, Field('count')),
        ('Name', 'string', 1, NAME),
    ],
    ('', 'Namespace'): [
        ('Name', 'string', 0, NAME),
        ('Status', 'string', 0, 'The status of the namespace'),
        ('Age', 'string', 0, AGE),
    ],
    ('', 'Node'): [
        ('Name', 'string', 0, NAME),
        ('Status', 'string', 0, 'The status of the node'),
        ('Roles', 'string', 0, 'The roles of the node'),
        ('Age', 'string', 0, AGE),
        ('Version', 'string', 0, Field('status.nodeInfo.kubeletVersion')),
        ('Internal-IP', 'string', 1, Field('status.addresses')),
        ('External-IP', 'string', 1, Field('status.addresses')),
        ('OS-Image', 'string', 1, Field('status.nodeInfo.osImage')),
        ('Kernel-Version', 'string', 1, Field('status.nodeInfo.kernelVersion')),
        ('Container-Runtime', 'string', 1, Field('status.nodeInfo.containerRuntimeVersion')),
    ],
    ('', 'PersistentVolumeClaim'): [
        ('Name', 'string', 0, NAME),
        ('Status', 'string', 0, Field('status.phase')),
        ('Volume', 'string', 0, Field('spec.volumeName')),
        ('Capacity', 'string', 0, Field('status.capacity')),
        ('Access Modes', 'string', 0, Field('status.accessModes')),
        ('StorageClass', 'string', 0, 'StorageClass of the pvc'),
        ('Age', 'string', 0, AGE),
        ('VolumeMode', 'string', 1, Field('spec.volumeMode')),
    ],
    ('', 'Pod'): [
        ('Name', 'string', 0, NAME),
        ('Ready', 'string', 0, 'The aggregate readiness state of this pod for accepting traffic.'),
        ('Status', 'string', 0, 'The aggregate status of the containers in this pod.'),
        ('Restarts', 'integer', 0, ('The number of times the containers in this pod have been '
                                    'restarted.')),
        ('Age', 'string', 0, AGE),
        ('IP', 'string', 1, Field('status.podIP')),
        ('Node', 'string', 1, Field('spec.nodeName')),
        ('Nominated Node', 'string', 1, Field('status.nominatedNodeName')),
        ('Readiness Gates', 'string', 1, Field('spec.readinessGates')),
    ],
    ('', 'ReplicationController'): [
        ('Name', 'string', 0, NAME),
        ('Desired', 'integer', 0, Field('spec.replicas')),
        ('Current', 'integer', 0, Field('status.replicas')),
        ('Ready', 'integer', 0, Field('status.readyReplicas')),
        ('Age', 'string', 0, AGE),
        ('Containers', 'string', 1, CONTAINERS),
        ('Images', 'string', 1, IMAGES),
        ('Selector', 'string', 1, Field('spec.selector')),
    ],
    ('', 'Secret'): [
        ('Name', 'string', 0, NAME),
        ('Type', 'string', 0, Field('type')),
        ('Data', 'string', 0, Field('data')),
        ('Age', 'string', 0, AGE),
    ],
    ('', 'Service'): [
        ('Name', 'string', 0, NAME),
        ('Type', 'string', 0, Field('spec.type')),
        ('Cluster-IP', 'string', 0, Field('spec.clusterIP')),
        ('External-IP', 'string', 0, Field('spec.externalIPs')),
        ('Port(s)', 'string', 0, Field('spec.ports')),
        ('Age', 'string', 0, AGE),
        ('Selector', 'string', 1, Field('spec.selector')),
    ],
    ('', 'ServiceAccount'): [
        ('Name', 'string', 0, NAME),
        ('Secrets', 'string', 0, Field('secrets')),
        ('Age', 'string', 0, AGE),
    ],
    ('admissionregistration.k8s.io', 'MutatingWebhookConfiguration'): [
        ('Name', 'string', 0, NAME),
        ('Webhooks', 'integer', 0, ('Webhooks indicates the number of webhooks registered in '
                                    'this configuration')),
        ('Age', 'string', 0, AGE),
    ],
    ('admissionregistration.k8s.io', 'ValidatingWebhookConfiguration'): [
        ('Name', 'string', 0, NAME),
        ('Webhooks', 'integer', 0, ('Webhooks indicates the number of webhooks registered in '
                                    'this configuration')),
        ('Age', 'string', 0, AGE),
    ],
    ('apiextensions.k8s.io', 'CustomResourceDefinition'): [
        ('Name', 'string', 0, NAME),
        ('Created At', 'date', 0, AGE),
    ],
    ('apps', 'DaemonSet'): [
        ('Name', 'string', 0, NAME),
        ('Desired', 'integer', 0, Field('status.desiredNumberScheduled')),
        ('Current', 'integer', 0, Field('status.currentNumberScheduled')),
        ('Ready', 'integer', 0, Field('status.numberReady')),
        ('Up-to-date', 'integer', 0, Field('status.updatedNumberScheduled')),
        ('Available', 'integer', 0, Field('status.numberAvailable')),
        ('Node Selector', 'string', 0, Field('spec.template.spec.nodeSelector')),
        ('Age', 'string', 0, AGE),
        ('Containers', 'string', 1, CONTAINERS),
        ('Images', 'string', 1, IMAGES),
        ('Selector', 'string', 1, ('A label query over pods that are managed by the daemon set. '
                                   'Must match in order to be controlled. If empty, defaulted to '
                                   'labels on Pod template. More info: '
                                   'https://kubernetes.io/docs/concepts/overview/working-'
                                   'with-objects/labels/#label-selectors')),
    ],
    ('apps', 'Deployment'): [
        ('Name', 'string', 0, NAME),
        ('Ready', 'string', 0, 'Number of the pod with ready state'),
        ('Up-to-date', 'string', 0, Field('status.updatedReplicas')),
        ('Available', 'string', 0, Field('status.availableReplicas')),
        ('Age', 'string', 0, AGE),
        ('Containers', 'string', 1, CONTAINERS),
        ('Images', 'string', 1, IMAGES),
        ('Selector', 'string', 1, ('Label selector for pods. Existing ReplicaSets whose pods are '
                                   'selected by this will be the ones affected by this '
                                   'deployment.')),
    ],
    ('apps', 'ReplicaSet'): [
        ('Name', 'string', 0, NAME),
        ('Desired', 'integer', 0, Field('spec.replicas')),
        ('Current', 'integer', 0, Field('status.replicas')),
        ('Ready', 'integer', 0, Field('status.readyReplicas')),
        ('Age', 'string', 0, AGE),
        ('Containers', 'string', 1, CONTAINERS),
        ('Images', 'string', 1, IMAGES),
        ('Selector', 'string', 1, ('Selector is a label query over pods that should match the '
                                   'replica count. If the selector is empty, it is defaulted to '
                                   'the labels present on the pod template. Label keys and '
                                   'values that must match in order to be controlled by this '
                                   'replica set. More info: '
                                   'https://kubernetes.io/docs/concepts/overview/working-'
                                   'with-objects/labels/#label-selectors')),
    ],
    ('apps', 'StatefulSet'): [
        ('Name', 'string', 0, NAME),
        ('Ready', 'string', 0, 'Number of the pod with ready state'),
        ('Age', 'string', 0, AGE),
        ('Containers', 'string', 1, CONTAINERS),
        ('Images', 'string', 1, IMAGES),
    ],
    ('batch', 'Job'): [
        ('Name', 'string', 0, NAME),
        ('Completions', 'string', 0, Field('status.succeeded')),
        ('Duration', 'string', 0, 'Time required to complete the job.'),
        ('Age', 'string', 0, AGE),
        ('Containers', 'string', 1, CONTAINERS),
        ('Images', 'string', 1, IMAGES),
        ('Selector', 'string', 1, Field('spec.selector')),
    ],
    ('coordination.k8s.io', 'Lease'): [
        ('Name', 'string', 0, NAME),
        ('Holder', 'string', 0, Field('spec.holderIdentity')),
        ('Age', 'string', 0, AGE),
    ],
    ('networking.k8s.io', 'Ingress'): [
        ('Name', 'string', 0, NAME),
        ('Class', 'string', 0, ('The name of the IngressClass resource that should be used for '
                                'additional configuration')),
        ('Hosts', 'string', 0, ('Hosts that incoming requests are matched against before the '
                                'ingress rule')),
        ('Address', 'string', 0, ('Address is a list containing ingress points for the '
                                  'load-balancer')),
        ('Ports', 'string', 0, 'Ports of TLS configurations that open'),
        ('Age', 'string', 0, AGE),
    ],
}
"""(group, kind) -> the columns of its Table, NAME included (an Event's is its last); a
description is text or a :class:`Field` of the kind's v1 schema."""

@functools.cache
def definitions(group: str, kind: str) -> list[Definition]:
    """The columns of the Table of built-in ``group``/``kind``, each
    description as 1.20 sends it. KeyError for another kind; the first call per kind reads
    the shipped OpenAPI (loaded once per process, shared with validation)."""
    schema = builtin_schemas().for_gvk(group, "v1", kind)
    assert schema is not None, (group, kind)   # every kind here is served as v1
    out = []
    for name, type_, priority, doc in _COLUMNS[(group, kind)]:
        if isinstance(doc, Field):
            parent, _, field = doc.path.rpartition(".")
            owner = schema.at(parent) if parent else schema
            assert owner is not None, doc
            doc = owner.node["properties"][field]["description"]
        out.append((name, type_, priority, doc))
    return out
