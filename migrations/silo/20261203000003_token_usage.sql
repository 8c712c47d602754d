-- Token counts of each request as LiteLLM logged them (prompt = input, completion = output), for
-- GET /token-usage. Events ingested before this migration count zero tokens.
ALTER TABLE spend_events
    ADD COLUMN input_tokens  bigint NOT NULL DEFAULT 0 CONSTRAINT spend_events_input_tokens_range CHECK (input_tokens >= 0),
    ADD COLUMN output_tokens bigint NOT NULL DEFAULT 0 CONSTRAINT spend_events_output_tokens_range CHECK (output_tokens >= 0);
