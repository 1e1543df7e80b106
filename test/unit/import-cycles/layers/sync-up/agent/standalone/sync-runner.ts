// Fixture: the standalone runner.
export const runner = 1;
