// Fixture: the standalone agent.
export const agent = 1;
