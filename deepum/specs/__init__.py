"""Readable specifications of deepum's native core (driver_hooks/): the correlation tables, the
predictor and eviction by foreseen next use. The native classes must agree with them on every input;
tests compare the two."""
