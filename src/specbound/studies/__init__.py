"""Studies over many models: the correlation protocol (SPEC 10) and the zoo trainer."""
