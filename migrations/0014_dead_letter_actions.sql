-- Up Migration
-- Operators' replays and purges of dead letters (src/shared/dead-letters/). Kafka cannot delete one
-- message, so a dead letter is never removed from its `<topic>.dlq`: it is marked handled here, and
-- lists, replays and the `connect_dead_letters` metric leave handled ones out.

-- One row per real (not dry) replay or purge: who, when, what was asked, how many it touched.
CREATE TABLE dead_letter_actions (
  id             bigserial PRIMARY KEY,
  action         text NOT NULL CHECK (action IN ('replay', 'purge')),
  operator       text NOT NULL CHECK (length(operator) BETWEEN 1 AND 200),
  at             timestamptz NOT NULL DEFAULT now(),
  dlq_topic      text NOT NULL,
  selection      jsonb NOT NULL,
  message_count  integer NOT NULL CHECK (message_count >= 0),
  note           text
);
CREATE INDEX dead_letter_actions_at_idx ON dead_letter_actions (at);

-- Each handled dead letter, by its place in the dead-letter topic; at most one action handles it.
CREATE TABLE dead_letters_handled (
  dlq_topic      text NOT NULL,
  dlq_partition  integer NOT NULL,
  dlq_offset     bigint NOT NULL,
  action_id      bigint NOT NULL REFERENCES dead_letter_actions(id),
  PRIMARY KEY (dlq_topic, dlq_partition, dlq_offset)
);
CREATE INDEX dead_letters_handled_action_idx ON dead_letters_handled (action_id);

-- Down Migration
DROP TABLE dead_letters_handled, dead_letter_actions;
