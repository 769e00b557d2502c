-- Pool and grant queries (sqlc). LockPools sorts and deduplicates the pool ids before it runs
-- LockResourcePool, so the rows lock in ascending pool_id order.

-- name: LockResourcePool :many
SELECT pool_id
FROM core.resource_pools
WHERE pool_id = ANY(sqlc.arg(pool_ids)::bigint[])
ORDER BY pool_id
FOR UPDATE;

-- name: LockGrantPool :one
SELECT p.pool_id
FROM core.resource_pools p
JOIN core.grants g ON g.pool_id = p.pool_id
WHERE g.grant_id = $1
FOR UPDATE OF p;

-- name: GetGrantLineageHeadForUpdate :one
SELECT g.grant_id, g.pool_id, g.ends_at
FROM core.grants g
WHERE g.lineage_id = $1
  AND NOT EXISTS (SELECT 1 FROM core.grants n WHERE n.extends_grant_id = g.grant_id)
FOR UPDATE OF g;

-- name: ListPoolsCarryingSet :many
SELECT o.pool_id
FROM core.entitlement_set_change_obligations o
WHERE o.change_id = $1 AND o.settled_at IS NULL
ORDER BY o.pool_id;
