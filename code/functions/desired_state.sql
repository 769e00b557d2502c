-- Triggers queue a notice through this function, in the transaction of the source change; the
-- insert is all it does, so it takes no lock of its own.
CREATE OR REPLACE FUNCTION core.insert_desired_state_notice() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO core.desired_state_outbox (notice_id, record_id)
    VALUES (nextval('core.desired_state_notice_seq'), NEW.record_id);
    RETURN NEW;
END
$$;
