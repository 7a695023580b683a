"""Admission webhooks that kinrun serves: validating and mutating rules written as templates.

    program.py   the config's ``admission.webhooks`` compiled (templates checked at
                 ``validate``), and one AdmissionReview answered by them
    server.py    the HTTPS server the API server calls (``kinrun.tls`` certificates)

The semantics are the API server's (admission.k8s.io/v1 AdmissionReview, the webhook
configuration fields) and controller-runtime's webhook server's (paths, metrics); the rule
language is kinrun's own: the templates of actions, in the same sandbox and budget.
Nothing here imports the spine: the main job hands the server its listers.
"""

from kinrun.admission.program import AdmissionProgram, WebhookProgram, compile_admission

__all__ = ["AdmissionProgram", "WebhookProgram", "compile_admission"]
