"""The informer cache: reflector, DeltaFIFO, indexer, shared informers (client-go tools/cache).

Holds no Kubernetes I/O: the API server is reached through the ``ListerWatcher`` protocol.
Everything cached is a plain dict, shared and read-only.
"""

from kinrun.cache.backoff import Backoff
from kinrun.cache.delta_fifo import (
    Delta,
    DeltaFIFO,
    DeltaType,
    FIFOClosedError,
    RequeueError,
)
from kinrun.cache.factory import InformerKey, SharedInformerFactory
from kinrun.cache.handler import (
    FilteringResourceEventHandler,
    ResourceEventHandler,
    ResourceEventHandlerFuncs,
)
from kinrun.cache.index import (
    NAMESPACE_INDEX,
    IndexConflictError,
    Indexer,
    Indexers,
    IndexFunc,
    UnknownIndexError,
    meta_namespace_index_func,
)
from kinrun.cache.lister import Lister
from kinrun.cache.listwatch import ListerWatcher, ObjectList, Watch, WatchEvent
from kinrun.cache.protocols import IndexReader, InformerInterface, ListerInterface
from kinrun.cache.multi_namespace import MultiNamespaceInformer, MultiNamespaceLister
from kinrun.cache.reflector import Liveness, Reflector, ReflectorObserver
from kinrun.cache.shared_informer import (
    InformerStoppedError,
    ListenerRegistration,
    SharedIndexInformer,
    wait_for_cache_sync,
)
from kinrun.cache.store import (
    DeletedFinalStateUnknown,
    KeyFuncError,
    Store,
    deletion_handling_meta_namespace_key,
    meta_namespace_key,
    split_meta_namespace_key,
)
from kinrun.cache.thread_safe_store import IndexFuncError, KeyedIndexer, ThreadSafeStore, new_indexer
from kinrun.cache.transform import STRIP_MANAGED_FIELDS, FieldPruner, parse_path, strip_managed_fields

__all__ = [
    "Backoff",
    "DeletedFinalStateUnknown",
    "Delta",
    "DeltaFIFO",
    "DeltaType",
    "FIFOClosedError",
    "FieldPruner",
    "FilteringResourceEventHandler",
    "IndexConflictError",
    "IndexFunc",
    "IndexFuncError",
    "IndexReader",
    "Indexer",
    "InformerInterface",
    "Indexers",
    "InformerKey",
    "InformerStoppedError",
    "KeyFuncError",
    "KeyedIndexer",
    "ListenerRegistration",
    "Lister",
    "ListerInterface",
    "ListerWatcher",
    "Liveness",
    "MultiNamespaceInformer",
    "MultiNamespaceLister",
    "NAMESPACE_INDEX",
    "ObjectList",
    "Reflector",
    "ReflectorObserver",
    "RequeueError",
    "ResourceEventHandler",
    "ResourceEventHandlerFuncs",
    "STRIP_MANAGED_FIELDS",
    "SharedIndexInformer",
    "SharedInformerFactory",
    "Store",
    "ThreadSafeStore",
    "UnknownIndexError",
    "Watch",
    "WatchEvent",
    "deletion_handling_meta_namespace_key",
    "meta_namespace_index_func",
    "meta_namespace_key",
    "new_indexer",
    "parse_path",
    "split_meta_namespace_key",
    "strip_managed_fields",
    "wait_for_cache_sync",
]
