"""YAML text parsed within stated bounds, before any value is built.

YAML aliases let under a kilobyte of text describe a value of 10^8 elements (an "alias bomb":
each anchored list holds ten aliases of the previous one), and an alias inside its own anchor
describes a value that contains itself. PyYAML builds such values whole, so reading them
exhausts memory or the recursion limit before any check can look at the result.

Both readers first walk the parser's events (nothing is built) and refuse nesting deeper than
:data:`MAX_DEPTH`. A text that holds an alias is then composed into its node graph (an alias is
a second reference to its anchor's node, so the graph is as small as the text) and measured as
if every alias were expanded: an alias inside its own anchor, or an expanded value of more
than :data:`EXPANDED_NODES` nodes or deeper than :data:`MAX_DEPTH`, is refused. Only then is
the value built.

- :func:`load_user` reads a spec file or a command-line value the user wrote (code, like a
  script): anchors and aliases are a fair way to share settings, within the bounds above.
- :func:`load_stored` reads the YAML mixlab stored (the ``spec`` attribute of ``run.h5``),
  which is data from whoever sent the run: it also refuses a text over
  :data:`STORED_TEXT_BYTES` and any tag beyond YAML's core types. mixlab writes stored YAML
  with :func:`dump`, which never emits an anchor or an alias, within these bounds (checked
  before a run starts, :func:`mixlab.spec.resolver.check_stored_text`), so everything it writes reads
  back.

Both raise :class:`YamlRefused` with the reason (:class:`YamlInvalid` for a syntax error);
callers name the file and key.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["EXPANDED_NODES", "MAX_DEPTH", "STORED_TEXT_BYTES", "YamlInvalid", "YamlRefused",
           "dump", "load_stored", "load_user", "text_bytes"]

STORED_TEXT_BYTES = 1 << 20  # 1 MiB: a resolved spec is a few KB
MAX_DEPTH = 64               # nested mappings and lists; a spec nests four or five deep
EXPANDED_NODES = 1 << 19     # the most nodes a text of STORED_TEXT_BYTES can hold ("1," each)

_CORE_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in
                       ("str", "int", "float", "bool", "null", "seq", "map"))
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where PyYAML has it


class YamlRefused(ValueError):
    """A YAML text refused before its value was built; the message is the reason."""


class YamlInvalid(YamlRefused):
    """A text that is not YAML at all (a syntax error), as opposed to one refused for a bound."""


class _NoAliasDumper(yaml.SafeDumper):
    """Writes a value that appears twice (a shared dict) in full both times, never as an
    anchor and an alias, so that :func:`load_stored` reads back everything :func:`dump` writes."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump(value: Any, **kwargs) -> str:
    """``value`` as YAML without anchors or aliases (``yaml.safe_dump``'s other options)."""
    return yaml.dump(value, Dumper=_NoAliasDumper, **kwargs)


def text_bytes(text: str) -> int:
    """The UTF-8 size of ``text`` (a lone surrogate counted as three bytes)."""
    return len(text.encode("utf-8", "surrogatepass"))


def load_stored(text: str) -> Any:
    """The value of stored YAML ``text``, refused (:class:`YamlRefused`) past
    :data:`STORED_TEXT_BYTES` bytes, holding a tag other than YAML's core ones (str, int,
    float, bool, null, seq, map), or past the bounds of :func:`load_user`."""
    if not isinstance(text, str):
        raise YamlRefused(f"it is {type(text).__name__}, not text")
    if len(text) > STORED_TEXT_BYTES or text_bytes(text) > STORED_TEXT_BYTES:
        raise YamlRefused(f"its {text_bytes(text):,} bytes are more than the "
                          f"{STORED_TEXT_BYTES:,} bytes of YAML mixlab stores")
    return _load(text, stored=True)    # aliases (none that mixlab writes): measured first


def load_user(text: str) -> Any:
    """The value of user-written YAML ``text`` (anchors and aliases allowed), refused
    (:class:`YamlRefused`) when an alias refers to itself or when the value, aliases expanded,
    would hold more than :data:`EXPANDED_NODES` nodes or nest deeper than :data:`MAX_DEPTH`."""
    return _load(text, stored=False)


def _load(text: str, stored: bool) -> Any:
    """``text``'s value once :func:`_scan` has measured it: expanded within the bounds when it
    holds aliases, else built by the safe loader; a parse error is :class:`YamlInvalid` (the
    parser's own exception kept as the cause of a user's text, not of a stored one)."""
    if _scan(text, stored=stored):
        return _load_with_aliases(text)
    try:
        return _construct(text)
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        raise YamlInvalid(f"it is not valid YAML: {_problem(exc)}") from (None if stored
                                                                        else exc)


def _construct(text: str) -> Any:
    """The value of ``text`` by the safe loader (no tag names Python code)."""
    loader = _LOADER(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _problem(exc: BaseException) -> str:
    mark = getattr(exc, "problem_mark", None)
    loc = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or [""])[0]
    return f"{loc}{problem}"


def _scan(text: str, *, stored: bool) -> bool:
    """Walk the parser's events (nothing is built): refuse depth past MAX_DEPTH and, for stored
    text, non-core tags. True when the text holds an alias."""
    depth, aliases = 0, False
    try:
        for ev in yaml.parse(text, Loader=_LOADER):
            if isinstance(ev, yaml.AliasEvent):
                aliases = True
                continue
            tag = getattr(ev, "tag", None)
            if stored and tag is not None and tag not in _CORE_TAGS:
                raise YamlRefused(f"it holds the tag {tag!r}; mixlab writes only YAML's core "
                                  f"types (text, numbers, booleans, null, lists, mappings)")
            if isinstance(ev, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise YamlRefused(f"it nests more than {MAX_DEPTH} levels deep")
            elif isinstance(ev, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError as exc:
        raise YamlInvalid(f"it is not valid YAML: {_problem(exc)}") from None
    return aliases


def _load_with_aliases(text: str) -> Any:
    """Compose the node graph (an alias is a second reference to its anchor's node, so this is
    as small as the text), measure it expanded, and only then build the value."""
    loader = _LOADER(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.YAMLError as exc:
            raise YamlInvalid(f"it is not valid YAML: {_problem(exc)}") from None
        if node is None:
            return None
        _measure(node)
        try:
            return loader.construct_document(node)
        except (yaml.YAMLError, ValueError, TypeError) as exc:
            raise YamlInvalid(f"it is not valid YAML: {_problem(exc)}") from None
    finally:
        loader.dispose()


def _children(node: yaml.Node) -> list:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _measure(root: yaml.Node) -> None:
    """Refuse a node graph with a cycle, or whose expanded tree holds more than EXPANDED_NODES
    nodes or is deeper than MAX_DEPTH: one depth-first pass, each shared node measured once."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            on_path.discard(key)
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            if size[key] > EXPANDED_NODES:
                raise YamlRefused(f"its aliases expand it to more than {EXPANDED_NODES:,} "
                                  f"values (line {node.start_mark.line + 1})")
            if depth[key] > MAX_DEPTH:
                raise YamlRefused(f"its aliases nest it more than {MAX_DEPTH} levels deep "
                                  f"(line {node.start_mark.line + 1})")
            continue
        if key in size:
            continue
        on_path.add(key)
        stack.append((node, True))
        for kid in _children(node):
            if id(kid) in on_path:
                raise YamlRefused(f"an alias refers to the value anchored at line "
                                  f"{kid.start_mark.line + 1}, which contains it, so the value "
                                  f"would contain itself")
            if id(kid) not in size:
                stack.append((kid, False))
