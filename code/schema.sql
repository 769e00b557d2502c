-- The tables the locking statements touch, with their keys: lockdocs reads the unique keys to
-- tell an UPDATE that changes a key column (FOR UPDATE) from one that does not (FOR NO KEY
-- UPDATE).

CREATE SCHEMA IF NOT EXISTS core;
CREATE SCHEMA IF NOT EXISTS fedwiki;

CREATE TABLE core.resource_pools (
    pool_id bigint PRIMARY KEY,
    organization_id uuid NOT NULL,
    product_id text NOT NULL,
    UNIQUE (organization_id, product_id)
);

CREATE TABLE core.resource_keys (
    resource_key_id bigint PRIMARY KEY,
    key bytea NOT NULL,
    provider text NOT NULL,
    -- a key is identified by its provider and its bytes, so a new provider changes a key
    UNIQUE (provider, key)
);

CREATE TABLE core.grants (
    grant_id bigint PRIMARY KEY,
    lineage_id bigint NOT NULL,
    extends_grant_id bigint REFERENCES core.grants (grant_id),
    pool_id bigint REFERENCES core.resource_pools (pool_id),
    ends_at timestamptz
);

CREATE TABLE core.pool_positions (
    pool_id bigint NOT NULL REFERENCES core.resource_pools (pool_id),
    grant_id bigint NOT NULL REFERENCES core.grants (grant_id),
    tier_rank integer NOT NULL,
    quantity bigint NOT NULL,
    PRIMARY KEY (pool_id, grant_id)
);

CREATE TABLE core.entitlement_sets (
    set_id bigint PRIMARY KEY,
    version integer NOT NULL
);

CREATE TABLE core.entitlement_set_rules (
    set_id bigint NOT NULL REFERENCES core.entitlement_sets (set_id),
    resource_key_id bigint NOT NULL REFERENCES core.resource_keys (resource_key_id),
    quantity bigint NOT NULL,
    PRIMARY KEY (set_id, resource_key_id)
);

CREATE TABLE core.entitlement_set_change_deltas (
    change_id bigint NOT NULL,
    set_id bigint NOT NULL,
    resource_key_id bigint NOT NULL,
    quantity bigint NOT NULL,
    PRIMARY KEY (change_id, resource_key_id)
);

CREATE TABLE core.entitlement_set_change_obligations (
    change_id bigint NOT NULL,
    pool_id bigint NOT NULL REFERENCES core.resource_pools (pool_id),
    settled_at timestamptz,
    PRIMARY KEY (change_id, pool_id)
);

CREATE TABLE core.numeric_entitlement_usage (
    pool_id bigint NOT NULL REFERENCES core.resource_pools (pool_id),
    resource_key_id bigint NOT NULL REFERENCES core.resource_keys (resource_key_id),
    used bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (pool_id, resource_key_id)
);

CREATE TABLE fedwiki.sites (
    domain text PRIMARY KEY,
    workspace_id uuid NOT NULL,
    status text NOT NULL
);

CREATE TABLE core.desired_state_records (
    record_id bigint PRIMARY KEY,
    connection_id uuid NOT NULL,
    recipient_kind text NOT NULL,
    recipient_id text NOT NULL,
    generation bigint NOT NULL,
    content jsonb,
    dispatched_at timestamptz,
    UNIQUE (connection_id, recipient_kind, recipient_id)
);

CREATE TABLE core.desired_state_outbox (
    notice_id bigint PRIMARY KEY,
    record_id bigint NOT NULL,
    leased_until timestamptz
);
