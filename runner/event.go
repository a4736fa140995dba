package runner

// claimColumns are the webhooks.events columns scanned into an Event.
const claimColumns = `id, provider, external_id, event_type, payload, source, received_at, attempts, max_attempts, locked_until`
