// Undo an interrupted import: remove the capsules (and their edges) that THIS import created.
// Only ever called with ids that were checked absent before the import began.
UNWIND $ids AS imported
MATCH (c:Capsule {id: imported})
DETACH DELETE c
