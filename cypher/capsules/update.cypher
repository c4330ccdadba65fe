// Apply one validated update; a null in $arg.changes removes that property (clear_valid_to).
MATCH (c:Capsule {id: $arg.id})
USING INDEX SEEK c:Capsule(id)
SET c += $arg.changes
