"""kinrun's use of CPython's cyclic garbage collector, in one package.

``pause``: the collector paused for a block (a decode, a LIST, a Replace); used with or without
the policy. ``policy``: the main job's GC policy (raised thresholds, survivors frozen, young
collections by the bytes decoded, between reconciles). ``observer``: the seam through which the
pipeline (``kinrun.kube``, ``kinrun.cache``, ``kinrun.controller``) reports to the policy
without reading or writing its state; ``policy.manage`` installs the policy's observer.
Standard library only; the lowest layer (``kinrun._layers``).
"""
