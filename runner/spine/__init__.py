"""The spine's types: what every command passes down, never back up.

    compiled   the compiled plan as data (InformerPlan, WatchPlan, ControllerPlan, CompiledPlan)
    wired      what binding builds for a Manager to run (Wired, HandlerEntry, Rewire)
    runnables  the Runnable protocol and the groups a Manager starts in order

Belongs here: frozen data and protocols the spine modules (``kinrun.plan``, ``kinrun.bound``,
``kinrun.manager``, ``kinrun.reload``) share, so that they import one another in one direction
only. Must not: import ``kinrun.plan``, ``kinrun.bound``, ``kinrun.manager`` or
``kinrun.reload``; do I/O.
"""
