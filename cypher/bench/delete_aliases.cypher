// Bench-only (bench.ingest --aliases): remove every taught alias set, so the rounds without aliases
// ingest into a store that holds none.
MATCH (a:Alias)
DELETE a
