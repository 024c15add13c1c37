"""Several zoos as one: the zoos of a study pooled into one correlate result, or read side by
side into the study's one primary table (SPEC 10, protocols v3 to v5).

- :func:`pool` (:mod:`.pooling`): the models of several zoos (:func:`part_of` a just-computed
  ``Correlation``, :func:`read_part` a correlate folder, re-evaluated without analyzing again)
  joined into one ``Correlation``;
- :func:`study` (:mod:`.family`): the primary rows of several correlate folders, Holm over
  those of the independent folders (``protocol.independence``), replicate groups
  (:mod:`.replicates`), exploratory rows; a :class:`Study` that writes primary.csv,
  exploratory.csv and study.json;
- :mod:`.folders`: the one reader of correlate folders both use (:func:`is_result_folder`,
  :func:`check_distinct`, the zoo beside a folder's manifest).
"""

from .family import Study, study
from .folders import check_distinct, is_result_folder
from .pooling import Part, part_of, pool, read_part

__all__ = [
    "Part",
    "Study",
    "check_distinct",
    "is_result_folder",
    "part_of",
    "pool",
    "read_part",
    "study",
]
