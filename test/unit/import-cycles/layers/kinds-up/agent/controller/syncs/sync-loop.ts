// Fixture: the in-cluster Sync loop.
export const loop = 1;
