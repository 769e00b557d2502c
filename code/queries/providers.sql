-- Provider registration at boot (sqlc). integration.RegisterProviders visits the keys sorted by
-- their bytes; provider is part of the key's identity, so the UPDATE takes FOR UPDATE.

-- name: SetResourceKeyProvider :exec
UPDATE core.resource_keys
SET provider = $2
WHERE resource_key_id = $1;
