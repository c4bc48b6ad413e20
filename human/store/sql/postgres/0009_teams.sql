-- Microsoft Teams: a person's Entra object id (a Teams user's aadObjectId), the Teams channel each
-- Baton team's requests are posted to by the bot, and the cards it posted (to update them).
ALTER TABLE users ADD COLUMN entra_id TEXT;
CREATE UNIQUE INDEX users_entra_id ON users (entra_id) WHERE entra_id IS NOT NULL;

-- Linked from the channel itself ("@Baton link TEAM" by a Baton admin): where the Bot Connector
-- takes posts for that conversation (its service URL), and which conversation.
CREATE TABLE teams_conversations (
    team TEXT PRIMARY KEY,
    service_url TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    tenant_id TEXT,
    linked_by TEXT NOT NULL,
    linked_at TIMESTAMPTZ NOT NULL
);

-- One row per card the bot posted about a request, so an answer can update each of them.
CREATE TABLE teams_cards (
    request_id TEXT NOT NULL,
    service_url TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    activity_id TEXT NOT NULL,
    posted_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (request_id, conversation_id, activity_id)
);
