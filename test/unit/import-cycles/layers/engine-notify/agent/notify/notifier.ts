// Fixture: the notifier of a Sync's outcomes.
export const notifier = 1;
