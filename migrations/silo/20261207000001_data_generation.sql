-- The data generation: a value that changes, in the same commit, with every committed change to
-- what the REST lists of users, groups and policies read (users, groups, memberships, policies,
-- own limits, LiteLLM key records). The manager keeps each list's last answer beside the
-- generation it read before reading the list, and answers from it while the generation is the
-- same: one statement instead of the list's, whatever wrote the change (a route, a background
-- loop, an import, `psql`).
--
-- A random value, not a counter: a database restored from a backup, or recreated, never repeats a
-- generation an answer was kept under.
CREATE TABLE data_generation (
    id         boolean PRIMARY KEY DEFAULT true CONSTRAINT data_generation_single_row CHECK (id),
    generation uuid NOT NULL DEFAULT gen_random_uuid()
);
INSERT INTO data_generation DEFAULT VALUES;

-- Once per transaction (a transaction-local setting remembers it). Called by deferred constraint
-- triggers, so the generation row is the last lock a writing transaction takes, at its commit: a
-- writer never holds it while it waits for anything else (no deadlock between writers), and holds
-- it only while it commits.
CREATE FUNCTION bump_data_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('opencrane.data_generation_bumped', true) IS DISTINCT FROM 'on' THEN
        UPDATE data_generation SET generation = gen_random_uuid();
        PERFORM set_config('opencrane.data_generation_bumped', 'on', true);
    END IF;
    RETURN NULL;
END
$$;

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['tenants', 'groups', 'group_members', 'access_policies', 'budgets', 'litellm_keys'] LOOP
        EXECUTE format(
            'CREATE CONSTRAINT TRIGGER data_generation AFTER INSERT OR DELETE ON %I
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_data_generation()', t);
        -- An update that changes nothing (a loop writing what is already there) keeps it.
        EXECUTE format(
            'CREATE CONSTRAINT TRIGGER data_generation_update AFTER UPDATE ON %I
             DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (OLD.* IS DISTINCT FROM NEW.*)
             EXECUTE FUNCTION bump_data_generation()', t);
        -- TRUNCATE fires no row trigger (and a constraint trigger cannot be a statement's).
        EXECUTE format(
            'CREATE TRIGGER data_generation_truncate AFTER TRUNCATE ON %I
             FOR EACH STATEMENT EXECUTE FUNCTION bump_data_generation()', t);
    END LOOP;
END
$$;
