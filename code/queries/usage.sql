-- The FedWiki usage counter (sqlc). The atomic statements lock the counter's row only for the
-- length of their transaction; LockNumericUsage is the boot repair's explicit lock.

-- name: LockNumericUsage :one
SELECT used
FROM core.numeric_entitlement_usage
WHERE pool_id = $1 AND resource_key_id = $2
FOR UPDATE;

-- name: AtomicIncrementUsage :exec
UPDATE core.numeric_entitlement_usage
SET used = used + 1
WHERE pool_id = $1 AND resource_key_id = $2;

-- name: AtomicDecrementUsage :exec
UPDATE core.numeric_entitlement_usage
SET used = greatest(used - 1, 0)
WHERE pool_id = $1 AND resource_key_id = $2;

-- name: RaiseNumericUsageTo :exec
UPDATE core.numeric_entitlement_usage
SET used = greatest(used, sqlc.arg(floor)::bigint)
WHERE pool_id = $1 AND resource_key_id = $2;

-- name: BoundNumericUsage :exec
UPDATE core.numeric_entitlement_usage
SET used = least(used, sqlc.arg(bound)::bigint)
WHERE pool_id = $1 AND resource_key_id = $2;
