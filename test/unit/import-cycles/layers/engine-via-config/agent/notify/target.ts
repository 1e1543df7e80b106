// Fixture: a notification target.
export const target = 1;
