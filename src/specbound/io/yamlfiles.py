"""YAML of hand-written files (mapping files, zoo grids): :func:`load_yaml` refuses a key given
twice, an alias bomb and a cycle; callers read the text through
:func:`~specbound.io.files.read_small_file` with ``MAX_YAML_BYTES`` (the one size guard)."""

from __future__ import annotations

from typing import Any

#: Largest mapping or grid YAML read: hand-written files of a few kilobytes. YAML parsing in
#: Python takes about 2 s per MB, so a multi-megabyte "mapping" is refused before it is parsed.
MAX_YAML_BYTES = 2**20
#: Most values a YAML document may expand to through its aliases (``*name`` repeats the value
#: anchored ``&name``): a few kilobytes of nested aliases can stand for 10^9 values.
MAX_YAML_VALUES = 1_000_000


class DuplicateKeyError(ValueError):
    """A YAML mapping names a key twice (the message names the key and both lines)."""


def load_yaml(text: str) -> Any:
    """``text`` parsed as YAML by a ``yaml.SafeLoader`` that refuses a key given twice in one
    mapping (plain YAML keeps the last one silently): :class:`DuplicateKeyError`, naming the
    key and both lines; invalid YAML, an anchor that contains its own alias, a document whose
    aliases expand it beyond ``MAX_YAML_VALUES`` values (a "billion laughs") or one nested too
    deeply: ``yaml.YAMLError``. Callers word the one-line error (and bound the text's size:
    :func:`read_small_file` with ``MAX_YAML_BYTES``)."""
    import yaml

    class UniqueKeys(yaml.SafeLoader):
        def get_single_node(self) -> Any:
            node = super().get_single_node()
            if node is not None:
                _expanded_values(node, {}, yaml)
            return node

    def mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise DuplicateKeyError(f"key '{key}' appears twice (lines {seen[key]} and {line})")
            seen[key] = line
        return loader.construct_mapping(node, deep=deep)

    UniqueKeys.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        return yaml.load(text, Loader=UniqueKeys)  # a SafeLoader subclass
    except RecursionError:
        raise yaml.YAMLError("it is nested too deeply") from None


def _expanded_values(node: Any, memo: dict[int, int | None], yaml: Any) -> int:
    """How many values the YAML ``node`` stands for once every alias is expanded (an alias is
    the anchored node itself, shared: counted once per use). Raises ``yaml.YAMLError`` beyond
    ``MAX_YAML_VALUES`` or for an anchor holding its own alias (a cycle)."""
    key = id(node)
    if key in memo:
        n = memo[key]
        if n is None:
            raise yaml.YAMLError(
                f"an anchor contains its own alias (line {node.start_mark.line + 1})"
            )
        return n
    memo[key] = None
    if isinstance(node, yaml.MappingNode):
        n = 1 + sum(_expanded_values(k, memo, yaml) + _expanded_values(v, memo, yaml)
                    for k, v in node.value)  # fmt: skip
    elif isinstance(node, yaml.SequenceNode):
        n = 1 + sum(_expanded_values(v, memo, yaml) for v in node.value)
    else:
        n = 1
    if n > MAX_YAML_VALUES:
        raise yaml.YAMLError(
            f"its aliases expand it to more than {MAX_YAML_VALUES:,} values (line "
            f"{node.start_mark.line + 1}); write the values out instead of repeating anchors"
        )
    memo[key] = n
    return n
