// bench.key_check: remove the keys it made (labelled bench-<n>).
MATCH (k:ApiKey)
WHERE k.label STARTS WITH $arg.label_prefix
DETACH DELETE k
