"""Resource quantities (``cpu: 0.5``, ``memory: 1024Mi``): their value
(:func:`parse_quantity`) and the canonical form kube-apiserver stores and answers
(:func:`canonical_quantity`, as apimachinery ``resource.Quantity.CanonicalizeBytes``):
``500m``, ``1Gi``.

A quantity keeps the format of its suffix: binary SI (``Ki`` ... ``Ei``), decimal SI (``n``,
``u``, ``m``, none, ``k`` ... ``E``) or a decimal exponent (``1e3``). Decimal values are
rounded up to nano units and written with the largest power of 1000 that leaves an integer
(``1500m`` stays, ``2000m`` is ``2``, ``2000`` is ``2k``); binary values that are whole
numbers of at least 1024 with the largest power of 1024 that leaves an integer (``1536Mi``
stays, ``1024Mi`` is ``1Gi``), others as decimal SI (``0.5Ki`` is ``512``). A decimal
exponent or a string that is not a quantity is left as written."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_FORM = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
                   r"(?:(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)|[eE]([+-]?[0-9]+))$")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX = {exponent: suffix for suffix, exponent in _BINARY.items()}


def parse_quantity(value: object) -> tuple[Decimal, str] | None:
    """``value`` (a quantity string or a JSON number) as (amount in base units, format:
    ``"binary"``, ``"decimal"`` or ``"exponent"``, as apimachinery's ``ParseQuantity``), or
    None when it is not a quantity (a malformed string, a bool, another type)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    if not isinstance(value, str):  # a JSON number: its value, decimal
        number = Decimal(repr(value))
        return (number, "decimal") if number.is_finite() else None
    match = _FORM.match(value)
    if match is None:
        return None
    try:
        number = Decimal(match.group(1))
    except InvalidOperation:
        return None
    suffix, exponent = match.group(2), match.group(3)
    if exponent is not None:
        return number.scaleb(int(exponent)), "exponent"
    if suffix in _BINARY:
        return number * (1 << _BINARY[suffix]), "binary"
    return number.scaleb(_DECIMAL[suffix or ""]), "decimal"


def canonical_quantity(value: object) -> object:
    """``value`` (a quantity string or a JSON number) in canonical form as a string; anything
    else (a decimal exponent, a malformed string, another type) unchanged."""
    parsed = parse_quantity(value)
    if parsed is None or parsed[1] == "exponent":
        return value
    amount, form = parsed
    if form == "binary" and abs(amount) >= 1024 and amount == amount.to_integral_value():
        return _binary(int(amount))
    return _decimal(amount)


def _decimal(amount: Decimal) -> str:
    nano = int((abs(amount) * Decimal(10) ** 9).to_integral_value(rounding="ROUND_CEILING"))
    exponent = -9
    while nano and nano % 1000 == 0 and exponent < 18:
        nano //= 1000
        exponent += 3
    if not nano:
        return "0"
    sign = "-" if amount < 0 else ""
    return f"{sign}{nano}{_DECIMAL_SUFFIX[exponent]}"


def _binary(amount: int) -> str:
    sign, amount = ("-" if amount < 0 else ""), abs(amount)
    exponent = 0
    while amount % 1024 == 0 and exponent < 60:
        amount //= 1024
        exponent += 10
    return f"{sign}{amount}{_BINARY_SUFFIX.get(exponent, '')}"

