// Fixture: the work queue both loops use.
export const queue = 1;
