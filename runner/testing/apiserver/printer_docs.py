"""The column definitions of kube-apiserver 1.20's Tables of built-in kinds: each column's
name, type, priority and description, in the order 1.20's printers
(``pkg/printers/internalversion/printers.go``, ``AddHandlers``) declare them, with the
descriptions they take from the API types' swagger docs. Data, as kube-apiserver 1.20.2
sends it (``GET ... Accept: application/json;as=Table;v=v1;g=meta.k8s.io``); the cells are
``printers.py``'s.
"""

from __future__ import annotations

from .tables import CREATED_DESCRIPTION as AGE
from .tables import NAME_DESCRIPTION as NAME

Definition = tuple[str, str, int, str]
"""(name, type, priority, description)."""
CONTAINERS = "Names of each container in the template."
IMAGES = "Images referenced by each container in the template."

DEFINITIONS: dict[tuple[str, str], list[Definition]] = {
    ('', 'ConfigMap'): [
        ('Name', 'string', 0, NAME),
        ('Data', 'string', 0, ('Data contains the configuration data. Each key must consist '
                               "of alphanumeric characters, '-', '_' or '.'. Values with non-"
                               'UTF-8 byte sequences must use the BinaryData field. The keys '
                               'stored in Data must not overlap with the keys in the '
                               'BinaryData field, this is enforced during validation process.')),
        ('Age', 'string', 0, AGE),
    ],
    ('', 'Endpoints'): [
        ('Name', 'string', 0, NAME),
        ('Endpoints', 'string', 0, ('The set of all endpoints is the union of all subsets. '
                                    'Addresses are placed into subsets according to the IPs '
                                    'they share. A single address with multiple ports, some '
                                    'of which are ready and some of which are not (because '
                                    'they come from different containers) will result in the '
                                    'address being displayed in different subsets for the '
                                    'different ports. No address will appear in both '
                                    'Addresses and NotReadyAddresses in the same subset. Sets'
                                    ' of addresses and ports that comprise a service.')),
        ('Age', 'string', 0, AGE),
    ],
    ('', 'Event'): [
        ('Last Seen', 'string', 0, ('The time at which the most recent occurrence of this '
                                    'event was recorded.')),
        ('Type', 'string', 0, ('Type of this event (Normal, Warning), new types could be '
                               'added in the future')),
        ('Reason', 'string', 0, ('This should be a short, machine understandable string that '
                                 "gives the reason for the transition into the object's "
                                 'current status.')),
        ('Object', 'string', 0, 'The object that this event is about.'),
        ('Subobject', 'string', 1, ('If referring to a piece of an object instead of an '
                                    'entire object, this string should contain a valid '
                                    'JSON/Go field access statement, such as '
                                    'desiredState.manifest.containers[2]. For example, if the'
                                    ' object reference is to a container within a pod, this '
                                    'would take on a value like: "spec.containers{name}" '
                                    '(where "name" refers to the name of the container that '
                                    'triggered the event) or if no container name is '
                                    'specified "spec.containers[2]" (container with index 2 '
                                    'in this pod). This syntax is chosen only to have some '
                                    'well-defined way of referencing a part of an object.')),
        ('Source', 'string', 1, ('The component reporting this event. Should be a short '
                                 'machine understandable string.')),
        ('Message', 'string', 0, ('A human-readable description of the status of this '
                                  'operation.')),
        ('First Seen', 'string', 1, ('The time at which the event was first recorded. (Time '
                                     'of server receipt is in TypeMeta.)')),
        ('Count', 'string', 1, 'The number of times this event has occurred.'),
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
        ('Version', 'string', 0, 'Kubelet Version reported by the node.'),
        ('Internal-IP', 'string', 1, ('List of addresses reachable to the node. Queried from '
                                      'cloud provider, if available. More info: https://kuber'
                                      'netes.io/docs/concepts/nodes/node/#addresses Note: '
                                      'This field is declared as mergeable, but the merge key'
                                      ' is not sufficiently unique, which can cause data '
                                      'corruption when it is merged. Callers should instead '
                                      'use a full-replacement patch. See '
                                      'http://pr.k8s.io/79391 for an example.')),
        ('External-IP', 'string', 1, ('List of addresses reachable to the node. Queried from '
                                      'cloud provider, if available. More info: https://kuber'
                                      'netes.io/docs/concepts/nodes/node/#addresses Note: '
                                      'This field is declared as mergeable, but the merge key'
                                      ' is not sufficiently unique, which can cause data '
                                      'corruption when it is merged. Callers should instead '
                                      'use a full-replacement patch. See '
                                      'http://pr.k8s.io/79391 for an example.')),
        ('OS-Image', 'string', 1, ('OS Image reported by the node from /etc/os-release (e.g. '
                                   'Debian GNU/Linux 7 (wheezy)).')),
        ('Kernel-Version', 'string', 1, ("Kernel Version reported by the node from 'uname -r'"
                                         ' (e.g. 3.16.0-0.bpo.4-amd64).')),
        ('Container-Runtime', 'string', 1, ('ContainerRuntime Version reported by the node '
                                            'through runtime remote API (e.g. '
                                            'docker://1.5.0).')),
    ],
    ('', 'PersistentVolumeClaim'): [
        ('Name', 'string', 0, NAME),
        ('Status', 'string', 0, 'Phase represents the current phase of PersistentVolumeClaim.'),
        ('Volume', 'string', 0, ('VolumeName is the binding reference to the PersistentVolume'
                                 ' backing this claim.')),
        ('Capacity', 'string', 0, 'Represents the actual resources of the underlying volume.'),
        ('Access Modes', 'string', 0, ('AccessModes contains the actual access modes the '
                                       'volume backing the PVC has. More info: https://kubern'
                                       'etes.io/docs/concepts/storage/persistent-'
                                       'volumes#access-modes-1')),
        ('StorageClass', 'string', 0, 'StorageClass of the pvc'),
        ('Age', 'string', 0, AGE),
        ('VolumeMode', 'string', 1, ('volumeMode defines what type of volume is required by '
                                     'the claim. Value of Filesystem is implied when not '
                                     'included in claim spec.')),
    ],
    ('', 'Pod'): [
        ('Name', 'string', 0, NAME),
        ('Ready', 'string', 0, ('The aggregate readiness state of this pod for accepting '
                                'traffic.')),
        ('Status', 'string', 0, 'The aggregate status of the containers in this pod.'),
        ('Restarts', 'integer', 0, ('The number of times the containers in this pod have been'
                                    ' restarted.')),
        ('Age', 'string', 0, AGE),
        ('IP', 'string', 1, ('IP address allocated to the pod. Routable at least within the '
                             'cluster. Empty if not yet allocated.')),
        ('Node', 'string', 1, ('NodeName is a request to schedule this pod onto a specific '
                               'node. If it is non-empty, the scheduler simply schedules this'
                               ' pod onto that node, assuming that it fits resource '
                               'requirements.')),
        ('Nominated Node', 'string', 1, ('nominatedNodeName is set only when this pod '
                                         'preempts other pods on the node, but it cannot be '
                                         'scheduled right away as preemption victims receive '
                                         'their graceful termination periods. This field does'
                                         ' not guarantee that the pod will be scheduled on '
                                         'this node. Scheduler may decide to place the pod '
                                         'elsewhere if other nodes become available sooner. '
                                         'Scheduler may also decide to give the resources on '
                                         'this node to a higher priority pod that is created '
                                         'after preemption. As a result, this field may be '
                                         'different than PodSpec.nodeName when the pod is '
                                         'scheduled.')),
        ('Readiness Gates', 'string', 1, ('If specified, all readiness gates will be '
                                          'evaluated for pod readiness. A pod is ready when '
                                          'all its containers are ready AND all conditions '
                                          'specified in the readiness gates have status equal'
                                          ' to "True" More info: '
                                          'https://git.k8s.io/enhancements/keps/sig-'
                                          'network/0007-pod-ready%2B%2B.md')),
    ],
    ('', 'ReplicationController'): [
        ('Name', 'string', 0, NAME),
        ('Desired', 'integer', 0, ('Replicas is the number of desired replicas. This is a '
                                   'pointer to distinguish between explicit zero and '
                                   'unspecified. Defaults to 1. More info: https://kubernetes'
                                   '.io/docs/concepts/workloads/controllers/replicationcontro'
                                   'ller#what-is-a-replicationcontroller')),
        ('Current', 'integer', 0, ('Replicas is the most recently oberved number of replicas.'
                                   ' More info: https://kubernetes.io/docs/concepts/workloads'
                                   '/controllers/replicationcontroller#what-is-a-'
                                   'replicationcontroller')),
        ('Ready', 'integer', 0, 'The number of ready replicas for this replication controller.'),
        ('Age', 'string', 0, AGE),
        ('Containers', 'string', 1, CONTAINERS),
        ('Images', 'string', 1, IMAGES),
        ('Selector', 'string', 1, ('Selector is a label query over pods that should match the'
                                   ' Replicas count. If Selector is empty, it is defaulted to'
                                   ' the labels present on the Pod template. Label keys and '
                                   'values that must match in order to be controlled by this '
                                   'replication controller, if empty defaulted to labels on '
                                   'Pod template. More info: '
                                   'https://kubernetes.io/docs/concepts/overview/working-'
                                   'with-objects/labels/#label-selectors')),
    ],
    ('', 'Secret'): [
        ('Name', 'string', 0, NAME),
        ('Type', 'string', 0, 'Used to facilitate programmatic handling of secret data.'),
        ('Data', 'string', 0, ('Data contains the secret data. Each key must consist of '
                               "alphanumeric characters, '-', '_' or '.'. The serialized form"
                               ' of the secret data is a base64 encoded string, representing '
                               'the arbitrary (possibly non-string) data value here. '
                               'Described in https://tools.ietf.org/html/rfc4648#section-4')),
        ('Age', 'string', 0, AGE),
    ],
    ('', 'Service'): [
        ('Name', 'string', 0, NAME),
        ('Type', 'string', 0, ('type determines how the Service is exposed. Defaults to '
                               'ClusterIP. Valid options are ExternalName, ClusterIP, '
                               'NodePort, and LoadBalancer. "ClusterIP" allocates a cluster-'
                               'internal IP address for load-balancing to endpoints. '
                               'Endpoints are determined by the selector or if that is not '
                               'specified, by manual construction of an Endpoints object or '
                               'EndpointSlice objects. If clusterIP is "None", no virtual IP '
                               'is allocated and the endpoints are published as a set of '
                               'endpoints rather than a virtual IP. "NodePort" builds on '
                               'ClusterIP and allocates a port on every node which routes to '
                               'the same endpoints as the clusterIP. "LoadBalancer" builds on'
                               ' NodePort and creates an external load-balancer (if supported'
                               ' in the current cloud) which routes to the same endpoints as '
                               'the clusterIP. "ExternalName" aliases this service to the '
                               'specified externalName. Several other fields do not apply to '
                               'ExternalName services. More info: '
                               'https://kubernetes.io/docs/concepts/services-'
                               'networking/service/#publishing-services-service-types')),
        ('Cluster-IP', 'string', 0, ('clusterIP is the IP address of the service and is '
                                     'usually assigned randomly. If an address is specified '
                                     'manually, is in-range (as per system configuration), '
                                     'and is not in use, it will be allocated to the service;'
                                     ' otherwise creation of the service will fail. This '
                                     'field may not be changed through updates unless the '
                                     'type field is also being changed to ExternalName (which'
                                     ' requires this field to be blank) or the type field is '
                                     'being changed from ExternalName (in which case this '
                                     'field may optionally be specified, as describe above).'
                                     '  Valid values are "None", empty string (""), or a '
                                     'valid IP address. Setting this to "None" makes a '
                                     '"headless service" (no virtual IP), which is useful '
                                     'when direct endpoint connections are preferred and '
                                     'proxying is not required.  Only applies to types '
                                     'ClusterIP, NodePort, and LoadBalancer. If this field is'
                                     ' specified when creating a Service of type '
                                     'ExternalName, creation will fail. This field will be '
                                     'wiped when updating a Service to type ExternalName. '
                                     'More info: '
                                     'https://kubernetes.io/docs/concepts/services-'
                                     'networking/service/#virtual-ips-and-service-proxies')),
        ('External-IP', 'string', 0, ('externalIPs is a list of IP addresses for which nodes '
                                      'in the cluster will also accept traffic for this '
                                      'service.  These IPs are not managed by Kubernetes.  '
                                      'The user is responsible for ensuring that traffic '
                                      'arrives at a node with this IP.  A common example is '
                                      'external load-balancers that are not part of the '
                                      'Kubernetes system.')),
        ('Port(s)', 'string', 0, ('The list of ports that are exposed by this service. More '
                                  'info: https://kubernetes.io/docs/concepts/services-'
                                  'networking/service/#virtual-ips-and-service-proxies')),
        ('Age', 'string', 0, AGE),
        ('Selector', 'string', 1, ('Route service traffic to pods with label keys and values '
                                   'matching this selector. If empty or not present, the '
                                   'service is assumed to have an external process managing '
                                   'its endpoints, which Kubernetes will not modify. Only '
                                   'applies to types ClusterIP, NodePort, and LoadBalancer. '
                                   'Ignored if type is ExternalName. More info: '
                                   'https://kubernetes.io/docs/concepts/services-'
                                   'networking/service/')),
    ],
    ('', 'ServiceAccount'): [
        ('Name', 'string', 0, NAME),
        ('Secrets', 'string', 0, ('Secrets is the list of secrets allowed to be used by pods '
                                  'running using this ServiceAccount. More info: '
                                  'https://kubernetes.io/docs/concepts/configuration/secret')),
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
        ('Desired', 'integer', 0, ('The total number of nodes that should be running the '
                                   'daemon pod (including nodes correctly running the daemon '
                                   'pod). More info: https://kubernetes.io/docs/concepts/work'
                                   'loads/controllers/daemonset/')),
        ('Current', 'integer', 0, ('The number of nodes that are running at least 1 daemon '
                                   'pod and are supposed to run the daemon pod. More info: ht'
                                   'tps://kubernetes.io/docs/concepts/workloads/controllers/d'
                                   'aemonset/')),
        ('Ready', 'integer', 0, ('The number of nodes that should be running the daemon pod '
                                 'and have one or more of the daemon pod running and ready.')),
        ('Up-to-date', 'integer', 0, ('The total number of nodes that are running updated '
                                      'daemon pod')),
        ('Available', 'integer', 0, ('The number of nodes that should be running the daemon '
                                     'pod and have one or more of the daemon pod running and '
                                     'available (ready for at least spec.minReadySeconds)')),
        ('Node Selector', 'string', 0, ('NodeSelector is a selector which must be true for '
                                        'the pod to fit on a node. Selector which must match '
                                        "a node's labels for the pod to be scheduled on that "
                                        'node. More info: https://kubernetes.io/docs/concepts'
                                        '/configuration/assign-pod-node/')),
        ('Age', 'string', 0, AGE),
        ('Containers', 'string', 1, CONTAINERS),
        ('Images', 'string', 1, IMAGES),
        ('Selector', 'string', 1, ('A label query over pods that are managed by the daemon '
                                   'set. Must match in order to be controlled. If empty, '
                                   'defaulted to labels on Pod template. More info: '
                                   'https://kubernetes.io/docs/concepts/overview/working-'
                                   'with-objects/labels/#label-selectors')),
    ],
    ('apps', 'Deployment'): [
        ('Name', 'string', 0, NAME),
        ('Ready', 'string', 0, 'Number of the pod with ready state'),
        ('Up-to-date', 'string', 0, ('Total number of non-terminated pods targeted by this '
                                     'deployment that have the desired template spec.')),
        ('Available', 'string', 0, ('Total number of available pods (ready for at least '
                                    'minReadySeconds) targeted by this deployment.')),
        ('Age', 'string', 0, AGE),
        ('Containers', 'string', 1, CONTAINERS),
        ('Images', 'string', 1, IMAGES),
        ('Selector', 'string', 1, ('Label selector for pods. Existing ReplicaSets whose pods '
                                   'are selected by this will be the ones affected by this '
                                   'deployment.')),
    ],
    ('apps', 'ReplicaSet'): [
        ('Name', 'string', 0, NAME),
        ('Desired', 'integer', 0, ('Replicas is the number of desired replicas. This is a '
                                   'pointer to distinguish between explicit zero and '
                                   'unspecified. Defaults to 1. More info: https://kubernetes'
                                   '.io/docs/concepts/workloads/controllers/replicationcontro'
                                   'ller/#what-is-a-replicationcontroller')),
        ('Current', 'integer', 0, ('Replicas is the most recently oberved number of replicas.'
                                   ' More info: https://kubernetes.io/docs/concepts/workloads'
                                   '/controllers/replicationcontroller/#what-is-a-'
                                   'replicationcontroller')),
        ('Ready', 'integer', 0, 'The number of ready replicas for this replica set.'),
        ('Age', 'string', 0, AGE),
        ('Containers', 'string', 1, CONTAINERS),
        ('Images', 'string', 1, IMAGES),
        ('Selector', 'string', 1, ('Selector is a label query over pods that should match the'
                                   ' replica count. If the selector is empty, it is defaulted'
                                   ' to the labels present on the pod template. Label keys '
                                   'and values that must match in order to be controlled by '
                                   'this replica set. More info: '
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
        ('Completions', 'string', 0, 'The number of pods which reached phase Succeeded.'),
        ('Duration', 'string', 0, 'Time required to complete the job.'),
        ('Age', 'string', 0, AGE),
        ('Containers', 'string', 1, CONTAINERS),
        ('Images', 'string', 1, IMAGES),
        ('Selector', 'string', 1, ('A label query over pods that should match the pod count. '
                                   'Normally, the system sets this field for you. More info: '
                                   'https://kubernetes.io/docs/concepts/overview/working-'
                                   'with-objects/labels/#label-selectors')),
    ],
    ('coordination.k8s.io', 'Lease'): [
        ('Name', 'string', 0, NAME),
        ('Holder', 'string', 0, ('holderIdentity contains the identity of the holder of a '
                                 'current lease.')),
        ('Age', 'string', 0, AGE),
    ],
    ('networking.k8s.io', 'Ingress'): [
        ('Name', 'string', 0, NAME),
        ('Class', 'string', 0, ('The name of the IngressClass resource that should be used '
                                'for additional configuration')),
        ('Hosts', 'string', 0, ('Hosts that incoming requests are matched against before the '
                                'ingress rule')),
        ('Address', 'string', 0, ('Address is a list containing ingress points for the load-'
                                  'balancer')),
        ('Ports', 'string', 0, 'Ports of TLS configurations that open'),
        ('Age', 'string', 0, AGE),
    ],
}
"""(group, kind) -> the columns of its Table, NAME included (an Event's is its last)."""
