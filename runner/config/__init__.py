"""The config file: loading (YAML with line/column marks), schema validation, cross-reference
and template-syntax checks, and the frozen dataclass model.

Public face: ``load(path)``/``load_text(text, file=...)`` return a :class:`Config` or raise
:class:`ConfigErrors` (a ``kinrun.errors.ConfigError`` listing every problem as
``file:line:column: key.path: message``). The schema, ``schemas/kinrun.schema.json`` (package
``kinrun.schemas``), is the single source of truth for the format. Purely data and file
reading: nothing here talks to a cluster.
"""

from kinrun.durations import format_duration, parse_duration
from kinrun.config.model import (BUILTIN_ACTION_KINDS, ActionSpec, ClusterSpec, Config,
                                 ControllerSpec, FrozenMap, IndexerSpec, InformerSpec,
                                 LeaderElectionSpec, Location, MetricsSpec, RateLimiterSpec,
                                 ReconcileSpec, TemplatesSpec, TransformSpec, WatchSpec, freeze,
                                 thaw)
from kinrun.config.options import RunOptions
from kinrun.config.parse import ConfigErrors, load, load_text
from kinrun.config.schema import load_schema, schema_text

__all__ = [
    "BUILTIN_ACTION_KINDS",
    "ActionSpec",
    "ClusterSpec",
    "Config",
    "ConfigErrors",
    "ControllerSpec",
    "FrozenMap",
    "IndexerSpec",
    "InformerSpec",
    "LeaderElectionSpec",
    "Location",
    "MetricsSpec",
    "RateLimiterSpec",
    "ReconcileSpec",
    "RunOptions",
    "TemplatesSpec",
    "TransformSpec",
    "WatchSpec",
    "format_duration",
    "freeze",
    "load",
    "load_schema",
    "load_text",
    "parse_duration",
    "schema_text",
    "thaw",
]
