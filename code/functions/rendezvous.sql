-- The rendezvous guard: every materializing or settling function calls it first.
CREATE OR REPLACE FUNCTION core.assert_rendezvous() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (
        SELECT 1
        FROM pg_locks
        WHERE locktype = 'advisory'
          AND pid = pg_backend_pid()
          AND classid = 1711065750 AND objid = 404406746 AND objsubid = 1
    ) THEN
        RAISE EXCEPTION 'materialization_rendezvous_missing';
    END IF;
END
$$;
