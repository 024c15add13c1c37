"""ALBERT: one (or a few) shared layers applied L times.

Keys, after an optional ``albert.`` prefix: ``encoder.albert_layer_groups.{g}.albert_layers.{j}.``
``attention.{query,key,value,dense}.weight``, ``ffn.weight`` (M_in) and ``ffn_output.weight``
(M_out). transformers applies, for i = 0..L-1, the group g = floor(i / (L / G)) (G =
``num_hidden_groups``), and each group runs its ``inner_group_num`` layers in turn. So the depth is
L * inner_group_num applications (usually L) and application b uses layer (g, j) with
i = b // inner_group_num, j = b % inner_group_num. Per SPEC 8 every application counts in depth
(alpha, gamma and the sum over matrices), but the spectra of a shared layer are computed once.
The factorized embedding (``embedding_hidden_mapping_in``, E -> N), pooler and heads are ignored.
"""

from __future__ import annotations

from typing import Any

from .base import ModelSpec, PatternAdapter, TensorRoles
from .registry import register


@register
class AlbertAdapter(PatternAdapter):
    model_types = ("albert",)
    layouts = (("encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight", {}),)

    def _sizes(self) -> tuple[int, int, int]:
        L = self.size("num_hidden_layers")
        groups = self.size("num_hidden_groups", default=1)
        inner = self.size("inner_group_num", default=1)
        return L, groups, inner

    def _group(self, layer: int) -> tuple[int, int]:
        L, groups, inner = self._sizes()
        i, j = divmod(layer, inner)
        return int(i / (L / groups)), j

    def spec(self) -> ModelSpec:
        n = self.size("hidden_size")
        h = self.size("num_attention_heads")
        L, groups, inner = self._sizes()
        distinct = groups * inner
        return ModelSpec(
            architecture="albert",
            num_layers=L * inner,
            hidden_size=n,
            num_heads=h,
            head_dim=self.head_dim(n, h),
            intermediate_size=self.size("intermediate_size"),
            activation=str(self.cfg("hidden_act", default="gelu_new")),
            adaptations=(
                f"ALBERT: {distinct} shared layer(s) applied {L * inner} times in depth; each "
                "application counts as a block (SPEC 8), spectra computed once per shared layer",
            ),
        )

    def verify_blocks(self) -> None:
        """Groups 0..G-1 and, in group 0, layers 0..inner-1 are stored, and no more."""
        _, groups, inner = self._sizes()
        self.check_stack(groups, "num_hidden_groups", lambda g: self._roles_at(g, 0, g))
        self.check_stack(inner, "inner_group_num", lambda j: self._roles_at(0, j, j))

    def layer_roles(self, layer: int) -> TensorRoles:
        return self._roles_at(*self._group(layer), layer)

    def _roles_at(self, g: int, j: int, layer: int) -> TensorRoles:
        prefix, _ = self._layout()
        p = f"{prefix}encoder.albert_layer_groups.{g}.albert_layers.{j}."
        return TensorRoles(
            layer,
            {
                "query": [p + "attention.query.weight"],
                "key": [p + "attention.key.weight"],
                "value": [p + "attention.value.weight"],
                "output": [p + "attention.dense.weight"],
                "ffn_in": [p + "ffn.weight"],
                "ffn_out": [p + "ffn_output.weight"],
            },
        )

    def share_key(self, layer: int) -> Any:
        return self._group(layer)
