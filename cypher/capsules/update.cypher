// Apply one validated update; a null in $changes removes that property (clear_valid_to).
MATCH (c:Capsule {id: $id})
SET c += $changes
