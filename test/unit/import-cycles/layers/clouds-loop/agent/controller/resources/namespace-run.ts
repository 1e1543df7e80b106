// Fixture: one namespace's run.
export const run = 1;
