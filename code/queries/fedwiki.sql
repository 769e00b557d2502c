-- FedWiki sites and lifecycle requests (sqlc).

-- name: LockSiteStatusByDomain :one
SELECT domain, status
FROM fedwiki.sites
WHERE domain = $1
FOR UPDATE;

-- name: LockLifecycleInstance :exec
SELECT pg_advisory_xact_lock(hashtextextended('lifecycle:' || sqlc.arg(instance_id)::text, 0));
