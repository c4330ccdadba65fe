"""The capsule store: the write side and plain reads of SPEC §5, one module per operation."""
