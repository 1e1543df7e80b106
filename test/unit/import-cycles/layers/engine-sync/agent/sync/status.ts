// Fixture: a Sync's status.
export const status = 1;
