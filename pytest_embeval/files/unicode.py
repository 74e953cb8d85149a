"""Text that is not valid Unicode, found once, at load.

UTF-8 bytes never decode to a surrogate code point (U+D800 to U+DFFF: Python's decoder refuses them), but
two escapes do: JSON's ``"\\ud83d"`` (valid JSON: RFC 8259 §8.2 lets a string hold one) and YAML's, where
even a pair of ``\\u`` escapes stays two surrogates. The string then holds half of a character, which no
file, tokenizer or endpoint takes: encoding it fails far from the line that holds it (an encoder's
traceback, a report that cannot be written). `unicode_problem` finds the first such string in a parsed value
(a JSON record's keys and values, nested; a YAML scalar), for the data readers' one line naming the file
and the line.
"""

from __future__ import annotations

import re

__all__ = ["unicode_problem"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def unicode_problem(value: object, where: str = "") -> str | None:
    """Why ``value`` (a string, or a dict or list of them) is not valid Unicode, naming the key it is under
    (``where``, dotted), or None."""
    if isinstance(value, str):
        found = None if value.isascii() else _SURROGATE.search(value)
        if found is None:
            return None
        at = f" in {where!r}" if where else ""
        return (
            f"not valid Unicode: a lone surrogate \\u{ord(found.group()):04x}{at} (an escape of half a "
            "character, e.g. an emoji cut in two); write the whole character"
        )
    if isinstance(value, dict):
        for key, item in value.items():
            problem = unicode_problem(key, where) or unicode_problem(item, f"{where}.{key}" if where else key)
            if problem is not None:
                return problem
    elif isinstance(value, list):
        for i, item in enumerate(value):
            problem = unicode_problem(item, f"{where}[{i}]")
            if problem is not None:
                return problem
    return None
