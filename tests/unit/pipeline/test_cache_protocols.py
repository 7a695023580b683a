"""Every informer and lister kinrun wires satisfies the cache's protocols
(kinrun.cache.protocols), the one interface the rest of kinrun relies on."""

from __future__ import annotations

import pytest

from kinrun.cache import (IndexReader, InformerInterface, KeyedIndexer, Lister, ListerInterface,
                          MultiNamespaceInformer, SharedIndexInformer)
from kinrun.testing.memory import MemoryListerWatcher


def shared() -> SharedIndexInformer:
    return SharedIndexInformer(MemoryListerWatcher(), kind="Pod")


def multi() -> MultiNamespaceInformer:
    return MultiNamespaceInformer({"a": shared(), "b": shared()})


@pytest.mark.parametrize("make", [shared, multi], ids=["shared", "multi-namespace"])
def test_informers_satisfy_the_informer_interface(make):
    """Both informer shapes are InformerInterfaces; their listers and index readers too."""
    informer = make()
    assert isinstance(informer, InformerInterface)
    assert isinstance(informer.lister, ListerInterface)
    assert isinstance(informer.index_reader(), IndexReader)
    assert all(isinstance(s, SharedIndexInformer) for s in informer.shared_informers())
    assert informer.index_reader().by_index("namespace", "a") == []


def test_a_lister_over_an_indexer_is_a_lister_interface():
    """What kinrun render reads (a Lister over an empty KeyedIndexer) is a ListerInterface."""
    assert isinstance(Lister(KeyedIndexer()), ListerInterface)
