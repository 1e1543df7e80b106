// Fixture: the in-cluster process.
export const process = 1;
