"""Label and field selectors: parsing (with the errors a real server gives) and matching.

Used by config validation (a selector that the server would refuse is a config error) and by the
embedded API server (which answers SelectorError as 400 BadRequest).

Label selectors follow apimachinery ``labels.Parse``: comma-separated requirements, each one of
``key``, ``!key``, ``key=v``, ``key==v``, ``key!=v``, ``key in (a,b)``, ``key notin (a,b)``,
``key>n``, ``key<n``; keys are qualified names and values label values (validated). ``!=`` and
``notin`` also match objects without the key, as in Kubernetes. Field selectors follow
``fields.ParseSelector``: ``key=v``, ``key==v``, ``key!=v`` joined by commas, ``\\`` escapes.
Which field keys a resource accepts is the registry's business; ``FieldSelector.check`` raises the
real server's 400 for any other key.

Selectors are immutable after parsing and safe to share between threads.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any



class SelectorError(ValueError):
    """A selector the API server would refuse (400 BadRequest); ``str()`` is the server's
    message, e.g. ``unable to parse requirement: ...``."""

QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
"""The name part of a qualified name (a label key's, a finalizer's) and a non-empty label
value: apimachinery's ``qualifiedNameFmt``. Use ``fullmatch``: Go's regexps match the whole
string (Python's ``$`` matches before a trailing newline)."""
DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
"""An RFC 1123 subdomain (apimachinery's ``dns1123SubdomainFmt``; at most 253 characters apart):
an object name, a qualified name's prefix. Use ``fullmatch``."""
_SPECIAL = set(" \t\n,()!=<>")


@functools.lru_cache(maxsize=4096)
def label_key_error(key: str) -> str | None:
    """Why ``key`` is not a valid label key (a qualified name), or None when it is."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return f"prefix part of {key!r} must be a DNS-1123 subdomain"
    if not name or len(name) > 63 or not QUALIFIED_NAME.fullmatch(name):
        return (f"name part of {key!r} must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character (max 63 characters)")
    return None


@functools.lru_cache(maxsize=4096)
def label_value_error(value: str) -> str | None:
    """Why ``value`` is not a valid label value, or None when it is ("" is valid)."""
    if value == "" or (len(value) <= 63 and QUALIFIED_NAME.fullmatch(value)):
        return None
    return (f"{value!r}: a valid label must be an empty string or consist of alphanumeric "
            "characters, '-', '_' or '.', and must start and end with an alphanumeric character")


@dataclass(frozen=True, slots=True)
class Requirement:
    """One label requirement: ``op`` in {"=", "!=", "in", "notin", "exists", "!", "gt", "lt"}."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy this requirement (labels.Requirement.Matches)."""
        has = self.key in labels
        if self.op in ("=", "in"):
            return has and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return not has or labels[self.key] not in self.values
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        if not has:
            return False
        try:
            value, bound = int(labels[self.key]), int(self.values[0])
        except ValueError:
            return False
        return value > bound if self.op == "gt" else value < bound


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed label selector; empty matches everything."""

    requirements: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        """True when this selector matches every object."""
        return not self.requirements

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        """Whether an object with ``labels`` (None = no labels) is selected."""
        labels = labels or {}
        return all(r.matches(labels) for r in self.requirements)


def disjoint(a: LabelSelector, b: LabelSelector) -> bool:
    """Whether no labels can match both ``a`` and ``b``, as far as one key's requirements
    show it: ``k=x`` (or ``k in (...)``) against ``k=y`` with no value in common, against
    ``!k``, or against ``k!=x``/``k notin (...)`` excluding every value ``a`` allows (and the
    same with ``a`` and ``b`` swapped). False when it cannot tell (``gt``/``lt``, other keys)."""
    return any(_excludes(ra, rb) or _excludes(rb, ra)
               for ra in a.requirements for rb in b.requirements if ra.key == rb.key)


def _excludes(first: Requirement, second: Requirement) -> bool:
    """Whether ``first`` (an ``=``/``in``/``exists`` requirement) and ``second`` of the same
    key select no labels together."""
    if first.op in ("=", "in"):
        allowed = set(first.values)
        return (second.op in ("=", "in") and not allowed & set(second.values)) \
            or second.op == "!" or (second.op in ("!=", "notin")
                                    and allowed <= set(second.values))
    return first.op == "exists" and second.op == "!"


def fields_disjoint(a: FieldSelector, b: FieldSelector) -> bool:
    """Whether no object can match both field selectors: one field required ``=`` to two
    different values (``metadata.name=a`` and ``metadata.name=b``), or ``=`` one value in one
    and ``!=`` that value in the other."""
    return any((op_a, op_b) == ("=", "=") and value_a != value_b
               or {op_a, op_b} == {"=", "!="} and value_a == value_b
               for field_a, op_a, value_a in a.terms for field_b, op_b, value_b in b.terms
               if field_a == field_b)


def _lex(text: str) -> list[str]:
    tokens: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\n":
            i += 1
        elif text.startswith(("==", "!="), i):
            tokens.append(text[i:i + 2])
            i += 2
        elif c in ",()!=<>":
            tokens.append(c)
            i += 1
        else:
            j = i
            while j < n and text[j] not in _SPECIAL:
                j += 1
            tokens.append(text[i:j])
            i = j
    return tokens


class _LabelParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _lex(text)
        self.pos = 0

    def fail(self, why: str) -> SelectorError:
        return SelectorError(f"unable to parse requirement: {why}")

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | None:
        tok = self.peek()
        self.pos += 1
        return tok

    def parse(self) -> LabelSelector:
        reqs: list[Requirement] = []
        while self.peek() is not None:
            reqs.append(self.requirement())
            tok = self.take()
            if tok not in (None, ","):
                raise self.fail(f"found '{tok}', expected: ',' or 'end of string'")
            if tok == "," and self.peek() is None:
                raise self.fail("found 'end of string', expected: identifier")
        return LabelSelector(tuple(reqs))

    def identifier(self) -> str:
        tok = self.take()
        if tok is None or tok in _SPECIAL or tok in ("==", "!="):
            raise self.fail(f"found '{tok or 'end of string'}', expected: identifier")
        return tok

    def requirement(self) -> Requirement:
        if self.peek() == "!":
            self.take()
            return Requirement(self.key(self.identifier()), "!")
        key = self.key(self.identifier())
        op = self.peek()
        if op in (None, ","):
            return Requirement(key, "exists")
        self.take()
        if op in ("=", "=="):
            return Requirement(key, "=", (self.value(),))
        if op == "!=":
            return Requirement(key, "!=", (self.value(),))
        if op in ("in", "notin"):
            return Requirement(key, op, self.value_set())
        if op in (">", "<"):
            bound = self.identifier()
            if not bound.lstrip("-").isdigit():
                raise self.fail("for 'Gt', 'Lt' operators, the value must be an integer")
            return Requirement(key, "gt" if op == ">" else "lt", (bound,))
        raise self.fail(f"found '{op}', expected: in, notin, =, ==, !=, gt, lt")

    def key(self, key: str) -> str:
        why = label_key_error(key)
        if why:
            raise self.fail(f"invalid label key {key!r}: {why}")
        return key

    def value(self) -> str:
        tok = self.peek()
        if tok is None or tok == ",":
            return ""
        value = self.identifier()
        why = label_value_error(value)
        if why:
            raise self.fail(f"invalid label value: {why}")
        return value

    def value_set(self) -> tuple[str, ...]:
        if self.take() != "(":
            raise self.fail("found something else, expected: '('")
        values: list[str] = []
        while True:
            tok = self.peek()
            if tok is None:
                raise self.fail("found 'end of string', expected: ')'")
            if tok == ")":
                self.take()
                return tuple(values)
            if tok == ",":
                self.take()
                if not values:
                    values.append("")
                continue
            values.append(self.value())


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse a ``labelSelector`` query value; raises SelectorError on bad syntax."""
    if not text or not text.strip():
        return LabelSelector()
    return _LabelParser(text).parse()


_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def label_selector_from(selector: Mapping[str, Any] | None) -> LabelSelector:
    """A metav1.LabelSelector object (``matchLabels``, ``matchExpressions`` with In, NotIn,
    Exists, DoesNotExist) as a LabelSelector (as ``metav1.LabelSelectorAsSelector``; None or
    ``{}`` matches everything). Raises SelectorError for an unknown operator."""
    if not selector:
        return LabelSelector()
    reqs = [Requirement(str(k), "=", (str(v),))
            for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op = _OPERATORS.get(str(expr.get("operator")))
        if op is None:
            raise SelectorError(f"{expr.get('operator')!r} is not a valid pod selector operator")
        reqs.append(Requirement(str(expr.get("key")), op,
                                tuple(str(v) for v in expr.get("values") or ())))
    return LabelSelector(tuple(reqs))


@dataclass(frozen=True, slots=True)
class FieldSelector:
    """A parsed field selector: (field, op, value) terms, op in {"=", "!="}; empty = all."""

    terms: tuple[tuple[str, str, str], ...] = ()

    @property
    def empty(self) -> bool:
        """True when this selector matches every object."""
        return not self.terms

    def check(self, allowed: frozenset[str], resource: str) -> None:
        """Raise 400 BadRequest for a field the resource does not index, with the real
        server's message: the field-label conversion of kinds with their own selectable fields
        says ``field label not supported: F``, the default metav1 one lists the metadata
        fields."""
        for name, _, _ in self.terms:
            if name in allowed:
                continue
            if len(allowed) > 2:
                raise SelectorError(f"field label not supported: {name}")
            raise SelectorError(f'"{name}" is not a known field selector: only "metadata.name", '
                              '"metadata.namespace"')

    def matches(self, field: Callable[[str], str]) -> bool:
        """Whether an object is selected; ``field(name)`` returns its value for a field key
        ("" when absent)."""
        for name, op, value in self.terms:
            if (field(name) == value) != (op == "="):
                return False
        return True

    def value_of(self, name: str) -> str | None:
        """The value an ``=`` term requires for ``name``, or None."""
        for field, op, value in self.terms:
            if field == name and op == "=":
                return value
        return None


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, cur, i = [], [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            cur.append(text[i:i + 2])
            i += 2
            continue
        if c == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def parse_field_selector(text: str | None) -> FieldSelector:
    """Parse a ``fieldSelector`` query value; raises SelectorError on bad syntax."""
    if not text or not text.strip():
        return FieldSelector()
    terms = []
    for part in _split_unescaped(text, ","):
        for op, sym in (("!=", "!="), ("=", "=="), ("=", "=")):
            idx = _find_unescaped(part, sym)
            if idx >= 0:
                name, value = part[:idx].strip(), part[idx + len(sym):]
                break
        else:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        if not name:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        terms.append((name, op, _unescape(value)))
    return FieldSelector(tuple(terms))


def _find_unescaped(text: str, sym: str) -> int:
    i = 0
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(sym, i):
            return i
        i += 1
    return -1


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The string a field selector compares for dotted ``path`` in ``obj`` ("" when absent;
    booleans as ``true``/``false``)."""
    return _field_value(obj, _split_path(path))


@functools.lru_cache(maxsize=1024)
def _split_path(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


def _field_value(obj: Any, parts: tuple[str, ...]) -> str:
    cur = obj
    for part in parts:
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if cur is True or cur is False:
        return "true" if cur else "false"
    return cur if isinstance(cur, str) else str(cur)


def selectable_fields(obj: Mapping[str, Any], keys: frozenset[str]) -> dict[str, str]:
    """The field-selector values of ``obj`` for every key in ``keys``."""
    return {k: _field_value(obj, _split_path(k)) for k in keys}
