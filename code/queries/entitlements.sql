-- Rule-change queries (sqlc).

-- name: LockEntitlementSet :one
SELECT set_id, version
FROM core.entitlement_sets
WHERE set_id = $1
FOR UPDATE;
