"""Resource quantities (``cpu: 0.5``, ``memory: 1024Mi``) in the canonical form kube-apiserver
stores and answers (apimachinery ``resource.Quantity.CanonicalizeBytes``): ``500m``, ``1Gi``.

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

_FORM = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY_SUFFIX = {exponent: suffix for suffix, exponent in _BINARY.items()}


def canonical_quantity(value: object) -> object:
    """``value`` (a quantity string or a JSON number) in canonical form as a string; anything
    else (a decimal exponent, a malformed string, another type) unchanged."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return value
    match = _FORM.match(value) if isinstance(value, str) else None
    if isinstance(value, str) and match is None:
        return value
    try:
        number = Decimal(match.group(1)) if match else Decimal(repr(value))
    except InvalidOperation:
        return value
    suffix = match.group(2) if match else ""
    if suffix in _BINARY:
        amount = number * (1 << _BINARY[suffix])
        if abs(amount) >= 1024 and amount == amount.to_integral_value():
            return _binary(int(amount))
        return _decimal(amount)
    return _decimal(number * Decimal(10) ** _DECIMAL[suffix])


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

