// `graphsvc verify`: every stored tally (graphsvc.store.maintain), to compare with counted_by_key.
MATCH (t:Tally)
RETURN t.key AS key, t.listed AS listed
ORDER BY key
