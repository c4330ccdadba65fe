// Bench-only: move the id counter past the loaded capsules so later ingests never reuse an id.
MERGE (k:IdCounter {name: 'capsule'})
SET k.value = $arg.value
