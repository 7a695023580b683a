"""Which informers of a config a ring shards, and which every replica caches whole.

Sharded (each replica lists and watches only the objects labelled with its name):

* **primary** — every controller's ``for`` informer: its objects are hashed by their own
  ``group/Kind/namespace/name``;
* **owned** — informers watched with ``mapTo: owner``: their objects are hashed by their
  controller (owner reference with ``controller: true``) and follow it, so a child lands on its
  owner's replica. A child without a controller reference is never labelled and so seen by no
  replica; owner references without ``controller: true`` do not count.

Everything else (informers watched with ``mapTo: {template}``/``{index}``, and informers only
read through listers and indexes in templates and hooks) is cached whole on every replica:
lookups over objects that are neither a primary nor its owned children must see them all.

An informer cannot be both a primary and an owned child under sharding (it would need two
hash keys): :func:`sharded_informers` refuses that with a located ConfigError.
"""

from __future__ import annotations

from kinrun.config.model import Config

PRIMARY, OWNED, WHOLE = "primary", "owned", "whole"


def sharded_informers(config: Config) -> dict[str, str]:
    """Informer name -> :data:`PRIMARY` or :data:`OWNED` for the informers ``config``'s ring
    shards (empty without ``sharding``). Raises ConfigError (at the watch) for an informer
    that is both a primary and watched with ``mapTo: owner``."""
    if config.sharding is None:
        return {}
    roles = {c.primary: PRIMARY for c in config.controllers}
    for controller in config.controllers:
        for watch in controller.watches:
            if watch.map_to != "owner":
                continue
            if roles.get(watch.informer) == PRIMARY:
                raise watch.location.error(
                    f"sharding: informer {watch.informer!r} is a primary informer and watched "
                    f"with mapTo: owner; a sharded informer is one or the other (give the "
                    f"owned children an informer of their own)")
            roles[watch.informer] = OWNED
    return roles


def owners_of(config: Config, informer: str) -> tuple[str, ...]:
    """The primary informers whose controllers watch ``informer`` with ``mapTo: owner``."""
    return tuple(dict.fromkeys(c.primary for c in config.controllers for w in c.watches
                               if w.map_to == "owner" and w.informer == informer))


def describe(config: Config) -> list[str]:
    """One line per informer saying whether the ring shards it (for ``kinrun validate``);
    empty without ``sharding``."""
    if config.sharding is None:
        return []
    roles = sharded_informers(config)
    lines = []
    for name in config.informers:
        role = roles.get(name, WHOLE)
        if role == PRIMARY:
            what = "sharded (primary: by its own namespace/name)"
        elif role == OWNED:
            what = "sharded (owned children: with their controller, " \
                   f"{', '.join(owners_of(config, name))})"
        else:
            what = "not sharded: cached whole on every replica"
        lines.append(f"sharding {config.sharding.ring}: informer {name}: {what}")
    return lines


__all__ = ["OWNED", "PRIMARY", "WHOLE", "describe", "owners_of", "sharded_informers"]
