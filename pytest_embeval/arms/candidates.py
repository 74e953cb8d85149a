"""The candidates of a run, each with a short name: given (``NAME=SPEC``, a mapping's key) or derived from
its spec (``fake_models:good`` -> ``good``, ``sentence-transformers/all-MiniLM-L6-v2`` ->
``all-MiniLM-L6-v2``, ``bm25?k1=1.2`` -> ``bm25-k1-1.2``). A name is what node ids (``overall[good]``),
``-k``, the reports and the run files call the candidate, so it is letters, digits, ``.``, ``_`` and ``-``
only, and unique in the run; ``incumbent`` and ``candidate`` name roles, never a candidate (a spec whose
name would be one is named by the whole spec: ``my_models:candidate`` -> ``my_models-candidate``).

Nothing here resolves a spec: names are checked before any model is loaded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qsl

__all__ = ["CandidateError", "NamedCandidate", "derived_name", "name_candidates", "split_named"]

#: What a candidate's name may be: safe in a node id, a ``-k`` expression, a file name and a report.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: Names of the roles, which a candidate cannot take: the reports and run files use them for the arms.
RESERVED = ("incumbent", "candidate")
#: Spec parameters that say where or how a model runs, not which model it is: left out of derived names.
_PLACEMENT = frozenset({"device", "dtype", "batch_size", "base_url", "api_key_env", "timeout", "max_retries"})


class CandidateError(ValueError):
    """Candidates that cannot be named as given (one line, naming where they came from)."""


@dataclass(frozen=True, slots=True)
class NamedCandidate:
    """A candidate: its name, and what it is: a model spec string, a model object, or a callable with no
    arguments that builds one when it is first needed."""

    name: str
    model: object

    @property
    def spec(self) -> str | None:
        """The model spec, when the candidate is given as one (else None: an object)."""
        return self.model if isinstance(self.model, str) else None


def split_named(text: str) -> tuple[str | None, str]:
    """``NAME=SPEC`` -> (NAME, SPEC); a spec without a name (its part before the first ``=`` is not a name:
    ``bm25?k1=1.2``, ``openai:m?dimensions=256``) -> (None, text)."""
    name, equals, spec = text.partition("=")
    if equals and NAME.fullmatch(name.strip()) and spec.strip():
        return name.strip(), spec.strip()
    return None, text.strip()


def _readable(text: str) -> str:
    """``text`` with every run of characters a name cannot hold made one ``-``, and none at either end."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")


def derived_name(spec: str) -> str:
    """A readable name for a spec: the model's own name (the attribute of ``module:attr``, the last part of a
    path or a Hub name), what follows ``openai:``, a fusion's parts, and the spec's parameters but those
    that only place the model (device, batch size, endpoint address); "" when nothing readable is left."""
    base, _, query = spec.strip().partition("?")
    if base.startswith("rrf:"):
        base = "rrf-" + "-".join(derived_name(part) for part in base[len("rrf:") :].split(","))
    elif base.startswith("openai:"):
        base = base[len("openai:") :]
    elif re.fullmatch(r"[\w.]+:[\w.]+", base):  # module:attr
        base = base.rsplit(":", 1)[1].rsplit(".", 1)[-1]
    else:
        base = base.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1]
    parameters = [f"{key}-{value}" for key, value in parse_qsl(query) if key not in _PLACEMENT]
    return _readable("-".join([base, *parameters]))


def _object_name(model: object) -> str:
    """A name for a model given as an object: its ``name`` attribute, or a spec string's derived name."""
    if isinstance(model, str):
        return derived_name(model)
    name = getattr(model, "name", None)
    return _readable(name) if isinstance(name, str) else ""


def name_candidates(given: Mapping[str, object] | Sequence[object], where: str) -> tuple[NamedCandidate, ...]:
    """The candidates ``given`` (``where`` they come from, for messages), named: a mapping's keys, a
    ``NAME=SPEC`` string's name, or one derived from the spec or the object's ``name`` (else from its place:
    ``candidate-2``). Raises `CandidateError` for a name that is not one (`NAME`), a reserved one, or two
    candidates with the same name."""
    entries: list[tuple[str | None, object]]
    if isinstance(given, Mapping):
        entries = [(str(name), model) for name, model in given.items()]
    else:
        entries = [split_named(model) if isinstance(model, str) else (None, model) for model in given]
    candidates: list[NamedCandidate] = []
    for position, (name, model) in enumerate(entries, start=1):
        shown = model if isinstance(model, str) else type(model).__qualname__
        if name is None:
            # Nothing readable to name it by (an object without a name): its place in the list.
            name = _object_name(model) or f"candidate-{position}"
            if name in RESERVED:
                # A model called like a role (``my_models:candidate``) is a fine spec: named by all of it
                # (``my_models-candidate``), or by its place, rather than refused.
                whole = _readable(model.partition("?")[0]) if isinstance(model, str) else ""
                name = whole if whole and whole not in RESERVED else f"{name}-{position}"
        elif not NAME.fullmatch(name):
            raise CandidateError(
                f"{where}: candidate name {name!r} must be letters, digits, '.', '_' and '-', starting with "
                "a letter or digit"
            )
        if name in RESERVED:
            raise CandidateError(f"{where}: {name!r} names a role, not a candidate: give {shown!r} another")
        clash = next((one for one in candidates if one.name == name), None)
        if clash is not None:
            raise CandidateError(
                f"{where}: two candidates are named {name!r} ({_shown(clash.model)} and {shown!r}): name "
                "them apart with NAME=SPEC"
            )
        candidates.append(NamedCandidate(name, model))
    return tuple(candidates)


def _shown(model: object) -> str:
    return repr(model) if isinstance(model, str) else repr(type(model).__qualname__)
