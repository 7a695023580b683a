"""When a failed request is sent again, and after how long.

As client-go ``rest.Request`` (``checkWait``/``IsRetryableError``) with kinrun's own bounds:

- 429 Too Many Requests is retried for every verb: the server did not process the request.
- 5xx is retried only for safe requests (GET, including LIST and the opening of a WATCH); a
  write that met a 5xx may have been applied, so it is left to the caller (the controller's
  rate-limited requeue).
- "Too large resource version" (504 Timeout, cause ResourceVersionTooLarge: client-go
  ``reflector.go`` ``isTooLargeResourceVersionError``, here
  ``kinrun.cache.reflector.too_large_resource_version``) is never retried: the server already
  waited (~3 s) for that version, and asking again cannot bring it closer; the reflector relists
  from the latest version at once instead.
- A create whose ``generateName`` suffix hit an existing name is retried at once, for POST
  only: kube-apiserver 1.20 answers it with 500 ServerTimeout naming the operation ``POST``
  (``rest.CheckGeneratedNameError``), nothing was stored, and the next try draws a new suffix
  (kube-apiserver 1.31 retries such creates itself, KEP-4420). Other 5xx answers to a write
  are not retried.
- A watch stream that already answered 200 is never retried here: the reflector re-watches.
- The wait is the server's Retry-After (capped at ``max_retry_after``) when it sent one, else an
  exponential backoff ``base_delay * 2**(attempt-1)`` capped at ``max_delay``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kinrun.cache.reflector import too_large_resource_version
from kinrun.errors import ApiError, ServerError, TooManyRequestsError

SAFE_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounds for retrying 429/5xx answers.

    ``attempts``: total tries including the first (1 = never retry; default 4).
    ``base_delay``: seconds before the first retry without Retry-After (default 0.25).
    ``max_delay``: cap of the exponential backoff in seconds (default 8.0).
    ``max_retry_after``: cap in seconds on a server's Retry-After, so a bogus header cannot park
    a thread for hours (default 60.0).
    """

    attempts: int = 4
    base_delay: float = 0.25
    max_delay: float = 8.0
    max_retry_after: float = 60.0

    def should_retry(self, error: ApiError, *, method: str, attempt: int) -> bool:
        """True when ``error`` from try number ``attempt`` (1-based) of a ``method`` request
        deserves another try."""
        if attempt >= self.attempts:
            return False
        if isinstance(error, TooManyRequestsError):
            return True
        if too_large_resource_version(error):
            return False  # the caller (the reflector) relists from the latest at once
        if generated_name_taken(error):
            return method.upper() == "POST"
        return isinstance(error, ServerError) and method.upper() in SAFE_METHODS

    def delay(self, error: ApiError, *, attempt: int) -> float:
        """Seconds to wait after try number ``attempt`` (1-based) failed with ``error``."""
        if generated_name_taken(error):
            return 0.0  # not load: a new suffix is all the next try needs
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            return min(float(retry_after), self.max_retry_after)
        return min(self.base_delay * (2 ** (attempt - 1)), self.max_delay)


def generated_name_taken(error: ApiError) -> bool:
    """True for kube-apiserver's answer to a create whose generated name was taken: 500
    ServerTimeout with ``details.name == "POST"`` (``rest.CheckGeneratedNameError``; the
    ServerTimeouts of an unreachable storage name "get", "create" or "update" instead)."""
    body = getattr(error, "body", None) or {}
    return (isinstance(error, ServerError) and getattr(error, "reason", "") == "ServerTimeout"
            and (body.get("details") or {}).get("name") == "POST")


NO_RETRY = RetryPolicy(attempts=1)
"""A policy that never retries (tests, and callers that do their own retrying)."""
