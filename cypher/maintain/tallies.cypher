// `graphsvc verify`: every stored tally (graphsvc.store.maintain), the pack sections' and the
// census's, to compare with counted_by_key.
MATCH (t:Tally|CensusTally)
RETURN t.key AS key, t.listed AS listed
ORDER BY key
