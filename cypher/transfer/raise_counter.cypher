// Import: move the id counter up to the largest imported seq so ids are never reused (never moves it down).
MERGE (k:IdCounter {name: 'capsule'})
ON CREATE SET k.value = 0
SET k.value = CASE WHEN k.value < $arg.max_seq THEN $arg.max_seq ELSE k.value END
RETURN k.value AS value
