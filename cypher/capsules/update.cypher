// Apply one validated update; a null in $changes removes that property (clear_valid_to).
MATCH (c:Capsule {id: $id})
USING INDEX SEEK c:Capsule(id)
SET c += $changes
