// Fixture: the shared kit.
export const adapter = 1;
