"""Prompt templates (`<name>.yaml`) rendered into chat messages.

Templates are Jinja2 with StrictUndefined, read from package data. CUDA source only ever enters
a prompt as a variable, never as template text, so its braces reach the model unchanged.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

import jinja2
import jinja2.meta
import yaml

ROLES = ("system", "user")

_ENV = jinja2.Environment(
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=False,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
)
# Plain JSON for the answer-format example (the built-in tojson escapes < > & ' for HTML).
_ENV.filters["json"] = json.dumps


def _package() -> Traversable:
    return resources.files("kernelwright.prompts")


def _checked_name(name: str) -> str:
    if not name.isidentifier():
        raise ValueError(f"not a prompt name: {name!r}")
    return name


@functools.cache
def _load(name: str) -> tuple[tuple[str, str], ...]:
    file = _package() / f"{_checked_name(name)}.yaml"
    data = yaml.safe_load(file.read_text(encoding="utf-8"))
    roles = [r for r in ROLES if isinstance(data, dict) and r in data]
    if not roles or not all(isinstance(data[r], str) for r in roles):
        raise ValueError(f"{name}.yaml: expected string templates for {' and/or '.join(ROLES)}")
    return tuple((str(k), v) for k, v in data.items() if isinstance(v, str))


def load(name: str) -> dict[str, str]:
    """The templates of `<name>.yaml` by key ("system" and/or "user"), as text."""
    return dict(_load(name))


@functools.cache
def _compiled(name: str) -> tuple[dict[str, jinja2.Template], frozenset[str]]:
    """The role templates, and every variable they use (in any branch)."""
    texts = load(name)
    templates, used = {}, set()
    for role in (r for r in ROLES if r in texts):
        used |= jinja2.meta.find_undeclared_variables(_ENV.parse(texts[role]))
        templates[role] = _ENV.from_string(texts[role])
    return templates, frozenset(used - set(_ENV.globals))


def variables(name: str) -> frozenset[str]:
    """The variables the prompt `name` takes; render() wants exactly these."""
    return _compiled(name)[1]


def render(name: str, **values: Any) -> list[dict[str, str]]:
    """The chat messages of prompt `name`: [{"role": "system", ...}, {"role": "user", ...}],
    of the roles its file has (a repair round is one user message).

    Every variable the templates use must be given, even one only a branch not taken reads
    (jinja2.UndefinedError otherwise), and no other (TypeError): a typo fails loudly.
    """
    templates, wanted = _compiled(name)
    missing = sorted(wanted - values.keys())
    if missing:
        raise jinja2.UndefinedError(f"prompt {name!r}: missing variable(s) {', '.join(missing)}")
    unknown = sorted(values.keys() - wanted)
    if unknown:
        raise TypeError(f"prompt {name!r} takes no variable(s) {', '.join(unknown)}")
    return [{"role": role, "content": t.render(**values)} for role, t in templates.items()]
