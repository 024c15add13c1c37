"""Studies over many models: ``scale`` (the scaling study, SPEC 7), ``correlate`` (does a
measure predict generalization, SPEC 10) and ``zoo`` (train a grid of small models)."""
